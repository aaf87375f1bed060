// Turns native results into what users read: fio-shaped JSON (fio's key names where they mean
// the same), aligned tables, and human units.
import { formatCount, formatNs } from '../format.js';
import { native, type BenchDirection, type BenchHistogram, type BenchJob, type BenchResult } from '../native.js';

const percentileKeys = native.benchPercentileList.map((p) => p.toFixed(6));

function fioLatency(h: BenchHistogram | null) {
  if (h === null) return { min: 0, max: 0, mean: 0, stddev: 0, N: 0 };
  const percentile: Record<string, number> = {};
  percentileKeys.forEach((k, i) => { percentile[k] = h.percentiles[i]; });
  return { min: h.min, max: h.max, mean: h.mean, stddev: h.stddev, N: h.n, percentile };
}

function fioDirection(d: BenchDirection, runtimeNs: number) {
  const secs = runtimeNs / 1e9;
  const bwBytes = secs > 0 ? Math.round(d.bytes / secs) : 0;
  return {
    io_bytes: d.bytes,
    io_kbytes: Math.floor(d.bytes / 1024),
    bw_bytes: bwBytes,
    bw: Math.floor(bwBytes / 1024),
    iops: secs > 0 ? d.ios / secs : 0,
    runtime: d.ios > 0 ? Math.round(runtimeNs / 1e6) : 0,
    total_ios: d.ios,
    short_ios: 0,
    drop_ios: 0,
    slat_ns: fioLatency(d.slat),
    clat_ns: fioLatency(d.clat),
    lat_ns: fioLatency(d.lat),
  };
}

/** One fio-style jobs[] entry. error: the run's error message, when it failed. */
export function fioJob(job: BenchJob, r: BenchResult | undefined, error?: string) {
  const options = {
    filename: job.filename, ioengine: job.engine, rw: job.rw, bs: String(job.bs), iodepth: String(job.iodepth),
    numjobs: String(job.numjobs ?? 1), size: String(job.size), direct: job.direct ? '1' : '0',
  };
  const base = { jobname: job.engine, groupid: 0, error: r && !error && !r.unavailable ? 0 : 1, job_options: options };
  if (r === undefined || error !== undefined) return { ...base, error_message: error ?? 'did not run' };
  if (r.unavailable) return { ...base, unavailable: r.unavailable };
  const runtimeMs = r.runtimeNs / 1e6;
  const threads = job.numjobs ?? 1;
  return {
    ...base,
    job_runtime: Math.round(runtimeMs),
    read: fioDirection(r.read, r.runtimeNs),
    write: fioDirection(r.write, r.runtimeNs),
    usr_cpu: runtimeMs > 0 ? (r.usrSec * 1e5) / (runtimeMs * threads) : 0,
    sys_cpu: runtimeMs > 0 ? (r.sysSec * 1e5) / (runtimeMs * threads) : 0,
    iolab: { verified_blocks: r.verifiedBlocks, laid_out_bytes: r.laidOutBytes, size: r.size },
  };
}

export function percentile(h: BenchHistogram, p: number): number {
  const i = native.benchPercentileList.indexOf(p);
  return i >= 0 && h.n > 0 ? h.percentiles[i] : NaN;
}

/** Table rows of one result: one per direction that moved data. */
export function resultRows(label: string, r: BenchResult, numjobs: number): string[][] {
  const secs = r.runtimeNs / 1e9;
  const cpu = (s: number) => (secs > 0 ? `${((s * 100) / (secs * numjobs)).toFixed(1)}%` : '-');
  const dirs: [string, BenchDirection][] = [['read', r.read], ['write', r.write]];
  const moving = dirs.filter(([, d]) => d.ios > 0);
  return moving.map(([name, d]) => [
    moving.length > 1 ? `${label} ${name}` : label,
    formatCount(secs > 0 ? d.ios / secs : 0),
    secs > 0 ? (d.bytes / secs / 2 ** 20).toFixed(1) : '-',
    formatNs(percentile(d.clat, 50)),
    formatNs(percentile(d.clat, 99)),
    formatNs(percentile(d.clat, 99.9)),
    cpu(r.usrSec),
    cpu(r.sysSec),
  ]);
}

export const resultHeader = ['engine', 'IOPS', 'MiB/s', 'clat p50', 'clat p99', 'clat p99.9', 'usr', 'sys'];
