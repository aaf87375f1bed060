// The storage job's USDT probes (provider iolab): io_issue(offset, bytes, is_write) and
// io_complete(offset, bytes, result), fired by the runner for every engine. The probes'
// .note.stapsdt entries are in the addon for anyone to read; counting them with bpftrace
// needs root (a visible skip otherwise).
import { afterAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { addonPath } from '../src/native.js';
import { runCli } from './support/cli.js';
import { shortTempDir } from './support/temp.js';
import { startBpftrace, traceUnavailable, usdtProbes } from './support/trace.js';

const addon = addonPath();
const dir = shortTempDir('iolab-usdt-');
afterAll(() => dir.cleanup());

describe('storage USDT probes', { timeout: 120_000 }, () => {
  it('are in the addon: iolab:io_issue and iolab:io_complete, three arguments each', async () => {
    expect(await usdtProbes('iolab', 'io_')).toEqual([['io_complete', 3], ['io_issue', 3]]);
  });

  it.runIf(!traceUnavailable())('fire once per I/O with the bytes moved, whatever the engine', async () => {
    for (const engine of ['io_uring', 'psync']) {
      // the probes fire in every process that loaded the addon (other test files run jobs too):
      // this run's I/Os are the 12 KiB ones
      const tracer = await startBpftrace(`usdt:${addon}:iolab:io_issue /arg1 == 12288/ { @issued = count(); } ` +
        `usdt:${addon}:iolab:io_complete /arg1 == 12288 && arg2 == arg1/ { @completed = count(); @bytes = sum(arg1); }`);
      let out = '';
      try {
        // 40 MiB: room for the 3,000 blocks of 12k (number_ios ends at the size, as fio's)
        const run = await runCli(['bench', 'iops', '--filename', join(dir.path, `${engine}.dat`), '--size', '40m',
          '--ioengine', engine, '--iodepth', '8', '--rw', 'randread', '--bs', '12k', '--number_ios', '3000']);
        expect(run.exitCode).toBe(0);
      } finally {
        out = await tracer.finish();
      }
      expect(out, engine).toMatch(/^@issued: 3000$/m);
      expect(out, engine).toMatch(/^@completed: 3000$/m);
      expect(out, engine).toMatch(/^@bytes: 36864000$/m);
    }
  });
});
