// The storage engines through the native runner: every engine x every rw, buffered and O_DIRECT,
// with verify on; io count x bs = bytes; the engines' own options; several jobs; the test-only
// engines (a known delay, a fault that moves no data); nothing left behind. An engine this
// machine cannot run is a visible skip with its reason.
import { describe, expect, it, type TestContext } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { native, type BenchJob, type BenchResult } from '../src/native.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';

const rws = ['read', 'write', 'randread', 'randwrite', 'randrw', 'readwrite'] as const;
const dir = shortTempDir('iolab-eng-');
checkLeaksAfterAll(dir);

// the engines that move data (null, diskless, has its own test below)
const engines = native.benchEngines.filter((e) => !e.testOnly && !e.diskless).map((e) => e.name);

function job(engine: string, rw: BenchJob['rw'], direct: boolean, extra: Partial<BenchJob> = {}): BenchJob {
  return {
    filename: join(dir.path, `${engine}.dat`), engine, rw, bs: 4096, iodepth: 8, size: 1 << 20,
    direct, verify: true, invalidate: true, rwmixread: 50, ...extra,
  };
}

/** Runs the job; an engine this machine refuses skips the test, with the engine's reason. */
async function run(ctx: TestContext, j: BenchJob): Promise<BenchResult> {
  const r = await native.benchRun(j);
  if (r.unavailable) ctx.skip(`${j.engine} unavailable here: ${r.unavailable}`);
  return r;
}

describe('the engine table', () => {
  it('lists each engine once, with its own options, and the test-only ones marked', () => {
    expect(engines).toEqual(['sync', 'psync', 'io_uring', 'libaio', 'posixaio', 'mmap', 'pvsync', 'pvsync2']);
    // fio's other engines run when named, not in 'all'
    expect(native.benchEngines.filter((e) => e.namedOnly).map((e) => e.name)).toEqual(['pvsync', 'pvsync2', 'null']);
    expect(native.benchEngines.filter((e) => e.diskless).map((e) => e.name)).toEqual(['null']);
    const uring = native.benchEngines.find((e) => e.name === 'io_uring')!;
    expect(uring.options.map((o) => o.name)).toEqual(['fixedbufs', 'registerfiles', 'sqthread_poll', 'hipri', 'uncached', 'cmdprio_percentage',
      'cmdprio_class', 'cmdprio', 'cmdprio_hint']);
    expect(native.benchEngines.find((e) => e.name === 'libaio')!.options.map((o) => o.name))
      .toEqual(['cmdprio_percentage', 'cmdprio_class', 'cmdprio', 'cmdprio_hint']);
    expect(uring.maxDepth).toBe(32768);
    expect(native.benchEngines.find((e) => e.name === 'posixaio')!.alias).toBe('posix_aio');
    expect(native.benchEngines.filter((e) => e.testOnly).map((e) => e.name)).toEqual(['test_delay', 'test_nodata']);
  });
});

describe('the null engine', () => {
  it('completes every I/O without a file: none is opened or laid out, and verify is refused', async () => {
    const filename = join(dir.path, 'never-made.dat');
    const r = await native.benchRun({ filename, engine: 'null', rw: 'randread', bs: 4096, iodepth: 1, size: 1 << 20 });
    expect(r.read.ios).toBe(256);
    expect(r.read.bytes).toBe(1 << 20);
    expect(existsSync(filename)).toBe(false);
    expect(() => native.benchRun({ filename, engine: 'null', rw: 'write', bs: 4096, iodepth: 1, size: 1 << 20, verify: true }))
      .toThrow(/verify: the null engine moves no data to check/);
  });
});

describe('lengths that vary per I/O (fio\'s bsrange and bssplit)', () => {
  it('moves its size in bytes: exactly, for a pass over the file (the last I/Os shortened to fit, as fio), and past it by ' +
    'less than one I/O when drawn with replacement; verify is refused', async () => {
    const filename = join(dir.path, 'varlen.dat');
    const base = { filename, engine: 'psync', rw: 'randread', bs: 4096, iodepth: 1, size: 1 << 20, norandommap: true } as const;
    const split = await native.benchRun({ ...base, bssplit: [4096, 50, 65536, 50] });
    expect(split.read.bytes).toBeGreaterThanOrEqual(1 << 20);
    expect(split.read.bytes).toBeLessThan((1 << 20) + 65536);
    expect(split.read.ios).toBeGreaterThan(16);   // not all 64k
    expect(split.read.ios).toBeLessThan(256);     // not all 4k
    const range = await native.benchRun({ ...base, rw: 'write', bsMax: 16384 });
    expect(range.write.bytes).toBe(1 << 20);
    expect(range.write.ios).toBeGreaterThan(64);
    expect(range.write.ios).toBeLessThan(256);
    const mapped = await native.benchRun({ ...base, norandommap: false, bssplit: [4096, 50, 65536, 50] });
    expect(mapped.read.bytes).toBe(1 << 20);
    expect(() => native.benchRun({ ...base, rw: 'write', bsMax: 16384, verify: true })).toThrow(/verify needs one block size/);
  });

  it('takes each direction\'s length from its own split (fio\'s bssplit=reads,writes)', async () => {
    const filename = join(dir.path, 'varlen-rw.dat');
    const r = await native.benchRun({ filename, engine: 'psync', rw: 'randrw', bs: 4096, iodepth: 1, size: 1 << 20, norandommap: true,
      bssplit: [4096, 100], bssplitWrite: [16384, 100] });
    expect(r.read.bytes).toBe(r.read.ios * 4096);
    expect(r.write.bytes / r.write.ios).toBeGreaterThan(15000);  // 16k, but a block near the file's end that fits only 4k
  });
});

describe('random_distribution', () => {
  // the blocks a cold, buffered, random 4 KiB read touched are the pages it left cached (fincore)
  const hasFincore = (() => {
    try {
      execFileSync('fincore', ['--version']);
      return true;
    } catch {
      return false;
    }
  })();
  it.runIf(hasFincore)('zipf, pareto, normal and zoned read a few hot blocks where uniform reads most (pages left cached)', async () => {
    const filename = join(dir.path, 'dist.dat');
    const base = { filename, engine: 'psync', bs: 4096, iodepth: 1, size: 4 << 20 } as const;
    await native.benchRun({ ...base, rw: 'write', endFsync: true });
    const touched = async (extra: Partial<BenchJob>) => {
      await native.benchRun({ ...base, rw: 'randread', invalidate: true, numberIos: 512, norandommap: true, ...extra });
      return Number(execFileSync('fincore', ['--bytes', '--noheadings', '--output', 'RES', filename]).toString().trim()) / 4096;
    };
    const uniform = await touched({});
    expect(uniform).toBeGreaterThan(300);  // 512 draws of 1024 blocks: about 400 distinct
    for (const d of [{ randomDistribution: 1, distributionMicros: 1.2e6 }, { randomDistribution: 2, distributionMicros: 0.2e6 },
      { randomDistribution: 3, distributionMicros: 2e6 }, { randomDistribution: 4, distributionZones: [95, 5, 5, 95] }]) {
      expect(await touched(d), JSON.stringify(d)).toBeLessThan(uniform / 2);
    }
  });
});

describe.each(engines)('engine %s', (engine) => {
  it.for([false, true])('runs every rw with verify passing (direct=%s)', async (direct, ctx) => {
    for (const rw of rws) {
      const r = await run(ctx, job(engine, rw, direct));
      const ios = r.read.ios + r.write.ios;
      expect(ios, `${rw}: one pass over the file`).toBe(256);
      expect(r.read.bytes).toBe(r.read.ios * 4096);
      expect(r.write.bytes).toBe(r.write.ios * 4096);
      if (rw.includes('read') || rw === 'readwrite') expect(r.read.ios).toBeGreaterThan(0);
      if (rw.includes('write') || rw === 'readwrite' || rw === 'randrw') expect(r.write.ios).toBeGreaterThan(0);
      if (r.write.ios > 0) expect(r.verifiedBlocks).toBeGreaterThan(0);
      const d = r.read.ios ? r.read : r.write;
      expect(d.clat.n).toBe(d.ios);
      expect(d.lat.min).toBeGreaterThan(0);
      expect(d.clat.min).toBeLessThanOrEqual(d.clat.max);
      expect(r.async).toBe(['io_uring', 'libaio', 'posixaio'].includes(engine));
      expect(d.slat === null).toBe(!r.async);
      expect(r.depth.submit.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
      expect(d.lat.bins.reduce((a, b) => a + b, 0)).toBe(d.ios);
    }
  });
});

describe('runner', () => {
  it.for([
    [{ fixedbufs: true }], [{ registerfiles: true }], [{ sqthread_poll: true }],
    [{ fixedbufs: true, registerfiles: true, sqthread_poll: true }],
  ])('runs io_uring with its options %o', async ([options], ctx) => {
    const r = await run(ctx, job('io_uring', 'randrw', true, { engineOptions: options, numberIos: 300, size: 2 << 20 }));
    expect(r.read.ios + r.write.ios).toBe(300);
    expect(r.write.clat.n).toBe(r.write.ios);
  });

  it("refuses an engine option outside its table's range, naming it", () => {
    expect(() => native.benchRun(job('io_uring', 'read', false, { engineOptions: { fixedbufs: 2 } })))
      .toThrow(/The value of "job.engineOptions.fixedbufs" is out of range. It must be an integer >= 0 and <= 1. Received 2/);
    expect(() => native.benchRun(job('io_uring', 'read', false, { iodepth: 65536 })))
      .toThrow(/above io_uring's entry limit, IORING_MAX_ENTRIES: 32768/);
  });

  it('runs several jobs as threads, time based with a ramp, and reports progress', async () => {
    const seen: string[] = [];
    const r = await native.benchRun(job('psync', 'randread', false, {
      numjobs: 2, timeBased: true, runtimeMs: 1100, rampMs: 100, verify: false, iodepth: 1,
    }), (p) => seen.push(p.phase));
    expect(r.runtimeNs).toBeGreaterThanOrEqual(1000e6);
    expect(r.runtimeNs).toBeLessThan(3e9);
    expect(r.read.ios).toBeGreaterThan(0);
    expect(seen).toContain('run');
    // fio's 500 ms samples: up to two windows per thread in a 1.1 s run, both threads merged
    expect(r.read.iopsSamples.n).toBeGreaterThanOrEqual(2);
    expect(r.read.iopsSamples.n).toBeLessThanOrEqual(4);
    expect(r.read.iopsSamples.min).toBeLessThanOrEqual(r.read.iopsSamples.max);
    expect(r.read.bwKiBSamples.mean).toBeCloseTo(r.read.iopsSamples.mean * 4, 0);
    expect(r.usrSec + r.sysSec).toBeGreaterThan(0);
    expect(r.elapsedNs).toBeGreaterThanOrEqual(r.runtimeNs);
  });

  it('stops after number_ios per job', async () => {
    const r = await native.benchRun(job('libaio', 'read', true, { numjobs: 3, numberIos: 50 }));
    expect(r.read.ios).toBe(150);
    for (const engine of ['io_uring', 'libaio', 'posixaio']) {  // batched commits (iodepth_batch_submit)
      const b = await native.benchRun(job(engine, 'randrw', true, { iodepth: 16, iodepthBatch: 5, numberIos: 203 }));
      expect(b.read.ios + b.write.ios).toBe(203);
      expect(b.depth.submit[2], `${engine}: commits of 5 I/Os fall in fio's 5-8 bucket`).toBeGreaterThan(0);
    }
  });

  it('counts number_ios and size after the ramp, as fio; number_ios does not end a time_based job', async () => {
    const ramped = await native.benchRun(job('psync', 'read', false, { verify: false, rampMs: 300, numberIos: 100 }));
    expect(ramped.read.ios, 'number_ios after a ramp that read the file many times over').toBe(100);
    const sized = await native.benchRun(job('psync', 'randread', false, { verify: false, rampMs: 300 }));
    expect(sized.read.ios, 'the size (256 blocks) after the ramp').toBe(256);
    const capped = await native.benchRun(job('psync', 'read', false, { verify: false, numberIos: 1000 }));
    expect(capped.read.ios, 'number_ios past the size: the size ends the job first').toBe(256);
    const timed = await native.benchRun(job('psync', 'read', false, { verify: false, numberIos: 10, timeBased: true, runtimeMs: 200 }));
    expect(timed.read.ios, 'a time_based job runs its runtime').toBeGreaterThan(10);
  });

  it("reaps as fio does: one completion per reap by default, min..max with fio's iodepth_batch_complete_min/_max", async (ctx) => {
    // a cached buffered read completes inside the submit, so a full queue always has 8 waiting
    for (const engine of ['io_uring', 'libaio']) {
      const opts = { iodepth: 8, numberIos: 400, verify: false, invalidate: false, size: 2 << 20 };
      const one = await run(ctx, job(engine, 'randread', false, opts));
      const reaps = one.depth.complete.reduce((a, b) => a + b, 0);
      expect(reaps, `${engine}: one reap per I/O`).toBe(400);
      const eight = await run(ctx, job(engine, 'randread', false, { ...opts, iodepthBatchCompleteMin: 8, iodepthBatchCompleteMax: 8 }));
      expect(eight.read.ios).toBe(400);
      expect(eight.depth.complete[2], `${engine}: reaps of 8 fall in fio's 5-8 bucket`).toBe(50);
      const upTo = await run(ctx, job(engine, 'randread', false, { ...opts, iodepthBatchCompleteMax: 8 }));
      expect(upTo.depth.complete[2], `${engine}: max 8 takes what is there`).toBeGreaterThan(0);
    }
  });

  it('stops when the stop flag is set, and says the result is partial', async () => {
    const stop = new Int32Array(new SharedArrayBuffer(4));
    const t0 = Date.now();
    // stop once I/O is under way (progress comes every 200 ms)
    const r = await native.benchRun(job('psync', 'randread', false, { timeBased: true, runtimeMs: 20_000, verify: false, stop }),
      (p) => { if (p.ios > 0) Atomics.store(stop, 0, 1); });
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(r.interrupted).toBe(true);
    expect(r.read.ios).toBeGreaterThan(0);
  });

  it('rejects bad jobs with typed errors before starting', async () => {
    expect(() => native.benchRun(job('nope', 'read', false))).toThrow(/unknown ioengine 'nope'/);
    expect(() => native.benchRun({ ...job('psync', 'read', false), rw: 'sideways' as never })).toThrow(/unknown rw/);
    expect(() => native.benchRun(job('psync', 'read', false, { iodepth: 0 }))).toThrow(RangeError);
    expect(() => native.benchRun(job('psync', 'read', false, { bs: 4100 }))).toThrow(/multiple of 8/);
  });

  it('rejects an I/O error with an errno error naming the file', async () => {
    const err = await native.benchRun({ ...job('psync', 'read', false), filename: dir.path }).catch((e) => e);
    expect(err.code).toBe('EISDIR');
    expect(err.path).toBe(dir.path);
  });
});

describe('jobs at the same time', () => {
  it('runs each job of a group at once, a result each; jobs of one entry are summed, as fio\'s group_reporting', async () => {
    const timed = { verify: false, timeBased: true, runtimeMs: 600 };
    const [a, b] = await native.benchRunGroup([job('psync', 'read', false, { ...timed, filename: join(dir.path, 'ga.dat') }),
      job('psync', 'write', false, { ...timed, filename: join(dir.path, 'gb.dat') })]);
    expect([a.read.ios > 0, a.write.ios, b.read.ios, b.write.ios > 0]).toEqual([true, 0, 0, true]);
    const end = (r: BenchResult) => r.startUnixMs + r.runtimeNs / 1e6;
    expect(Math.min(end(a), end(b)) - Math.max(a.startUnixMs, b.startUnixMs), 'their 600 ms overlap').toBeGreaterThan(400);
    expect(Math.abs(a.startUnixMs - Date.now())).toBeLessThan(60_000);
    // the process's CPU over the group, split between the jobs by their threads
    expect(a.usrSec + a.sysSec).toBeCloseTo(b.usrSec + b.sysSec, 6);
    const counted = { verify: false, numberIos: 50 };
    const summed = await native.benchRunGroup([job('psync', 'randread', false, { ...counted, entry: 0, clone: 0 }),
      job('psync', 'randread', false, { ...counted, entry: 0, clone: 1 }), job('psync', 'read', false, { ...counted, entry: 1 })]);
    expect(summed.map((r) => r.read.ios)).toEqual([100, 50]);
    expect(summed[0].read.clat.n).toBe(100);
  });
});

describe('latency against a known delay', () => {
  it('measures clat of a device with a fixed 25 ms latency as 25 ms, at any depth', async () => {
    const delay = 25_000;  // us
    for (const iodepth of [1, 8]) {
      const r = await native.benchRun(job('test_delay', 'randread', false, {
        iodepth, numberIos: 24, verify: false, engineOptions: { test_delay_usec: delay },
      }));
      expect(r.read.ios).toBe(24);
      expect(r.read.clat.min, `iodepth ${iodepth}`).toBeGreaterThanOrEqual(delay * 1000);
      // a serialized device, or a runner that counts the wait behind earlier I/Os, shows depth x
      // 25 ms at depth 8. A late wake-up beside a second suite adds up to ~8 ms whatever the delay,
      // so the delay is long enough that 4x (and 6x at depth 8) leaves room for it
      expect(r.read.clat.percentiles[6], `iodepth ${iodepth}: p50`).toBeLessThan((iodepth === 1 ? 4 : 6) * delay * 1000);
      expect(r.read.lat.bins.slice(24).reduce((a, b) => a + b, 0)).toBe(24);  // fio's latency_ms buckets from "50" (20-50 ms) up
    }
  });

  it('handles an engine that answers BUSY: the runner commits, reaps and offers the I/O again', async () => {
    const r = await native.benchRun(job('test_delay', 'randread', false, {
      iodepth: 8, numberIos: 50, verify: false, engineOptions: { test_delay_usec: 200, test_delay_slots: 2 },
    }));
    expect(r.read.ios).toBe(50);
    // never more than the engine's 2 slots in flight: fio's iodepth_level buckets 1 and 2 only
    expect(r.depth.level.slice(2).every((n) => n === 0)).toBe(true);
    expect(r.depth.level[1]).toBeGreaterThan(0);
  });

  it('posixaio wakes when one of the 8 lowest in-flight slots finishes: most reaps are small, not half a queue at a time', async (ctx) => {
    const r = await run(ctx, job('posixaio', 'randread', false, { iodepth: 32, numberIos: 4000, verify: false, size: 8 << 20 }));
    const reaps = r.depth.complete.reduce((a, b) => a + b, 0);
    // waiting for the request halfway down the queue reaped ~16 per wake-up (fio's 9-16 / 17-32 buckets);
    // fio's rule (test/bench-posixaio.test.ts) sleeps past the oldest only when it is not among the 8
    expect((r.depth.complete[0] + r.depth.complete[1] + r.depth.complete[2]) / reaps).toBeGreaterThan(0.5);
  });
});

describe('verify cannot pass stale bytes', () => {
  it('fails when the device reports a read done without moving data, even into a buffer that held the right bytes', async () => {
    const f = join(dir.path, 'stale.dat');
    await native.benchRun({ ...job('psync', 'write', false), filename: f, size: 4096 });
    // one slot, one block: the first read really reads it; the second moves nothing
    const err = await native.benchRun({
      ...job('test_nodata', 'read', false), filename: f, size: 4096, iodepth: 1, numberIos: 2,
      timeBased: true, runtimeMs: 10_000, engineOptions: { test_nodata_after: 1 },
    }).catch((e) => e);
    expect(err.code).toBe('ERR_IOLAB_VERIFY');
    expect(err.message).toMatch(/verify failed: block at offset 0 \(bs 4096\)/);
  });
});

describe('layout', () => {
  it('keeps the pattern across short writes at unaligned offsets', async () => {
    const f = join(dir.path, 'short.dat');
    // every layout pwrite capped at 1001 bytes: each next write starts mid-word
    const laid = await native.benchRun({ ...job('psync', 'read', false), filename: f, size: 64 << 10, layoutWriteCap: 1001, numberIos: 1 });
    expect(laid.laidOutBytes).toBe(64 << 10);
    const r = await native.benchRun({ ...job('psync', 'read', false), filename: f, size: 64 << 10 });
    expect(r.read.ios).toBe(16);
  });
});
