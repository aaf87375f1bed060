// fio's bssplit, to the percent: each I/O's length is one of the sizes by its share of the I/Os
// (native/bench/job_loop.c's next_len). A share of 1% next to 99% shows a pick that is one off
// (a split at <= rather than <, or over 101 values rather than 100) where a 50/50 split cannot.
// The null engine moves no data, so 20,000 I/Os take a moment; the draw is fio's default, the
// same every run.
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { native } from '../src/native.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';

const dir = shortTempDir('iolab-shares-');
checkLeaksAfterAll(dir);

/** The share of the I/Os that were `small` bytes long, of a bssplit of two sizes. */
async function smallShare(split: [number, number, number, number]): Promise<number> {
  const ios = 20_000;
  const r = await native.benchRun({ filename: join(dir.path, 'shares.dat'), engine: 'null', rw: 'randread', bs: split[0],
    iodepth: 1, size: 1 << 30, numberIos: ios, norandommap: true, bssplit: split });
  expect(r.read.ios).toBe(ios);
  const [small, , large] = split;
  return (large * ios - r.read.bytes) / (large - small) / ios;
}

describe('bssplit', () => {
  it('gives each size its share of the I/Os: 1% and 99%, 30% and 70%', async () => {
    // 20,000 draws: a share's standard deviation is 0.07% at 1%, 0.3% at 30%
    expect(await smallShare([4096, 1, 8192, 99])).toBeGreaterThan(0.005);
    expect(await smallShare([4096, 1, 8192, 99])).toBeLessThan(0.015);
    const third = await smallShare([4096, 30, 65536, 70]);
    expect(third).toBeGreaterThan(0.285);
    expect(third).toBeLessThan(0.315);
  });
});
