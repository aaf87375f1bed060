// The latency buckets: the key bpftrace computes equals the one TypeScript decodes, every key's
// range holds its values, and percentiles read from buckets are within 1/32 of the truth.
import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import fc from 'fast-check';
import { bucketOf, bucketPercentile, bucketRange, bucketStatements } from '../src/trace/latency-buckets.js';
import { traceUnavailable } from './support/trace.js';
import { bpftraceBinary, bpftraceEnv } from '../src/trace/probes.js';
import { collectMaps, summarize } from '../src/trace/summary.js';

const samples = [0, 1, 2, 3, 15, 16, 17, 31, 32, 33, 47, 48, 63, 64, 100, 1000, 4095, 4096, 4097, 123_456,
  1_000_000, 999_999_999, 4_294_967_295, 4_294_967_296, 5_000_000_000, 2 ** 40 + 12345];

describe('latency buckets', () => {
  it('each value lies in the range of its key', () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: 2 ** 50 }), (ns) => {
      const [low, high] = bucketRange(bucketOf(ns));
      return low <= ns && ns < high;
    }));
  });

  it('keys are ordered as their values are', () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: 2 ** 40 }), fc.integer({ min: 0, max: 2 ** 40 }), (a, b) =>
      a <= b ? bucketOf(a) <= bucketOf(b) : bucketOf(a) >= bucketOf(b)));
  });

  it('a percentile from buckets is within 1/32 of the exact one', () => {
    fc.assert(fc.property(fc.array(fc.integer({ min: 1, max: 10_000_000 }), { minLength: 1, maxLength: 300 }),
      fc.constantFrom(50, 99, 99.9), (values, p) => {
        const buckets = new Map<number, number>();
        for (const v of values) buckets.set(bucketOf(v), (buckets.get(bucketOf(v)) ?? 0) + 1);
        const sorted = [...values].sort((x, y) => x - y);
        const exact = sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)];
        return Math.abs(bucketPercentile(buckets, p) - exact) <= exact / 32 + 1;
      }));
  });

  it('summarize reads bpftrace\'s JSON maps: counts, names, percentiles', () => {
    const lines = [
      '{"type": "map", "data": {"@op_count": {"1": 3}}}',
      '{"type": "map", "data": {"@op_name": {"1": "READV"}}}',
      '{"type": "map", "data": {"@op_inline": {"1": 2}}}',
      '{"type": "map", "data": {"@op_async": {"1": 1}}}',
      `{"type": "map", "data": {"@op_lat": {"1,${bucketOf(1000)}": 2, "1,${bucketOf(50_000)}": 1}}}`,
      '{"type": "map", "data": {"@overflow": 4}}',
    ];
    const s = summarize(collectMaps(lines));
    expect(s.ops).toEqual([{ opcode: 'READV', count: 3, inline: 2, async: 1, cqes: 0,
      p50Ns: expect.closeTo(1000, -2), p99Ns: expect.closeTo(50_000, -3), p999Ns: expect.closeTo(50_000, -3) }]);
    expect(s.cqOverflows).toBe(4);
  });

  const skip = traceUnavailable();
  it.skipIf(skip !== undefined)(`bpftrace computes the same keys${skip ? ` (skipped: ${skip})` : ''}`, async () => {
    const body = samples.map((v) => `$lat = (uint64)${v};\n  ${bucketStatements()}\n  @k[${v}] = $b;`).join('\n  ');
    const { stdout } = await promisify(execFile)(bpftraceBinary()!, ['-f', 'json', '-e', `BEGIN {\n  ${body}\n  exit();\n}`],
      { timeout: 60_000, env: bpftraceEnv() });
    const keys = collectMaps(stdout.split('\n')).get('@k') as Record<string, number>;
    for (const v of samples) expect([v, keys[String(v)]]).toEqual([v, bucketOf(v)]);
  }, 60_000);
});
