// The storage benchmarks' tables: one row per engine and direction, in human units. The JSON
// is fio's (fio-json.ts).
import { formatCount, formatNs } from '../format.js';
import { native, type BenchDirection, type BenchHistogram, type BenchResult } from '../native.js';
import { cpuPerIoUs } from './fio-json.js';

export function percentile(h: BenchHistogram, p: number): number {
  const i = native.benchPercentileList.indexOf(p);
  return i >= 0 && h.n > 0 ? h.percentiles[i] : NaN;
}

/** IOPS of a result, both directions together. */
export function resultIops(r: BenchResult): number {
  const secs = r.runtimeNs / 1e9;
  return secs > 0 ? (r.read.ios + r.write.ios) / secs : 0;
}

/** "1.23us": CPU time per I/O, as the table shows it. */
export function formatCpuPerIo(us: number): string {
  return Number.isFinite(us) ? `${us.toFixed(2)}us` : '-';
}

/** Table rows of one result: one per direction that moved data. usr/sys are the process's CPU
 * as a share of one core per job, as fio's usr_cpu/sys_cpu; CPU/IO is CPU time per I/O. A
 * result of an interrupted job says "(partial)" after its label. */
export function resultRows(label: string, r: BenchResult, numjobs: number): string[][] {
  const secs = r.runtimeNs / 1e9;
  const cpuSecs = (r.elapsedNs / 1e9) * numjobs;
  const cpu = (s: number) => (cpuSecs > 0 ? `${((s * 100) / cpuSecs).toFixed(1)}%` : '-');
  const dirs: [string, BenchDirection][] = [['read', r.read], ['write', r.write]];
  const moving = dirs.filter(([, d]) => d.ios > 0);
  const mark = r.interrupted ? ' (partial)' : '';
  if (moving.length === 0) return [[`${label}${mark}`, r.interrupted ? 'interrupted before any I/O completed' : 'no I/O']];
  return moving.map(([name, d]) => [
    `${moving.length > 1 ? `${label} ${name}` : label}${mark}`,
    formatCount(secs > 0 ? d.ios / secs : 0),
    secs > 0 ? (d.bytes / secs / 2 ** 20).toFixed(1) : '-',
    formatNs(percentile(d.clat, 50)),
    formatNs(percentile(d.clat, 99)),
    formatNs(percentile(d.clat, 99.9)),
    cpu(r.usrSec),
    cpu(r.sysSec),
    formatCpuPerIo(cpuPerIoUs(r)),
  ]);
}

export const resultHeader = ['engine', 'IOPS', 'MiB/s', 'clat p50', 'clat p99', 'clat p99.9', 'usr', 'sys', 'CPU/IO'];
