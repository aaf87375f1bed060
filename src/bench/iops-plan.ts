// A `bench iops` plan and what its two runners (iops-run.ts, vs-fio.ts) share: the jobs of
// each sweep point and engine, the title line, the JSON output, the note on a stopped layout.
import type { BenchJob, BenchResult } from '../native.js';
import { printJson, writeJsonFile } from '../cli-util.js';
import { checkJob } from './storage-job.js';
import { sweepPoints, type SweepAxis } from './sweep.js';

/** A bench iops job: the native job, fio's `name` for it, and the fio options it was given that
 * change nothing iolab measures (thread, group_reporting), shown in its job options. */
export interface IopsJob extends BenchJob {
  name?: string;
  /** fio's randrepeat (default 1); randrepeat=0 runs with a randseed drawn for the run. */
  randrepeat?: boolean;
  accepted?: Record<string, string>;
}

export interface IopsRun {
  base: IopsJob;
  engines: string[];
  sweep: SweepAxis[];
  json: boolean;
  output?: string;
  vsFio: boolean;
  repeat: number;
}

/** 268435456 -> "256MiB", 8192 -> "8KiB": the title's size. */
function sizeText(n: number): string {
  if (n >= 2 ** 20 && n % 2 ** 20 === 0) return `${n / 2 ** 20}MiB`;
  return n % 1024 === 0 ? `${n / 1024}KiB` : `${n}B`;
}

export function describeJob(job: IopsJob, sweep: SweepAxis[] = []): string {
  const time = job.runtimeMs ? ` runtime=${job.runtimeMs / 1000}s${job.timeBased ? ' time_based' : ''}` : '';
  const mix = job.rw === 'randrw' || job.rw === 'readwrite' ? ` rwmixread=${job.rwmixread}` : '';
  const swept = sweep.map((a) => ` sweep ${a.key}=${a.values.join(',')}`).join('');
  const name = job.name !== undefined ? `${job.name}: ` : '';
  return `${name}${job.rw}${mix} bs=${job.bs} iodepth=${job.iodepth} numjobs=${job.numjobs} ` +
    `size=${sizeText(job.size)} direct=${job.direct ? 1 : 0}${time}${job.verify ? ' verify' : ''}${swept}`;
}

/** The jobs of a plan: each sweep point (or the one plain point) with each engine. */
export interface PlannedJob {
  job: IopsJob;
  point?: Record<string, string>;
}

export function planJobs(plan: IopsRun): PlannedJob[] {
  const points = sweepPoints(plan.sweep);
  return points.flatMap((p) => plan.engines.map((engine) => ({
    job: { ...plan.base, ...p.set, engine },
    point: plan.sweep.length ? p.options : undefined,
  })));
}

/** Says on stderr what an interrupted layout left behind. */
export function reportInterruptedLayout(job: BenchJob, r: BenchResult): void {
  if (r.read.ios + r.write.ios > 0 || r.laidOutBytes === 0) return;
  process.stderr.write(`iolab: interrupted while laying out '${job.filename}': ` +
    (r.layoutRemoved ? 'what this run wrote is removed\n' : 'the file keeps what was laid out so far\n'));
}

export function outputJson(plan: { json?: boolean; output?: string }, doc: unknown): void {
  if (plan.output) writeJsonFile(plan.output, doc);
  if (plan.json) printJson(doc);
}

/** Every job of the plan, checked before any I/O. */
export function checkedJobs(plan: IopsRun): PlannedJob[] {
  const jobs = planJobs(plan);
  for (const { job } of jobs) checkJob(job);
  return jobs;
}

/** "io_uring iodepth=4": an engine, and the sweep point when there is one; a named job's name
 * first ("test io_uring"), as fio's jobname. */
export function jobLabel(engine: string, point?: Record<string, string>, name?: string): string {
  const label = point ? `${engine} ${Object.entries(point).map(([k, v]) => `${k}=${v}`).join(' ')}` : engine;
  return name !== undefined ? `${name} ${label}` : label;
}
