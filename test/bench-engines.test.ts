// The storage engines through the native runner: every engine x every rw, buffered and O_DIRECT,
// with verify on; io count x bs = bytes; io_uring's knobs; several jobs; nothing left behind.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { native, type BenchJob } from '../src/native.js';
import { openFdCount, settledLiveObjects, zeroLiveObjects } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';

const rws = ['read', 'write', 'randread', 'randwrite', 'randrw', 'readwrite'] as const;
let dir: ReturnType<typeof shortTempDir>;
let fdsBefore: number;

beforeAll(() => {
  dir = shortTempDir('iolab-eng-');
  fdsBefore = openFdCount();
});

afterAll(async () => {
  expect(await settledLiveObjects()).toEqual(zeroLiveObjects);
  expect(openFdCount()).toBeLessThanOrEqual(fdsBefore);
  dir.cleanup();
});

function job(engine: string, rw: BenchJob['rw'], direct: boolean, extra: Partial<BenchJob> = {}): BenchJob {
  return {
    filename: join(dir.path, `${engine}.dat`), engine, rw, bs: 4096, iodepth: 8, size: 1 << 20,
    direct, verify: true, invalidate: true, rwmixread: 50, ...extra,
  };
}

describe.each(native.benchEngines)('engine %s', (engine) => {
  it.each([false, true])('runs every rw with verify passing (direct=%s)', async (direct) => {
    for (const rw of rws) {
      const r = await native.benchRun(job(engine, rw, direct));
      expect(r.unavailable, `${engine} unavailable here`).toBeUndefined();
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
    }
  });
});

describe('runner', () => {
  it('runs io_uring with fixedbufs, registerfiles and sqthread_poll', async () => {
    for (const knobs of [{ fixedbufs: true }, { registerfiles: true }, { fixedbufs: true, registerfiles: true, sqthreadPoll: true }]) {
      const r = await native.benchRun(job('io_uring', 'randrw', true, { ...knobs, numberIos: 300 }));
      if (r.unavailable) continue;  // e.g. SQPOLL refused in a sandbox: reported, not thrown
      expect(r.read.ios + r.write.ios).toBe(300);
    }
  });

  it('runs several jobs as threads, time based with a ramp, and reports progress', async () => {
    const seen: string[] = [];
    const r = await native.benchRun(job('psync', 'randread', false, {
      numjobs: 2, timeBased: true, runtimeMs: 450, rampMs: 100, verify: false, iodepth: 1,
    }), (p) => seen.push(p.phase));
    expect(r.runtimeNs).toBeGreaterThanOrEqual(300e6);
    expect(r.runtimeNs).toBeLessThan(2e9);
    expect(r.read.ios).toBeGreaterThan(0);
    expect(seen).toContain('run');
  });

  it('stops after number_ios per job', async () => {
    const r = await native.benchRun(job('libaio', 'read', true, { numjobs: 3, numberIos: 50 }));
    expect(r.read.ios).toBe(150);
    for (const engine of ['io_uring', 'libaio', 'posixaio']) {  // batched commits (iodepth_batch_submit)
      const b = await native.benchRun(job(engine, 'randrw', true, { iodepth: 16, iodepthBatch: 5, numberIos: 203 }));
      expect(b.read.ios + b.write.ios).toBe(203);
    }
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
