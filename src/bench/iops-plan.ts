// A `bench iops` plan: fio's jobs (fio-jobs.ts) as runs. The jobs between two stonewalls run at
// the same time, one step; the steps run one after another. iolab's own lists (--ioengine with
// several engines, --sweep points) are variants: the whole job list runs once per variant, each
// run in groups of its own. fio's group_reporting decides which jobs of a group one result sums.
// Shared by the two runners (iops-run.ts, vs-fio.ts): the titles, the JSON output, the note on a
// stopped layout.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { blockDeviceDir } from './machine.js';
import type { BenchJob, BenchResult } from '../native.js';
import { printJson, UserError, writeJsonFile } from '../cli-util.js';
import { checkJob } from './storage-job.js';
import { sweepPoints, type SweepAxis } from './sweep.js';
import { ENGINES, engineInfo } from './engines.js';
import { checkLogFiles, logFiles, logMask } from './fio-logs.js';
import type { FioJobList } from './fio-jobs.js';
import { jobEngines, jobFromOptions, type IopsJob, type IopsOptions } from './iops-job.js';
import { showText } from '../show-bytes.js';
import { joinFilenames } from './fio-values.js';

export type { IopsJob } from './iops-job.js';

/** A job of a step, and the result (entry) of the step it is reported in. */
export interface PlannedJob {
  job: IopsJob;
  /** A sweep point: its options, fio's names and string values. */
  point?: Record<string, string>;
  entry: number;
}

/** Jobs that run at the same time: one phase of the job list (between stonewalls), one variant. */
export interface Step {
  phase: number;
  jobs: PlannedJob[];
}

/** One run of the whole job list: with one engine of a list, at one sweep point. */
export interface Variant {
  engine?: string;
  point?: Record<string, string>;
  steps: Step[];
}

export interface IopsRun {
  variants: Variant[];
  /** Each phase's jobs as written (clone 0 of each), for the titles. */
  phases: IopsJob[][];
  sweep: SweepAxis[];
  json: boolean;
  /** fio's json+: the JSON's clat_ns have their histogram's bins. */
  jsonPlus: boolean;
  output?: string;
  vsFio: boolean;
  repeat: number;
  /** fio's "global options" of the run. */
  globalOptions: Record<string, string>;
  /** fio's --eta-newline: the progress bar's new line every this many ms. */
  etaNewlineMs?: number;
  /** fio's --section and --readonly, given to fio too by --vs-fio. */
  sections: string[];
  readonly: boolean;
}

export interface RunOptions {
  json?: boolean;
  outputFormat?: string;
  output?: string;
  vsFio?: boolean;
  repeat?: number;
  sweep?: SweepAxis[];
  /** fio's --parse-only and --showcmd: read the jobs, run nothing. */
  parseOnly?: boolean;
  showcmd?: boolean;
  /** fio's --section (only the job sections of these names), --readonly (no job that writes or
   * lays a file out), --eta-newline (ms). */
  section?: string[];
  readonly?: boolean;
  etaNewline?: number;
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
  return `${name}${job.rw}${mix} bs=${job.bs} iodepth=${job.iodepth} numjobs=${job.clones ?? job.numjobs ?? 1} ` +
    `size=${sizeText(job.size)} direct=${job.direct ? 1 : 0}${time}${job.verify ? ' verify' : ''}${swept}`;
}

/** Says on stderr what an interrupted layout left behind. */
/** A job's file, or its files as fio's filename= lists them (a:b, a colon in a name as \:), each
 * name as the CLI shows one (its own backslash doubled, so a \: is always the list's). */
export function shownFiles(job: { filename: string; filenames?: string[] }): string {
  return job.filenames && job.filenames.length > 1 ? joinFilenames(job.filenames.map(showText)) : showText(job.filename);
}

export function reportInterruptedLayout(job: BenchJob, r: BenchResult): void {
  if (r.read.ios + r.write.ios > 0 || r.laidOutBytes === 0) return;
  process.stderr.write(`iolab: interrupted while laying out '${shownFiles(job)}': ` +
    (r.layoutRemoved ? 'what this run wrote is removed\n' : 'the file keeps what was laid out so far\n'));
}

export function outputJson(plan: { json?: boolean; output?: string }, doc: unknown): void {
  if (plan.output) writeJsonFile(plan.output, doc);
  if (plan.json) printJson(doc);
}

/** "io_uring iodepth=4": an engine, and the sweep point when there is one; a named job's name
 * first ("test io_uring"), as the table's rows name it. */
export function jobLabel(engine: string, point?: Record<string, string>, name?: string): string {
  const label = point ? `${engine} ${Object.entries(point).map(([k, v]) => `${k}=${v}`).join(' ')}` : engine;
  return name !== undefined ? `${name} ${label}` : label;
}

/** The engines of a list every job shares (a variant each), or none when each job has one. */
function variantEngines(jobs: { job: IopsJob; engines: string[] }[]): (string | undefined)[] {
  const lists = jobs.filter((j) => j.engines.length > 1);
  if (lists.length === 0) return [undefined];
  const same = jobs.every((j) => j.engines.join() === lists[0].engines.join());
  if (!same) {
    throw new UserError(`ioengine ${lists[0].engines.join(',')} runs the jobs once per engine, so every job takes that list ` +
      `(${jobs.map((j) => `${j.job.name ?? 'the job'}: ${j.engines.join(',')}`).join('; ')})`);
  }
  return lists[0].engines;
}

/** fio's reporting rule: a job with group_reporting is summed into the result before it when
 * that one is of its group; any other job has a result of its own. */
function assignEntries(jobs: IopsJob[]): number[] {
  let entry = -1;
  return jobs.map((job, i) => {
    if (i === 0 || !job.groupReporting || jobs[i - 1].groupid !== job.groupid) entry++;
    return entry;
  });
}

/** The plan of a job list: every job checked before any I/O. */
export function planRun(list: FioJobList, run: RunOptions): IopsRun {
  const sweep = run.sweep ?? [];
  const jobs = list.jobs.map((fio) => {
    const opts = fio.options as IopsOptions;
    const filename = fio.filenames[0] ?? opts.filename;
    if (!filename) throw new UserError('--filename (or --name) is required (iolab creates and lays it out when missing)');
    // fio's filename=a:b: one job over every file of the list, each checked as a job's one file is
    const files = fio.filenames.length > 1 ? fio.filenames : [filename];
    for (const file of files) {
      if (opts.unlink && existsSync(file) && !opts.force) {
        throw new UserError(`${fio.name || 'the job'}: unlink=1 deletes '${file}' when the job is done, and it exists already: ` +
          'iolab deletes a file it did not create only with --force');
      }
      if (opts.allow_file_create === false && !existsSync(file)) {
        throw new UserError(`${fio.name || 'the job'}: '${file}' does not exist, and allow_file_create=0 ` +
          '(fio: "file creation disallowed by allow_file_create=0")');
      }
      // iolab's own command line has a default size; a fio job has none, as in fio
      if (list.fioJob && opts.size === undefined && opts.filesize === undefined && !existsSync(file)) {
        throw new UserError(`${fio.name}: no size for '${file}', which does not exist yet (fio refuses it too: ` +
          '"you need to specify size="); give size=');
      }
    }
    const engines = jobEngines(opts, list.fioJob, ENGINES);
    const job = jobFromOptions(opts, filename, engines, sweep);
    // fio's offset_increment: each copy of the job starts that much further than the one before
    if (opts.offset_increment) job.offset = (job.offset ?? 0) + fio.clone * opts.offset_increment;
    if (typeof opts.offset === 'object') {
      if (files.length > 1) {
        throw new UserError(`${fio.name || 'the job'}: offset=${opts.offset.percent}% over ${files.length} files: fio takes that share of ` +
          'each file\'s own size; iolab runs one offset per job, so give it in bytes');
      }
      job.offsetPercent = opts.offset.percent;
    }
    if (files.length > 1) {
      job.filenames = files;
      // fio's filesize is each file's; without a size the job's is all of them
      if (opts.size === undefined && opts.filesize !== undefined) job.size = opts.filesize * files.length;
    }
    const logs = logFiles(opts, fio.name, list.jobs.indexOf(fio) + 1);
    return { fio, engines, job: { ...job, name: list.fioJob ? fio.name : undefined, clone: fio.clone, groupid: fio.groupid,
      logFiles: logs, logMask: logMask(logs), logAvgMs: opts.log_avg_msec ?? 0 } };
  });
  // fio's dedupe_global: the jobs that share one working set, each filling its share of it
  const sharing = jobs.filter((j) => j.job.dedupeGlobal);
  sharing.forEach((j, i) => Object.assign(j.job, { dedupeIndex: i, dedupeJobs: sharing.length }));
  const phases: (typeof jobs)[] = [];
  for (const j of jobs) {
    if (phases.length === 0 || j.fio.stonewall) phases.push([]);
    phases[phases.length - 1].push(j);
  }
  // fio's exit_what=all also ends the jobs of later steps before they start, which fio then
  // reports as having run nothing; iolab runs every step it plans
  const endsAll = phases.slice(0, -1).flat().find((j) => (j.fio.options as IopsOptions).exitall && (j.fio.options as IopsOptions).exit_what === 'all');
  if (endsAll) {
    throw new UserError(`${endsAll.fio.name}: exit_what=all ends the jobs after its stonewall before they start; iolab runs every ` +
      'step of a job list (exit_what=stonewall ends every job running and lets the next step start)');
  }
  const groups = Math.max(...jobs.map((j) => j.fio.groupid)) + 1;
  const variants: Variant[] = [];
  const engines = variantEngines(jobs);
  for (const point of sweepPoints(sweep)) {
    for (const engine of engines) {
      const offset = variants.length * groups;
      const steps = phases.map((phase, p) => {
        const planned = phase.map(({ job, engines }) => ({
          ...job, ...point.set, engine: engine ?? engines[0], groupid: (job.groupid ?? 0) + offset,
        } as IopsJob));
        const entries = assignEntries(planned);
        return { phase: p, jobs: planned.map((job, i) => ({ job, point: sweep.length ? point.options : undefined, entry: entries[i] })) };
      });
      variants.push({ engine, point: sweep.length ? point.options : undefined, steps });
    }
  }
  if (run.readonly) for (const v of variants) for (const s of v.steps) for (const { job } of s.jobs) checkReadOnly(job);
  for (const v of variants) for (const s of v.steps) for (const { job } of s.jobs) checkJob(job);
  for (const { job } of jobs) checkLogFiles(job.logFiles ?? {}, job.force === true, variants.length);
  return {
    variants, sweep, phases: phases.map((p) => p.filter((j) => j.fio.clone === 0).map((j) => j.job)),
    json: run.json === true || run.outputFormat === 'json' || run.outputFormat === 'json+', jsonPlus: run.outputFormat === 'json+',
    output: run.output, vsFio: run.vsFio === true,
    repeat: run.repeat ?? 3, globalOptions: list.globalOptions, etaNewlineMs: run.etaNewline,
    sections: run.section ?? [], readonly: run.readonly === true,
  };
}

/** fio's offset=N%: that share of the file's size as it is when the job starts (after the steps
 * before it; a new file has none: 0, as fio computes it before laying the file out), rounded
 * down to a whole block. */
export function withPercentOffset(job: IopsJob): IopsJob {
  if (job.offsetPercent === undefined) return job;
  const offset = Math.floor((fileBytes(job.filename) * job.offsetPercent) / 100);
  return { ...job, offset: offset - (offset % job.bs) };
}

/** The bytes of a file or block device (its size in 512-byte sectors, from sysfs), 0 when missing. */
function fileBytes(path: string): number {
  const st = statSync(path, { throwIfNoEntry: false });
  if (st === undefined) return 0;
  if (!st.isBlockDevice()) return st.size;
  const dir = blockDeviceDir(path);
  try {
    return dir ? Number(readFileSync(`${dir}/size`, 'utf8').trim()) * 512 : 0;
  } catch {
    return 0;
  }
}

/** fio's --readonly: a job that writes is refused, and so is one whose file iolab would lay out
 * or extend (fio: "refusing extend of file due to read-only"); a read of what is there runs. */
function checkReadOnly(job: IopsJob): void {
  const who = job.name || 'the job';
  if (job.rw !== 'read' && job.rw !== 'randread') {
    throw new UserError(`--readonly: ${who} writes (rw=${job.rw}); fio refuses it too ("job <${who}> has write or trim bit set, ` +
      'but fio is in read-only mode")');
  }
  if (engineInfo(job.engine)?.diskless) return;
  for (const file of job.filenames ?? [job.filename]) {
    const st = statSync(file, { throwIfNoEntry: false });
    const need = (job.offset ?? 0) + (job.filenames && job.filenames.length > 1 ? Math.floor(job.size / job.filenames.length) : job.size);
    if (st === undefined || (st.isFile() && !job.sizeIsDefault && st.size < need)) {
      throw new UserError(`--readonly: ${who} would lay out '${showText(file)}' (${st === undefined ? 'it does not exist' :
        `${st.size} bytes, the job reads ${need}`}), which writes; fio refuses it too ("refusing extend of file due to read-only")`);
    }
  }
}
