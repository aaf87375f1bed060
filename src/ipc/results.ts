// `bench ipc`'s results: the median of the rounds per cell, each transport's ratio to memcpy
// at the same size, the table and the JSON.
import { formatBytes, formatCount, formatNs, formatRate, median, ratio, table } from '../format.js';
import type { IpcMode } from '../native.js';
import { memcpyName, type IpcPlan, type SkippedCell } from './plan.js';
import type { IpcRun, Sample } from './run.js';

export interface IpcRow {
  transport: string;
  mode: IpcMode;
  messageBytes: number;
  /** Messages (pingpong: round trips) moved and checked, all rounds together. */
  messages: number;
  /** Medians of the rounds. */
  bytesPerSec: number;
  messagesPerSec: number;
  p50Ns: number | null;
  p99Ns: number | null;
  p999Ns: number | null;
  /** Pingpong: the sender's check of one reply (mean; median of the rounds), not in p50-p99.9. */
  checkNs: number | null;
  /** Throughput: bytesPerSec / memcpy's at this size, same run. */
  memcpyRatio: number | null;
  /** Rounds this median is of (fewer than asked when the run was interrupted). */
  rounds: number;
}

export interface IpcResults {
  memcpyBytesPerSec: Record<string, number>;
  rows: IpcRow[];
  skipped: SkippedCell[];
  ratios: Record<string, Record<string, number>>;
  rounds: number;
  durationMs: number;
  check: 'sampled' | 'full';
  partial?: { interruptedBy: string; cellsDone: number; cellsPlanned: number };
  samples: Sample[];
}

const medianOf = (xs: Sample[], pick: (s: Sample) => number | undefined) => {
  const values = xs.map(pick).filter((v): v is number => v !== undefined);
  return values.length ? median(values) : null;
};

export function buildResults(plan: IpcPlan, run: IpcRun): IpcResults {
  const { options } = plan;
  const groups = new Map<string, Sample[]>();
  for (const s of run.samples) {
    const key = `${s.messageBytes}|${s.transport}|${s.mode}`;
    groups.set(key, [...(groups.get(key) ?? []), s]);
  }
  const memcpyBytesPerSec: Record<string, number> = {};
  for (const [key, xs] of groups) if (xs[0].transport === memcpyName) memcpyBytesPerSec[key.split('|')[0]] = medianOf(xs, (s) => s.bytesPerSec)!;
  const rows: IpcRow[] = [];
  for (const xs of groups.values()) {
    const s = xs[0];
    if (s.transport === memcpyName) continue;
    const bytesPerSec = medianOf(xs, (x) => x.bytesPerSec)!;
    const limit = memcpyBytesPerSec[String(s.messageBytes)];
    rows.push({ transport: s.transport, mode: s.mode, messageBytes: s.messageBytes,
      messages: xs.reduce((n, x) => n + x.messages, 0), bytesPerSec, messagesPerSec: medianOf(xs, (x) => x.messagesPerSec)!,
      p50Ns: medianOf(xs, (x) => x.p50Ns), p99Ns: medianOf(xs, (x) => x.p99Ns), p999Ns: medianOf(xs, (x) => x.p999Ns),
      checkNs: medianOf(xs, (x) => x.checkNs), memcpyRatio: s.mode === 'throughput' && limit ? bytesPerSec / limit : null, rounds: xs.length });
  }
  const order = (r: { messageBytes: number; transport: string }) => [r.messageBytes, ['memcpy', ...options.transports].indexOf(r.transport)];
  rows.sort((a, b) => order(a)[0] - order(b)[0] || order(a)[1] - order(b)[1]);
  const results: IpcResults = { memcpyBytesPerSec, rows, skipped: plan.skipped, ratios: headlineRatios(rows),
    rounds: options.rounds, durationMs: options.durationMs, check: options.checkFull ? 'full' : 'sampled', samples: run.samples };
  if (run.interruptedBy) results.partial = { interruptedBy: run.interruptedBy, cellsDone: run.samples.length, cellsPlanned: run.cellsPlanned };
  return results;
}

/** What shared memory buys over copying through a socket, per size: shm-queue's throughput over
 * stream-copy's, and its pingpong p50 over stream-copy's (below 1 is faster). */
function headlineRatios(rows: IpcRow[]): Record<string, Record<string, number>> {
  const find = (t: string, mode: IpcMode, size: number) => rows.find((r) => r.transport === t && r.mode === mode && r.messageBytes === size);
  const out: Record<string, Record<string, number>> = {};
  for (const r of rows) {
    if (r.transport !== 'shm-queue') continue;
    const base = find('stream-copy', r.mode, r.messageBytes);
    if (!base) continue;
    if (r.mode === 'throughput') (out['shm-queue/stream-copy throughput'] ??= {})[r.messageBytes] = r.bytesPerSec / base.bytesPerSec;
    else if (r.p50Ns && base.p50Ns) (out['shm-queue/stream-copy pingpong p50'] ??= {})[r.messageBytes] = r.p50Ns / base.p50Ns;
  }
  return out;
}

/** Notes (two-cell rows) for the cells that did not run: per size when the message was too
 * big, once per table when the transport cannot run here at all. */
function skippedRows(results: IpcResults, mode: IpcMode, size?: number): string[][] {
  const mine = results.skipped.filter((s) => s.mode === mode && (size === undefined ? s.status === 'unavailable' : s.status === 'skipped' && s.messageBytes === size));
  const seen = new Set<string>();
  return mine.filter((s) => !seen.has(s.transport) && seen.add(s.transport))
    .map((s) => [s.transport, size === undefined ? `unavailable: ${s.reason}` : `${formatBytes(size)}: skipped, ${s.reason}`]);
}

export function formatResults(results: IpcResults): string {
  const sizes = [...new Set([...results.rows.map((r) => r.messageBytes), ...results.skipped.map((s) => s.messageBytes)])].sort((a, b) => a - b);
  const out: string[] = [];
  const partial = results.partial ? `, PARTIAL: interrupted by ${results.partial.interruptedBy} after ${results.partial.cellsDone} of ${results.partial.cellsPlanned} cells` : '';
  out.push(`bench ipc: sender and receiver in two processes, median of ${results.rounds} alternated round(s), ${results.durationMs} ms per cell, ` +
    `every message checked (${results.check})${partial}`);
  const tput = results.rows.filter((r) => r.mode === 'throughput');
  const ping = results.rows.filter((r) => r.mode === 'pingpong');
  if (tput.length || results.skipped.some((s) => s.mode === 'throughput')) {
    const rows: string[][] = [];
    for (const size of sizes) {
      const limit = results.memcpyBytesPerSec[String(size)];
      if (limit !== undefined) rows.push([memcpyName, formatBytes(size), formatCount(limit / size), formatRate(limit), '1.00x']);
      for (const r of tput.filter((x) => x.messageBytes === size)) {
        rows.push([r.transport, formatBytes(size), formatCount(r.messagesPerSec), formatRate(r.bytesPerSec), ratio(r.bytesPerSec, limit)]);
      }
      rows.push(...skippedRows(results, 'throughput', size));
    }
    rows.push(...skippedRows(results, 'throughput'));
    out.push('', 'throughput (one way)', table(['transport', 'size', 'messages/s', 'bytes/s', 'vs memcpy'], rows).trimEnd());
  }
  if (ping.length || results.skipped.some((s) => s.mode === 'pingpong')) {
    const rows: string[][] = [];
    for (const size of sizes) {
      for (const r of ping.filter((x) => x.messageBytes === size)) {
        rows.push([r.transport, formatBytes(size), formatCount(r.messagesPerSec), formatNs(r.p50Ns ?? NaN), formatNs(r.p99Ns ?? NaN), formatNs(r.p999Ns ?? NaN)]);
      }
      rows.push(...skippedRows(results, 'pingpong', size));
    }
    rows.push(...skippedRows(results, 'pingpong'));
    out.push('', 'pingpong (a message there and back)', table(['transport', 'size', 'round trips/s', 'p50', 'p99', 'p99.9'], rows).trimEnd());
  }
  const lines = Object.entries(results.ratios).map(([name, bySize]) =>
    `${name}: ${Object.entries(bySize).map(([size, v]) => `${formatBytes(Number(size))} ${v.toFixed(2)}x`).join(', ')}`);
  if (lines.length) out.push('', ...lines);
  return out.join('\n') + '\n';
}
