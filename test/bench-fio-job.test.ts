// The same job as fio's, by default: a random map (every block once per pass; norandommap draws
// with replacement), invalidate=1 dropping the file's cache on every pass of a time_based job
// (fincore sees only the last pass's pages), and --vs-fio on cold buffered random reads giving
// fio the options that change what is measured: the ratio near 1, not 20x.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { writeFileSync } from 'node:fs';
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
    // 1027 blocks: the map's last word is partly past the end of the file
    const size = 1027 * 4096;
    const job = ['--filename', f, '--size', String(size), '--rw', 'randread', '--ioengine', 'psync'];
    expect((await iops(...job)).exitCode).toBe(0);
    // every block was read, so every page was cached; the kernel may reclaim a few meanwhile
    // (this machine runs DAMON's reclaim: a CI run once found one page of 1027 gone)
    expect(await cachedBytes(f)).toBeGreaterThanOrEqual(size * 0.99);
    const r = await iops(...job, '--norandommap');
    expect(r.exitCode).toBe(0);
    const share = (await cachedBytes(f)) / size;  // 1 - 1/e of 1027 blocks, give or take a few %
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
    // every page cached, but for what DAMON's reclaim takes meanwhile (a sanitized CI run once
    // found one of the 256 gone)
    expect(await cachedBytes(f)).toBeGreaterThanOrEqual(MiB * 0.99);
  });
});

describe.concurrent('a file shorter than size', { timeout: 300_000 }, () => {
  it('a file iolab did not make is refused with both sizes named, never measured from its 2 blocks', async () => {
    const f = file('short.dat');
    writeFileSync(f, Buffer.alloc(8192, 'x'));
    const r = await iops('--filename', f, '--size', '1m', '--ioengine', 'psync');
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`iolab: '${f}' holds 8192 bytes, less than --size 1048576 (1M): iolab lays out only files ` +
      'it created (give --size 8192 or less, or a --filename iolab may create)');
    expect(r.exitCode).toBe(1);
  });

  it('without --size, a file iolab did not make is read whole; a rate from too few I/Os says so', async () => {
    const f = file('small.dat');
    writeFileSync(f, Buffer.alloc(8192, 'x'));
    const r = await iops('--filename', f, '--ioengine', 'psync');
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    expect(r.stdout.split('\n')[0]).toMatch(/ size=8KiB /);
    expect(r.stdout).toMatch(/\nnote: psync: 2 I\/Os, too few for a meaningful rate$/);
  });

  it('a short file iolab made is laid out to size', async () => {
    const f = file('grow.dat');
    expect((await iops('--filename', f, '--size', '64k', '--ioengine', 'psync')).exitCode).toBe(0);
    const r = await iops('--filename', f, '--size', '1m', '--ioengine', 'psync', '--json');
    expect(r.exitCode).toBe(0);
    const job = JSON.parse(r.stdout).jobs[0];
    expect([job.iolab.laid_out_bytes, job.read.total_ios]).toEqual([1048576 - 65536, 256]);
  });
});

describe('block devices, read as fio reads them', { timeout: 300_000 }, () => {
  let loop: string | undefined;
  let why = '';
  beforeAll(async () => {
    const backing = file('loop.img');
    writeFileSync(backing, Buffer.alloc(8 * MiB));
    const r = await execa('losetup', ['--find', '--show', backing], { reject: false }).catch((err: Error) => ({ exitCode: 1, stdout: '', stderr: err.message }));
    if (r.exitCode === 0) loop = String(r.stdout).trim();
    else why = String(r.stderr).trim() || `losetup exited ${r.exitCode}`;
  });
  afterAll(async () => {
    if (loop) await execa('losetup', ['-d', loop]);
  });

  it('reads the whole device by default, buffered and O_DIRECT; a write job is refused in one line', async (ctx) => {
    if (!loop) ctx.skip(`no loop device can be attached here: ${why}`);
    const dev = loop as string;
    for (const direct of ['--direct=0', '--direct=1']) {
      const r = await iops('--filename', dev, '--rw', 'randread', '--ioengine', 'psync,io_uring', direct, '--json');
      expect(r.stderr).toBe('');
      expect(r.exitCode).toBe(0);
      // every block once, by each engine
      expect(JSON.parse(r.stdout).jobs.map((job: any) => [job.jobname, job.iolab.size, job.read.total_ios]))
        .toEqual([['psync', 8 * MiB, 2048], ['io_uring', 8 * MiB, 2048]]);
    }
    // the random read line as written, on the device (runtime shrunk; -size=10G is cut to the device)
    const line = '-name=Rand_Read_IOPS_Test -group_reporting -direct=1 -iodepth=128 -rw=randread -ioengine=libaio ' +
      `-refill_buffers -norandommap -randrepeat=0 -bs=4k -size=10G -numjobs=1 -runtime=1 -filename=${dev}`;
    const rr = await iops(...line.split(' '), '--json');
    expect(rr.stderr).toBe('');
    expect(JSON.parse(rr.stdout).jobs[0].iolab.size).toBe(8 * MiB);
    for (const extra of [[], ['--force']]) {
      const w = await iops('--filename', dev, '--rw', 'randwrite', '--ioengine', 'psync', ...extra);
      expect(w.stdout).toBe('');
      expect(w.stderr).toBe(`iolab: refusing to write to block device '${dev}': iolab reads block devices, it never writes ` +
        'into what it did not create');
      expect(w.exitCode).toBe(1);
    }
  });
});

interface VsFioEngine { engine: string; ratio: number; fio_global_options: Record<string, string> }

describe.runIf(fioInstalled)('--vs-fio on cold buffered random reads', { timeout: 600_000 }, () => {
  // the case: psync and io_uring qd4, 64 MiB, 2 s time_based; fio read each block once per
  // pass from a cold file while iolab read the page cache after its first pass (19-23x)
  // On a quiet machine both are within 0.8-1.25. On a shared virtio disk single cold-read runs of
  // the same job swing 2-7x (fio alone: 5.6k-14.5k IOPS; one iolab round 53k beside fio's 17k), so
  // the test asks only for what tells the same job from the old 19-23x, with room for such disks:
  // the median of alternated rounds within 1/4-4 with the random map (every pass cold,
  // disk-bound; 1.65x in one CI run), and within 1/8-8 with norandommap, whose rate feeds on itself
  // (each cold read warms the cache for the later ones, so a slow first half-second stays slow:
  // 0.36x-2.04x medians seen here, 5 rounds, and 4.2x in one CI run)
  for (const [extra, repeat, low, high] of [[[], '3', 1 / 4, 4], [['--norandommap'], '5', 1 / 8, 8]] as const) {
    it(`runs fio's job: the ratio near 1, not 20x ${extra.join(' ') || '(random map)'}`, async () => {
      const r = await iops('--filename', file(`vs${extra.length}.dat`), '--size', '64m', '--rw', 'randread', '--bs', '4k',
        '--ioengine', 'psync,io_uring', '--iodepth', '4', '--runtime', '2', '--time_based', '--vs-fio', '--repeat', repeat, '--json', ...extra);
      expect(r.stderr).toBe('');
      expect(r.exitCode).toBe(0);
      const doc = JSON.parse(r.stdout);
      for (const [i, e] of (doc.vs_fio.engines as VsFioEngine[]).entries()) {
        const ours: Record<string, string> = doc.jobs[i]['job options'];
        // fio got the user's options as typed (a bare --norandommap is not in fio's list), the
        // engine list replaced by this run's engine; the defaults that change what is measured
        // (invalidate, direct, fadvise_hint, randrepeat...) are fio's own in both
        expect(e.fio_global_options).toEqual({ filename: file(`vs${extra.length}.dat`), size: '64m', rw: 'randread', bs: '4k',
          ioengine: e.engine, iodepth: '4', runtime: '2' });
        expect(ours).toMatchObject({ ioengine: e.engine, invalidate: '1', direct: '0', fadvise_hint: '1', randrepeat: '1', refill_buffers: '0',
          norandommap: extra.length ? '1' : '0' });
        expect(e.ratio, `${e.engine} iolab/fio`).toBeGreaterThanOrEqual(low);
        expect(e.ratio, `${e.engine} iolab/fio`).toBeLessThanOrEqual(high);
      }
    });
  }
});
