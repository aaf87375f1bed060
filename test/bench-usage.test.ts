// bench latency and bench api as a user meets their limits: an engine that cannot honour
// bench latency's O_DIRECT, a block size O_DIRECT refuses, an --only that names nothing. One
// line each, naming what bench latency or bench api itself offers. A block device as --infile
// is read at the device's size, which its stat does not give.
import { describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { logicalBlockSize } from '../src/bench/storage-job.js';
import { runCliText } from './support/cli.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';
import { attachLoopDevice } from './support/loop.js';

const tmp = shortTempDir('iolab-busage-');
const at = (name: string) => join(tmp.path, name);
let infile = '';
/** bench latency with 4 I/Os per engine on a small input made by gen. */
async function latency(args: string[]) {
  if (!infile) {
    infile = at('in.txt');
    expect((await runCliText(['gen', infile, '--size', '64k'])).exitCode).toBe(0);
  }
  return runCliText(['bench', 'latency', '--count', '4', '--infile', infile, '--outfile', at('out.dat'), ...args]);
}

describe('bench latency', () => {
  it('--engine mmap under O_DIRECT: refused in one line that says why and what to do', async () => {
    const r = await latency(['--engine', 'sync,mmap']);
    expect(r).toEqual({ exitCode: 1, stdout: '', stderr: 'iolab: --engine mmap copies through the page cache, so it cannot do ' +
      "bench latency's O_DIRECT reads and writes; add --no-direct to time every engine on the page cache" });
    expect(existsSync(at('out.dat'))).toBe(false);
  });

  it('--engine mmap --no-direct: runs, under a header without O_DIRECT', async () => {
    const r = await latency(['--engine', 'mmap', '--no-direct']);
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines[0]).toBe(`iolab bench latency: 4 reads of ${infile}, 4 writes to ${at('out.dat')}, bs 4096, QD 1, page cache (lat = submit to completion)`);
    expect(lines[2]).toMatch(/^mmap\s+\S+s\s/);
  });

  it("--engine all is every engine that can do O_DIRECT, and mmap too with --no-direct", async () => {
    const direct = await latency(['--engine', 'all', '--json']);
    expect(direct.exitCode).toBe(0);
    const names = JSON.parse(direct.stdout).engines.map((e: { engine: string }) => e.engine);
    expect(names).toContain('io_uring');
    expect(names).not.toContain('mmap');
    const cached = await latency(['--engine', 'all', '--no-direct', '--json']);
    expect(cached.exitCode).toBe(0);
    const cachedNames = JSON.parse(cached.stdout).engines.map((e: { engine: string }) => e.engine);
    expect([...cachedNames].sort()).toEqual([...names, 'mmap'].sort());
  });

  it.runIf(logicalBlockSize(tmp.path) !== undefined)('--bs 1000: names O_DIRECT and --no-direct, the options it has', async () => {
    const r = await latency(['--engine', 'sync', '--bs', '1000']);
    expect(r.exitCode).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^iolab: bench latency reads and writes with O_DIRECT \(--no-direct turns it off\), which needs --bs to be a multiple of the logical block size of \S+ \(\d+ bytes\); got 1000$/);
    expect((await latency(['--engine', 'sync', '--bs', '1000', '--no-direct'])).exitCode).toBe(0);
  });
});

describe('bench latency --infile on a block device', () => {
  it('reads the device: its size from the device (BLKGETSIZE64), not from its stat (0 bytes)', async (ctx) => {
    const loop = await attachLoopDevice(tmp.path, 4 << 20);
    try {
      if (!loop.device) ctx.skip(`no loop device can be attached here: ${loop.why}`);
      for (const direct of [[], ['--no-direct']]) {
        const r = await latency(['--engine', 'sync,io_uring', '--infile', loop.device!, '--count', '8', '--json', ...direct]);
        expect(r.stderr).toBe('');
        expect(r.exitCode).toBe(0);
        expect(JSON.parse(r.stdout).engines.map((e: { read: { ios: number } }) => e.read.ios)).toEqual([8, 8]);
      }
    } finally {
      await loop.detach();
    }
  });
});

describe('bench api --only', () => {
  it('a name that is no contender: one line listing the names it takes', async () => {
    for (const only of ['bogus', 'ring.readv,bogus']) {
      const r = await runCliText(['bench', 'api', '--only', only, '--rounds', '1', '--duration', '5ms', '--size', '64k']);
      expect(r.exitCode).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/^iolab: --only: no contender named 'bogus' \(known: iolab\.readvSync, fs\.readvSync, ring\.readv, .*c\.sendmsg.*; name@N picks one in-flight count, e\.g\. ring\.readv@32, name\/size one message size, e\.g\. channel\/64\)$/);
    }
  });
});

describe('bench ipc --duration', () => {
  it('less than a millisecond, or not whole milliseconds: one usage line, nothing run', async () => {
    for (const d of ['1us', '1500us']) {
      const r = await runCliText(['bench', 'ipc', '--duration', d, '--transports', 'pipe', '--sizes', '64']);
      expect({ exitCode: r.exitCode, stdout: r.stdout }).toEqual({ exitCode: 1, stdout: '' });
      expect(r.stderr).toBe(`iolab: option '--duration <time>' argument '${d}' is invalid. expected a whole number of milliseconds (1ms or more), got '${d}'`);
    }
  });
});

checkLeaksAfterAll(tmp);
