// Latencies measured inside bpftrace are counted in a log-linear histogram: 16 buckets per
// power of two, so a percentile read from it is within 1/32 of the true value (bpftrace's own
// hist() has one bucket per power of two, too coarse for p99). The bucket key is computed in
// BPF by the snippet below and turned back into nanoseconds here: both halves of one encoding.

/** Sub-buckets per power of two (a power of two itself). */
const SUB = 16;
const SUB_BITS = 4;

/**
 * bpftrace statements that set `$b` to the bucket key of `$lat` (nanoseconds, u64). Values
 * below 16 get their own key; above, the key is 16 * (octave - 4) + the top five bits.
 */
export function bucketStatements(): string {
  return [
    '$v = $lat; $e = (uint64)0;',
    'if ($v >= 4294967296) { $e += 32; $v = $v >> 32; }',
    'if ($v >= 65536) { $e += 16; $v = $v >> 16; }',
    'if ($v >= 256) { $e += 8; $v = $v >> 8; }',
    'if ($v >= 16) { $e += 4; $v = $v >> 4; }',
    'if ($v >= 4) { $e += 2; $v = $v >> 2; }',
    'if ($v >= 2) { $e += 1; }',
    `$b = $lat; if ($e >= ${SUB_BITS}) { $b = ($e - ${SUB_BITS}) * ${SUB} + ($lat >> ($e - ${SUB_BITS})); }`,
  ].join('\n  ');
}

/** The same key in TypeScript (the tests check both agree). */
export function bucketOf(ns: number): number {
  if (ns < SUB) return Math.max(0, Math.floor(ns));
  const e = Math.floor(Math.log2(ns));
  return (e - SUB_BITS) * SUB + Math.floor(ns / 2 ** (e - SUB_BITS));
}

/** The range [low, high) of nanoseconds a key stands for. */
export function bucketRange(key: number): [number, number] {
  if (key < 2 * SUB) return [key, key + 1];
  const octave = Math.floor((key - SUB) / SUB);   // e - SUB_BITS
  const mantissa = key - octave * SUB;            // SUB .. 2*SUB-1
  return [mantissa * 2 ** octave, (mantissa + 1) * 2 ** octave];
}

/** Bucket counts (key -> count) of one series. */
export type Buckets = Map<number, number>;

export function totalCount(buckets: Buckets): number {
  let n = 0;
  for (const c of buckets.values()) n += c;
  return n;
}

/** The p-th percentile (0 < p <= 100): the midpoint of the bucket holding it; NaN when empty. */
export function bucketPercentile(buckets: Buckets, p: number): number {
  const total = totalCount(buckets);
  if (total === 0) return NaN;
  const rank = Math.max(1, Math.ceil((p / 100) * total));
  let seen = 0;
  for (const key of [...buckets.keys()].sort((a, b) => a - b)) {
    seen += buckets.get(key)!;
    if (seen >= rank) {
      const [low, high] = bucketRange(key);
      return high - low <= 1 ? low : Math.round((low + high) / 2);
    }
  }
  return NaN;
}
