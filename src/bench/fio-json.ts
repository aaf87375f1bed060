// iolab's results as fio's JSON (--output-format=json): the same key paths and value types, so a
// parser written for fio (fio's own tools, fio-plot) reads iolab's output. What fio has no key
// for sits under each job's "iolab" object and at the top level (machine, command).
import { readFileSync } from 'node:fs';
import { native, type BenchDirection, type BenchHistogram, type BenchResult } from '../native.js';
import { jobLabel, type IopsJob } from './iops-plan.js';
import { joinFilenames } from './fio-values.js';
import { steadyStateJson } from './steadystate.js';
import type { MachineInfo } from './machine.js';

const percentileKeys = native.benchPercentileList.map((p) => p.toFixed(6));

function latency(h: BenchHistogram | null, percentiles: boolean) {
  if (h === null || h.n === 0) return { min: 0, max: 0, mean: 0, stddev: 0, N: 0 };
  const out: Record<string, unknown> = { min: h.min, max: h.max, mean: h.mean, stddev: h.stddev, N: h.n };
  if (percentiles) {
    const percentile: Record<string, number> = {};
    percentileKeys.forEach((k, i) => { percentile[k] = h.percentiles[i]; });
    out.percentile = percentile;
  }
  return out;
}

function direction(d: BenchDirection | undefined, runtimeNs: number, groupBwKiB: number) {
  const secs = runtimeNs / 1e9;
  const ios = d?.ios ?? 0;
  const bytes = d?.bytes ?? 0;
  const bwBytes = secs > 0 ? Math.round(bytes / secs) : 0;
  const bw = d?.bwKiBSamples;
  const iops = d?.iopsSamples;
  return {
    io_bytes: bytes,
    io_kbytes: Math.floor(bytes / 1024),
    bw_bytes: bwBytes,
    bw: Math.floor(bwBytes / 1024),
    iops: secs > 0 ? ios / secs : 0,
    runtime: ios > 0 ? Math.round(runtimeNs / 1e6) : 0,
    total_ios: ios,
    short_ios: 0,
    drop_ios: 0,
    slat_ns: latency(d?.slat ?? null, false),
    clat_ns: latency(d?.clat ?? null, true),
    lat_ns: latency(d?.lat ?? null, false),
    bw_min: bw?.n ? Math.round(bw.min) : 0,
    bw_max: bw?.n ? Math.round(bw.max) : 0,
    // a job's mean bw as a percentage of its group's, at most 100 (fio's p_of_agg)
    bw_agg: bw?.n && groupBwKiB > 0 ? Math.min(100, (bw.mean * 100) / groupBwKiB) : 0,
    bw_mean: bw?.mean ?? 0,
    bw_dev: bw?.stddev ?? 0,
    bw_samples: bw?.n ?? 0,
    iops_min: iops?.n ? Math.round(iops.min) : 0,
    iops_max: iops?.n ? Math.round(iops.max) : 0,
    iops_mean: iops?.mean ?? 0,
    iops_stddev: iops?.stddev ?? 0,
    iops_samples: iops?.n ?? 0,
  };
}

const latencyKeys = ['2', '4', '10', '20', '50', '100', '250', '500', '750', '1000'];
const depthKeys = ['1', '2', '4', '8', '16', '32', '>=64'];
const countKeys = ['0', '4', '8', '16', '32', '64', '>=64'];

function percents(keys: string[], counts: number[], total = counts.reduce((a, b) => a + b, 0)) {
  const out: Record<string, number> = {};
  keys.forEach((k, i) => { out[k] = total > 0 ? (counts[i] * 100) / total : 0; });
  return out;
}

/** fio's latency_ns / latency_us / latency_ms: percent of all I/Os by total latency. */
function latencyBuckets(r: BenchResult) {
  const bins = r.read.lat.bins.map((n, i) => n + r.write.lat.bins[i]);
  const total = r.read.ios + r.write.ios;
  return {
    latency_ns: percents(latencyKeys, bins.slice(0, 10), total),
    latency_us: percents(latencyKeys, bins.slice(10, 20), total),
    latency_ms: percents([...latencyKeys, '2000', '>=2000'], bins.slice(20, 32), total),
  };
}

const emptyDepth = [0, 0, 0, 0, 0, 0, 0];

/** The options beyond rw/bs/depth/size that change what a job measures, as fio names them, each
 * shown with its value, defaults too, so a reader sees the job that ran. */
function measuredFioOptions(job: IopsJob): Record<string, string> {
  const o: Record<string, string> = {
    norandommap: job.norandommap ? '1' : '0',
    randrepeat: job.randrepeat === false ? '0' : '1',
    refill_buffers: job.refillBuffers ? '1' : '0',
  };
  if (job.randrepeat !== false && job.randseed !== undefined) o.randseed = String(job.randseed);
  return o;
}

/** The options of a job as fio's "job options" lists them: fio's names, string values. */
export function jobOptions(job: IopsJob, point?: Record<string, string>): Record<string, string> {
  const o: Record<string, string> = {
    name: job.name ?? job.engine, filename: job.filenames ? joinFilenames(job.filenames) : job.filename, ioengine: job.engine, rw: job.rw, bs: String(job.bs),
    iodepth: String(job.iodepth), numjobs: String(job.clones ?? job.numjobs ?? 1), size: String(job.size),
    direct: job.direct ? '1' : '0', invalidate: job.invalidate === false ? '0' : '1',
    fadvise_hint: String(job.fadviseHint ?? 1),
  };
  // a length per I/O: the range as fio writes it, or the split (fio lists no bs beside it)
  if (job.bsMax) {
    delete o.bs;
    o.bsrange = `${job.bs}-${job.bsMax}`;
  }
  if (job.bssplit) {
    delete o.bs;
    const text = (split: number[]) => Array.from({ length: split.length / 2 }, (_, i) => `${split[2 * i]}/${split[2 * i + 1]}`).join(':');
    o.bssplit = job.bssplitWrite ? `${text(job.bssplit)},${text(job.bssplitWrite)}` : text(job.bssplit);
  }
  if (job.rw === 'randrw' || job.rw === 'readwrite') o.rwmixread = String(job.rwmixread ?? 50);
  if (job.iodepthBatch && job.iodepthBatch > 1) o.iodepth_batch_submit = String(job.iodepthBatch);
  if (job.iodepthBatchCompleteMin !== undefined && job.iodepthBatchCompleteMin !== 1) {
    o.iodepth_batch_complete_min = String(job.iodepthBatchCompleteMin);
  }
  if (job.iodepthBatchCompleteMax) o.iodepth_batch_complete_max = String(job.iodepthBatchCompleteMax);
  if (job.runtimeMs) o.runtime = `${job.runtimeMs}ms`;
  if (job.timeBased) o.time_based = '1';
  if (job.rampMs) o.ramp_time = `${job.rampMs}ms`;
  if (job.numberIos) o.number_ios = String(job.numberIos);
  if (job.verify) o.verify = 'pattern';
  Object.assign(o, measuredFioOptions(job), job.accepted);
  for (const [k, v] of Object.entries(job.engineOptions ?? {})) o[k] = String(typeof v === 'boolean' ? Number(v) : v);
  return { ...o, ...point };
}

/** CPU microseconds per I/O: the process CPU over the job's I/O loops, scaled to the measured
 * time (the ramp's CPU is not charged to the measured I/Os). */
export function cpuPerIoUs(r: BenchResult): number {
  const ios = r.read.ios + r.write.ios;
  if (ios === 0 || r.elapsedNs <= 0) return NaN;
  return (((r.usrSec + r.sysSec) / (r.elapsedNs / 1e9)) * (r.runtimeNs / 1e9) * 1e6) / ios;
}

export interface JobEntry {
  job: IopsJob;
  result?: BenchResult;
  error?: string;
  /** A sweep point: its options, fio's names and string values. */
  point?: Record<string, string>;
  /** The jobs the result sums (fio's group_reporting); 1 by default. */
  members?: number;

}

/** A group's bandwidth in one direction, KiB/s, as fio's group report has it (its aggr): the
 * bytes of the group's jobs over the longest of their runtimes. bw_agg is a job's mean bw as a
 * percentage of it. */
function groupBandwidth(group: JobEntry[], dir: 'read' | 'write'): number {
  const bytes = group.reduce((s, e) => s + (e.result?.[dir]?.bytes ?? 0), 0);
  const runtimeNs = Math.max(0, ...group.map((e) => (e.result?.[dir]?.ios ? e.result.runtimeNs : 0)));
  return runtimeNs > 0 ? bytes / 1024 / (runtimeNs / 1e9) : 0;
}

/** One fio-style jobs[] entry; `all` holds the run's entries, of which those of the job's
 * groupid form its group (for bw_agg). */
/** fio's latency_target keys: the depth the search ended at, the target in ns, the window in
 * microseconds (as fio 3.33 prints them); without a target, the job's iodepth and zeros. */
function latencyTarget(job: IopsJob, depth: number | undefined) {
  return {
    latency_depth: job.latencyTargetNs ? depth ?? 1 : job.iodepth,
    latency_target: job.latencyTargetNs ?? 0,
    latency_percentile: (job.latencyPercentileMicros ?? 100e6) / 1e6,
    latency_window: Math.round((job.latencyWindowNs ?? 0) / 1000),
  };
}

/** fio's histogram buckets: FIO_IO_U_PLAT_NR of them; a later one of iolab's counts in fio's last. */
const FIO_PLAT_NR = 1856;

/** fio's value of a bucket (its plat_idx_to_val): the bucket itself below 128 ns, else the middle
 * of its range, as fio computes it. */
function fioBucketValue(idx: number): number {
  if (idx < 128) return idx;
  const errorBits = Math.floor(idx / 64) - 1;
  return Math.floor(2 ** (errorBits + 6) + ((idx % 64) + 0.5) * 2 ** errorBits);
}

/** fio's json+ bins of a histogram: each bucket's value (ns) and its count, the buckets in order. */
export function fioBins(h: BenchHistogram): Record<string, number> {
  const out: Record<string, number> = {};
  for (let i = 0; i + 1 < (h.buckets?.length ?? 0); i += 2) {
    const key = String(fioBucketValue(Math.min(h.buckets[i], FIO_PLAT_NR - 1)));
    out[key] = (out[key] ?? 0) + h.buckets[i + 1];
  }
  return out;
}

/** fio's --output-format=json+: each job's clat_ns of each direction with its bins. */
export function addJsonPlusBins(jobs: Record<string, any>[], entries: readonly JobEntry[]): void {
  jobs.forEach((j, i) => {
    const r = entries[i]?.result;
    if (!r || r.unavailable) return;
    for (const d of ['read', 'write'] as const) if (r[d].ios > 0 && j[d]?.clat_ns) j[d].clat_ns.bins = fioBins(r[d].clat);
  });
}

export function fioJob(entry: JobEntry, _index = 0, all: readonly JobEntry[] = [entry]) {
  const { job, result: r, error, point, members } = entry;
  // fio's jobname is the job's name; iolab's own command line names none, so the engine does
  const name = job.name ?? jobLabel(job.engine, point);
  const ran = r !== undefined && error === undefined && !r.unavailable;
  const base = {
    jobname: name, groupid: job.groupid ?? 0, ...(job.accepted?.description ? { desc: job.accepted.description } : {}), job_start: r?.startUnixMs ?? 0, error: ran ? 0 : 1, eta: 0, elapsed: 0,
    'job options': jobOptions(r?.size ? { ...job, size: r.size } : job, point),
  };
  if (!ran || r === undefined) {
    // every key a fio reader looks for is there, with zeros: an engine that did not run
    const why = error ?? (r?.unavailable ? undefined : 'did not run');
    return {
      ...base, read: direction(undefined, 0, 0), write: direction(undefined, 0, 0), trim: direction(undefined, 0, 0),
      sync: { total_ios: 0, lat_ns: latency(null, false) }, job_runtime: 0, usr_cpu: 0, sys_cpu: 0, ctx: 0, majf: 0, minf: 0,
      iodepth_level: percents(depthKeys, emptyDepth), iodepth_submit: percents(countKeys, emptyDepth),
      iodepth_complete: percents(countKeys, emptyDepth), latency_ns: percents(latencyKeys, emptyDepth),
      latency_us: percents(latencyKeys, emptyDepth), latency_ms: percents([...latencyKeys, '2000', '>=2000'], emptyDepth),
      ...latencyTarget(job, undefined),
      ...(why ? { error_message: why } : {}), ...(r?.unavailable ? { unavailable: r.unavailable } : {}),
    };
  }
  // the threads the result's CPU is shared by: its jobs, and a --sweep numjobs point's threads
  const threads = (members ?? 1) * (job.numjobs ?? 1);
  const cpuSecs = (r.elapsedNs / 1e9) * threads;
  // each run of the job list (an --ioengine list, a sweep point) has groupids of its own
  const group = all.filter((e) => e.job.groupid === job.groupid);
  return {
    ...base,
    elapsed: Math.ceil(r.elapsedNs / 1e9),
    read: direction(r.read, r.runtimeNs, groupBandwidth(group, 'read')),
    write: direction(r.write, r.runtimeNs, groupBandwidth(group, 'write')),
    trim: direction(undefined, 0, 0),
    // fio 3.33 counts fsyncs in total_ios but fdatasyncs only in lat_ns's N
    sync: { total_ios: job.fdatasync ? 0 : r.sync?.ios ?? 0, lat_ns: latency(r.sync?.lat ?? null, (r.sync?.ios ?? 0) > 0) },
    job_runtime: Math.round((r.jobRuntimeNs || r.runtimeNs) / 1e6),
    usr_cpu: cpuSecs > 0 ? (r.usrSec * 100) / cpuSecs : 0,
    sys_cpu: cpuSecs > 0 ? (r.sysSec * 100) / cpuSecs : 0,
    ctx: r.ctx,
    majf: r.majf,
    minf: r.minf,
    iodepth_level: percents(depthKeys, r.depth?.level ?? emptyDepth),
    iodepth_submit: percents(countKeys, r.depth?.submit ?? emptyDepth),
    iodepth_complete: percents(countKeys, r.depth?.complete ?? emptyDepth),
    ...latencyBuckets(r),
    ...latencyTarget(job, r.latencyDepth),
    ...steadyStateJson(job, r),
    iolab: {
      cpu_us_per_io: cpuPerIoUs(r) || 0, verified_blocks: r.verifiedBlocks, laid_out_bytes: r.laidOutBytes,
      size: r.size, interrupted: r.interrupted,
    },
  };
}

/** The block device's counters (/sys/class/block/<dev>/stat), for fio's disk_util. */
export interface DiskSample { name: string; fields: number[]; atMs: number }

export function diskSample(device: string | undefined): DiskSample | undefined {
  if (device === undefined) return undefined;
  try {
    const fields = readFileSync(`/sys/class/block/${device}/stat`, 'utf8').trim().split(/\s+/).map(Number);
    return { name: device, fields, atMs: Date.now() };
  } catch {
    return undefined;
  }
}

/** fio's disk_util entry for the device between two samples. */
export function diskUtil(from: DiskSample | undefined, to: DiskSample | undefined) {
  if (!from || !to) return [];
  const d = (i: number) => (to.fields[i] ?? 0) - (from.fields[i] ?? 0);
  const ms = to.atMs - from.atMs;
  return [{
    name: from.name, read_ios: d(0), write_ios: d(4), read_merges: d(1), write_merges: d(5),
    read_ticks: d(3), write_ticks: d(7), in_queue: d(10), util: ms > 0 ? Math.min(100, (d(9) * 100) / ms) : 0,
  }];
}

/** The whole document: fio's top-level keys ("global options" when the run has any, as fio),
 * then iolab's machine and command line. */
export function fioDocument(startedMs: number, jobs: unknown[], disk: unknown[], extra: { machine: MachineInfo; command: string[] } & Record<string, unknown>,
  globalOptions: Record<string, string> = {}) {
  const version = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version as string;
  return {
    'fio version': `iolab-${version}`,
    timestamp: Math.floor(startedMs / 1000),
    timestamp_ms: startedMs,
    time: ctime(new Date(startedMs)),
    ...(Object.keys(globalOptions).length > 0 ? { 'global options': globalOptions } : {}),
    jobs,
    disk_util: disk,
    ...extra,
  };
}

/** "Tue Dec  1 08:42:45 2026", as C's ctime() and fio write it. */
function ctime(d: Date): string {
  const days = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
  const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
  const two = (n: number) => String(n).padStart(2, '0');
  return `${days[d.getDay()]} ${months[d.getMonth()]} ${String(d.getDate()).padStart(2, ' ')} ` +
    `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())} ${d.getFullYear()}`;
}
