// One job over several files (fio's filename=a:b) through the native runner: the size split
// among the files, each laid out; the I/Os going to one file after the other, each file with its
// own sequential offset and its own random map, under every engine that moves data (io_uring's
// registered files and fixed buffers too); a verify failure naming the file it is in.
import { describe, expect, it, type TestContext } from 'vitest';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { native, type BenchJob, type BenchResult } from '../src/native.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';

const dir = shortTempDir('iolab-files-');
checkLeaksAfterAll(dir);

const engines = native.benchEngines.filter((e) => !e.testOnly && !e.diskless).map((e) => e.name);
const BS = 4096;
const MARK = 0xab;  // every write carries this byte (verify_pattern), so a written block is told from the layout's

let serial = 0;
function files(n: number): string[] {
  serial++;
  return Array.from({ length: n }, (_, i) => join(dir.path, `f${serial}-${i}.dat`));
}

function job(names: string[], extra: Partial<BenchJob>): BenchJob {
  return { filename: names[0], filenames: names, engine: 'psync', rw: 'write', bs: BS, iodepth: 1, size: names.length * 4 * BS,
    invalidate: true, ...extra };
}

async function run(ctx: TestContext, j: BenchJob): Promise<BenchResult> {
  const r = await native.benchRun(j);
  if (r.unavailable) ctx.skip(`${j.engine} unavailable here: ${r.unavailable}`);
  return r;
}

/** Which blocks of the file carry the written mark. */
function marked(file: string): boolean[] {
  const data = readFileSync(file);
  return Array.from({ length: data.length / BS }, (_, b) => data.subarray(b * BS, (b + 1) * BS).every((x) => x === MARK));
}

describe('a job over several files', () => {
  it('splits its size among them, as fio: each file size / files bytes, the I/O over its whole blocks', async () => {
    const names = files(3);
    const size = 3 * 4 * BS + 5;  // each file 16384 + 1 bytes: 4 whole blocks
    const r = await native.benchRun(job(names, { rw: 'read', size }));
    for (const f of names) expect(statSync(f).size).toBe(Math.floor(size / 3));
    expect(r.read.ios).toBe(12);
    expect(r.size).toBe(12 * BS);
  });

  for (const engine of engines) {
    it(`${engine}: sequential I/Os go to one file after the other, each file from its start`, async (ctx) => {
      const names = files(2);
      // three writes: a's block 0, b's block 0, a's block 1
      const r = await run(ctx, job(names, { engine, numberIos: 3, verify: true, verifyPattern: Buffer.from([MARK]) }));
      expect(r.write.ios).toBe(3);
      expect(marked(names[0])).toEqual([true, true, false, false]);
      expect(marked(names[1])).toEqual([true, false, false, false]);
      expect(r.verifiedBlocks).toBe(3);
    });

    it(`${engine}: a random job covers each file's blocks once (a random map per file)`, async (ctx) => {
      const names = files(3);
      const r = await run(ctx, job(names, { engine, rw: 'randwrite', iodepth: 8, size: 3 * 16 * BS, verify: true,
        verifyPattern: Buffer.from([MARK]) }));
      expect(r.write.ios).toBe(48);
      for (const f of names) expect(marked(f)).toEqual(Array(16).fill(true));
    });
  }

  it('io_uring with registered files and fixed buffers reads every file', async (ctx) => {
    const names = files(3);
    await native.benchRun(job(names, { size: 3 * 8 * BS }));
    const r = await run(ctx, job(names, { engine: 'io_uring', rw: 'randread', iodepth: 4, size: 3 * 8 * BS, verify: true,
      engineOptions: { registerfiles: 1, fixedbufs: 1 } }));
    expect(r.read.ios).toBe(24);
  });

  it('a stop while it lays out the second file removes the first one too, which the run made', async () => {
    const names = files(2);
    const stop = new Int32Array(1);
    const second = () => readdirSync(dir.path).some((n) => n.startsWith(`.${basename(names[1])}.iolab-`));
    // tiny layout writes: the second file's layout lasts seconds, long enough to be seen and stopped
    const r = await native.benchRun({ ...job(names, { size: 2 * (32 << 20), layoutWriteCap: 16 }), stop }, () => {
      if (second()) stop[0] = 1;
    });
    expect([r.interrupted, r.layoutRemoved]).toEqual([true, true]);
    expect(names.map((f) => existsSync(f))).toEqual([false, false]);
    expect(second()).toBe(false);
  });

  it('a verify failure names the file it is in', async () => {
    const names = files(2);
    await native.benchRun(job(names, {}));
    // the first read (a's block 0) moves its data, the second (b's block 0) none
    const err = await native.benchRun(job(names, { engine: 'test_nodata', rw: 'read', verify: true, numberIos: 2,
      engineOptions: { test_nodata_after: 1 } })).catch((e) => e);
    expect(err.code).toBe('ERR_IOLAB_VERIFY');
    expect(err.message).toContain(`verify failed: block at offset 0 (bs 4096) of '${names[1]}'`);
  });
});
