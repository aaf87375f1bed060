// The one place for what every table and summary shares: the table layout, the median of
// alternated rounds, ratios, and human units.

/** Median of numbers (mean of the middle two for an even count; NaN for none). */
export function median(values: number[]): number {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

/** The p-th percentile (0 < p <= 100) of numbers: the smallest value with p% of them at or below
 * it, as the latency histogram reads one (native/stats/histogram.c); NaN for none. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

/** a / b as "1.05x" ("-" when either side is missing or b is 0). */
export function ratio(a: number, b: number, digits = 2): string {
  if (!Number.isFinite(a) || !Number.isFinite(b) || b === 0) return '-';
  return `${(a / b).toFixed(digits)}x`;
}

/** ns -> "812ns", "12.3us", "1.25ms", "2.00s". */
export function formatNs(ns: number): string {
  if (!Number.isFinite(ns)) return '-';
  if (ns < 1000) return `${Math.round(ns)}ns`;
  if (ns < 1e6) return `${(ns / 1e3).toFixed(ns < 1e4 ? 2 : 1)}us`;
  if (ns < 1e9) return `${(ns / 1e6).toFixed(2)}ms`;
  return `${(ns / 1e9).toFixed(2)}s`;
}

/** 1234567 -> "1,234,567". */
export function formatCount(n: number): string {
  if (!Number.isFinite(n)) return '-';
  return Math.round(n).toLocaleString('en-US');
}

/** Bytes in binary units: 512 -> "512 B", 65536 -> "64 KiB", 1.5 GiB -> "1.50 GiB". */
export function formatBytes(n: number): string {
  if (!Number.isFinite(n)) return '-';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  if (i === 0) return `${Math.round(v)} B`;
  return `${Number.isInteger(v) ? v : v.toFixed(2)} ${units[i]}`;
}

/** Bytes per second in decimal units, as bandwidth is read: "3.21 GB/s", "812 MB/s". */
export function formatRate(bytesPerSec: number): string {
  if (!Number.isFinite(bytesPerSec)) return '-';
  if (bytesPerSec >= 1e9) return `${(bytesPerSec / 1e9).toFixed(2)} GB/s`;
  if (bytesPerSec >= 1e6) return `${(bytesPerSec / 1e6).toFixed(1)} MB/s`;
  if (bytesPerSec >= 1e3) return `${(bytesPerSec / 1e3).toFixed(1)} kB/s`;
  return `${Math.round(bytesPerSec)} B/s`;
}

/** Left-aligned first column, right-aligned others. A row of two cells is a note ("unavailable:
 * …", "error: …") written after the first column without widening the others. */
export function table(header: string[], rows: string[][]): string {
  const full = rows.filter((r) => r.length > 2 || header.length <= 2);
  const widths = header.map((h, i) => Math.max(h.length, ...full.map((r) => (r[i] ?? '').length),
    ...(i === 0 ? rows.map((r) => r[0].length) : [])));
  const line = (cells: string[]) => cells.length === 2 && header.length > 2 ? `${cells[0].padEnd(widths[0])}  ${cells[1]}` :
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ').trimEnd();
  return [line(header), ...rows.map(line)].join('\n') + '\n';
}
