// The storage job's USDT probes (provider iolab): io_issue(offset, bytes, is_write) and
// io_complete(offset, bytes, result), fired by the runner for every engine. The probes'
// .note.stapsdt entries are in the addon for anyone to read; counting them with bpftrace
// needs root (a visible skip otherwise).
import { afterAll, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { join } from 'node:path';
import { addonPath } from '../src/native.js';
import { runCli } from './support/cli.js';
import { shortTempDir } from './support/temp.js';

const addon = addonPath();
/** Tools run without the sanitizer runtime that the ASan suite preloads into node's children. */
const plainEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'LD_PRELOAD'));
const dir = shortTempDir('iolab-usdt-');
afterAll(() => dir.cleanup());
const bpftrace = (await execa('bpftrace', ['--version'], { reject: false, env: plainEnv, extendEnv: false }).catch(() => ({ exitCode: 1 }))).exitCode === 0;
const root = process.getuid?.() === 0;

describe('storage USDT probes', { timeout: 120_000 }, () => {
  it('are in the addon: iolab:io_issue and iolab:io_complete, three arguments each', async () => {
    const notes = String((await execa('readelf', ['-n', addon], { env: plainEnv, extendEnv: false })).stdout);
    const probes = [...notes.matchAll(/Provider: (\S+)\s+Name: (\S+)\s+Location: \S+, Base: \S+, Semaphore: \S+\s+Arguments: (.*)/g)]
      .filter((m) => m[1] === 'iolab' && m[2].startsWith('io_'))
      .map((m) => [m[2], m[3].trim().split(/\s+/).length]);
    expect(probes.sort()).toEqual([['io_complete', 3], ['io_issue', 3]]);
  });

  it.runIf(bpftrace && root)('fire once per I/O with the bytes moved, whatever the engine', async () => {
    for (const engine of ['io_uring', 'psync']) {
      // the probes fire in every process that loaded the addon (other test files run jobs too):
      // this run's I/Os are the 12 KiB ones
      const script = 'BEGIN { printf("attached\\n"); } ' + `usdt:${addon}:iolab:io_issue /arg1 == 12288/ { @issued = count(); } ` +
        `usdt:${addon}:iolab:io_complete /arg1 == 12288 && arg2 == arg1/ { @completed = count(); @bytes = sum(arg1); }`;
      const tracer = execa('bpftrace', ['-e', script], { reject: false, all: true, buffer: true, env: plainEnv, extendEnv: false });
      let seen = '';
      await new Promise<void>((resolve, reject) => {
        tracer.all?.on('data', (chunk: Buffer) => {
          seen += chunk.toString();
          if (seen.includes('attached\n')) resolve();  // BEGIN runs once every probe is attached
        });
        tracer.then(() => reject(new Error(`bpftrace ended: ${seen}`)), reject);
      });
      // 40 MiB: room for the 3,000 blocks of 12k (number_ios ends at the size, as fio's)
      const run = await runCli(['bench', 'iops', '--filename', join(dir.path, `${engine}.dat`), '--size', '40m',
        '--ioengine', engine, '--iodepth', '8', '--rw', 'randread', '--bs', '12k', '--number_ios', '3000']);
      expect(run.exitCode).toBe(0);
      tracer.kill('SIGINT');
      const out = String((await tracer).all);
      expect(out, engine).toMatch(/^@issued: 3000$/m);
      expect(out, engine).toMatch(/^@completed: 3000$/m);
      expect(out, engine).toMatch(/^@bytes: 36864000$/m);
    }
  });
});
