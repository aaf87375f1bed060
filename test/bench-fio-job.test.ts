// The same job as fio's, by default: a random map (every block once per pass; norandommap draws
// with replacement), invalidate=1 dropping the file's cache on every pass of a time_based job
// (fincore sees only the last pass's pages), and --vs-fio on cold buffered random reads giving
// fio the options that change what is measured: the ratio near 1, not 20x.
import { describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { join } from 'node:path';
import { runCliText } from './support/cli.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';

const dir = shortTempDir('iolab-fiojob-');
checkLeaksAfterAll(dir);
const file = (name: string) => join(dir.path, name);
const iops = (...args: string[]) => runCliText(['bench', 'iops', ...args]);
const fioInstalled = (await execa('fio', ['--version'], { reject: false }).catch(() => ({ exitCode: 1 }))).exitCode === 0;
const fincoreInstalled = (await execa('fincore', ['--version'], { reject: false }).catch(() => ({ exitCode: 1 }))).exitCode === 0;

/** Bytes of the file in the page cache, as fincore (util-linux) counts them. */
async function cachedBytes(path: string): Promise<number> {
  return Number((await execa('fincore', ['--bytes', '--noheadings', '--output', 'RES', path])).stdout.trim());
}

const MiB = 2 ** 20;

describe.runIf(fincoreInstalled)('random map and passes', { timeout: 300_000 }, () => {
  it('reads every block once by default (the whole file cached after one pass); norandommap about 63 %', async () => {
    const f = file('map.dat');
    // buffered, fadvise RANDOM (no read-ahead): the pages cached after the job are the blocks it read
    const job = ['--filename', f, '--size', '4m', '--rw', 'randread', '--ioengine', 'psync'];
    expect((await iops(...job)).exitCode).toBe(0);
    expect(await cachedBytes(f)).toBe(4 * MiB);
    const r = await iops(...job, '--norandommap');
    expect(r.exitCode).toBe(0);
    const share = (await cachedBytes(f)) / (4 * MiB);  // 1 - 1/e of 1024 blocks, give or take a few %
    expect(share).toBeGreaterThan(0.5);
    expect(share).toBeLessThan(0.75);
  });

  it('drops the file\'s cache at the start of every pass of a time_based job (invalidate=1), not with invalidate=0', async () => {
    const f = file('pass.dat');
    const job = ['--filename', f, '--size', '1m', '--rw', 'randread', '--ioengine', 'psync', '--runtime', '1', '--time_based', '--json'];
    const r = await iops(...job);
    expect(r.exitCode).toBe(0);
    const ios: number = JSON.parse(r.stdout).jobs[0].read.total_ios;
    const blocks = 256;
    expect(ios).toBeGreaterThan(2 * blocks);  // several passes ran
    // each pass began with the file dropped: only the current pass's blocks are cached
    const lastPass = ios % blocks === 0 ? blocks : ios % blocks;
    expect(await cachedBytes(f)).toBeLessThanOrEqual(lastPass * 4096);
    expect((await iops(...job, '--invalidate=0')).exitCode).toBe(0);
    expect(await cachedBytes(f)).toBe(MiB);
  });
});

interface VsFioEngine { engine: string; ratio: number; fio_job_options: Record<string, string> }

describe.runIf(fioInstalled)('--vs-fio on cold buffered random reads', { timeout: 600_000 }, () => {
  // the case: psync and io_uring qd4, 64 MiB, 2 s time_based; fio read each block once per
  // pass from a cold file while iolab read the page cache after its first pass (19-23x)
  for (const extra of [[], ['--norandommap']]) {
    it(`runs fio's job: the ratio near 1, not 20x ${extra.join(' ') || '(random map)'}`, async () => {
      const r = await iops('--filename', file(`vs${extra.length}.dat`), '--size', '64m', '--rw', 'randread', '--bs', '4k',
        '--ioengine', 'psync,io_uring', '--iodepth', '4', '--runtime', '2', '--time_based', '--vs-fio', '--repeat', '3', '--json', ...extra);
      expect(r.stderr).toBe('');
      expect(r.exitCode).toBe(0);
      const doc = JSON.parse(r.stdout);
      for (const [i, e] of (doc.vs_fio.engines as VsFioEngine[]).entries()) {
        const ours: Record<string, string> = doc.jobs[i]['job options'];
        // every option that changes what is measured was given to fio, and both JSONs show it
        for (const key of ['norandommap', 'randrepeat', 'refill_buffers', 'invalidate', 'direct', 'fadvise_hint']) {
          expect([key, e.fio_job_options[key]]).toEqual([key, ours[key]]);
        }
        expect(ours.norandommap).toBe(extra.length ? '1' : '0');
        // the median of 3 alternated rounds. On a quiet machine it is within 0.8-1.25; on this shared
        // virtio disk single cold-read runs of the same job swing 2.5x (fio alone: 5.6k-14.5k IOPS), so
        // the test asks for what tells the same job from the old 19-23x: within 0.6-1.6
        expect(e.ratio, `${e.engine} iolab/fio`).toBeGreaterThanOrEqual(0.6);
        expect(e.ratio, `${e.engine} iolab/fio`).toBeLessThanOrEqual(1.6);
      }
    });
  }
});
