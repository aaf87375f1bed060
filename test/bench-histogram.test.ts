// The latency histogram against known sample sets: exact below 128 ns, within one bucket
// (1/64) above, exact min/max/mean/stddev, fio's percentile list.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { native } from '../src/native.js';

const plist = native.benchPercentileList;

/** The p-th percentile as the runner defines it: the smallest sample with >= p% at or below it. */
function exactPercentile(sorted: number[], p: number): number {
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length - 1e-9)));
  return sorted[rank - 1];
}

describe('benchHistogram', () => {
  it("uses fio's percentile list", () => {
    expect(plist).toEqual([1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99]);
  });

  it('is exact for 1..100 ns', () => {
    const samples = Array.from({ length: 100 }, (_, i) => 100 - i);
    const h = native.benchHistogram(samples);
    expect(h.n).toBe(100);
    expect(h.min).toBe(1);
    expect(h.max).toBe(100);
    expect(h.mean).toBeCloseTo(50.5, 10);
    expect(h.stddev).toBeCloseTo(29.011491975882016, 9);  // sample stddev of 1..100
    expect(h.percentiles).toEqual([1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 100, 100, 100, 100]);
  });

  it('puts a known latency set in the right buckets', () => {
    // 1000 samples: 990 at 10 us, 9 at 1 ms, 1 at 50 ms
    const samples = [...Array(990).fill(10_000), ...Array(9).fill(1_000_000), 50_000_000];
    const h = native.benchHistogram(samples);
    const p = (x: number) => h.percentiles[plist.indexOf(x)];
    expect(Math.abs(p(50) - 10_000) / 10_000).toBeLessThan(1 / 64);
    expect(Math.abs(p(99) - 10_000) / 10_000).toBeLessThan(1 / 64);
    expect(Math.abs(p(99.9) - 1_000_000) / 1_000_000).toBeLessThan(1 / 64);
    expect(p(99.99)).toBe(50_000_000);  // clamped to the exact max
    expect(h.min).toBe(10_000);
  });

  it('is empty-safe', () => {
    const h = native.benchHistogram([]);
    expect(h).toMatchObject({ n: 0, min: 0, max: 0, mean: 0, stddev: 0 });
    expect(h.percentiles.every((v) => v === 0)).toBe(true);
  });

  it('stays within one bucket of the exact percentile for any sample set', () => {
    fc.assert(fc.property(fc.array(fc.integer({ min: 0, max: 2 ** 40 }), { minLength: 1, maxLength: 300 }), (samples) => {
      const h = native.benchHistogram(samples);
      const sorted = [...samples].sort((a, b) => a - b);
      expect(h.min).toBe(sorted[0]);
      expect(h.max).toBe(sorted[sorted.length - 1]);
      plist.forEach((p, i) => {
        const want = exactPercentile(sorted, p);
        const got = h.percentiles[i];
        if (want < 128) expect(got).toBe(want);
        else expect(Math.abs(got - want)).toBeLessThanOrEqual(want / 64);
      });
    }), { numRuns: 200 });
  });
});
