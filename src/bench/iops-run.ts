// Runs a `bench iops` plan: every variant (engine of a list, sweep point), each step of it (the
// jobs between two stonewalls, at the same time), then the tables and/or fio's JSON. Ctrl-C
// stops the running step: the finished rows print, the partial ones marked, and the exit
// status is 130.
import { commandLine, UserError } from '../cli-util.js';
import { interruption, markInterrupted } from '../interrupt.js';
import { formatCount, table } from '../format.js';
import { plural } from '../numbers.js';
import type { BenchResult } from '../native.js';
import { machineInfo } from './machine.js';
import { checkLayoutSpace, runJobGroup } from './storage-job.js';
import { writeLogs } from './fio-logs.js';
import { rmSync } from 'node:fs';
import { addJsonPlusBins, diskSample, diskUtil, fioDocument, fioJob, type JobEntry } from './fio-json.js';
import { resultHeader, resultRows } from './storage-table.js';
import { describeJob, jobLabel, outputJson, reportInterruptedLayout, shownFiles, withPercentOffset, type IopsRun, type Step } from './iops-plan.js';

/** Below this many I/Os a row's IOPS is a figure from a handful of calls: the table says so. */
const MEANINGFUL_IOS = 100;

function isBenchInputError(err: unknown): boolean {
  const code = (err as { code?: string })?.code;
  return err instanceof UserError || code === 'ERR_IOLAB_BENCH' || err instanceof TypeError || err instanceof RangeError;
}

/** A result entry of a step: the first job of the entry stands for it in the JSON. */
export interface StepEntry extends JobEntry {
  phase: number;
  /** Jobs summed into it (fio's group_reporting); 1 for a job reported alone. */
  members: number;
}

/** The entries of one step: what each entry's jobs measured, or the error that ended them. */
export async function runStep(step: Step, show: boolean, newlineMs?: number): Promise<StepEntry[]> {
  const firsts = step.jobs.filter((j, i) => step.jobs.findIndex((k) => k.entry === j.entry) === i);
  const members = (entry: number) => step.jobs.filter((j) => j.entry === entry).length;
  const label = firsts.map((j) => entryLabel(j.job, j.point, members(j.entry))).join(' + ');
  try {
    const results = await runJobGroup(step.jobs.map((j) => ({ ...withPercentOffset(j.job), entry: j.entry })), { show, label, newlineMs });
    const entries = firsts.map((j) => {
      const result = results[j.entry] as BenchResult;
      if (result.interrupted) reportInterruptedLayout(j.job, result);
      writeLogs(result, step.jobs.filter((k) => k.entry === j.entry && k.job.logMask).map((k) => k.job.logFiles ?? {}));
      // as fio: a summed result has its first job's name and its last job's options
      const last = step.jobs.filter((k) => k.entry === j.entry).pop() ?? j;
      return { job: { ...last.job, name: j.job.name, clone: j.job.clone }, point: j.point, result, phase: step.phase, members: members(j.entry) };
    });
    // fio's unlink: the files of the step's jobs that ask for it, once every job of the step is done
    for (const file of new Set(step.jobs.filter((k) => k.job.unlink).flatMap((k) => k.job.filenames ?? [k.job.filename]))) rmSync(file, { force: true });
    return entries;
  } catch (err) {
    if (isBenchInputError(err)) throw err;  // refused before any I/O: one line, nothing else
    return firsts.map((j) => ({ job: j.job, point: j.point, error: (err as Error).message, phase: step.phase, members: members(j.entry) }));
  }
}

/** A row's name: the job's name and engine (and sweep point); a clone of a job reported alone
 * carries its number, as its file does (a.1). */
export function entryLabel(job: { engine: string; name?: string; clone?: number; clones?: number }, point: Record<string, string> | undefined,
  members: number): string {
  const clone = job.name !== undefined && (job.clones ?? 1) > 1 && members === 1 ? `.${job.clone ?? 0}` : '';
  return jobLabel(job.engine, point, job.name !== undefined ? `${job.name}${clone}` : undefined);
}

/** Runs the plan: one JSON document, a table per phase of the job list. */
export async function runIops(plan: IopsRun): Promise<void> {
  checkLayoutSpace(plan.variants.flatMap((v) => v.steps.flatMap((s) => s.jobs.map((j) => j.job))));
  const signal = interruption();
  const machine = machineInfo(plan.variants[0].steps[0].jobs[0].job.filename);
  const started = Date.now();
  const disk0 = diskSample(machine.fileSystem?.device);
  const entries: StepEntry[] = [];
  runs: for (const variant of plan.variants) {
    for (const step of variant.steps) {
      if (signal.aborted) break runs;
      entries.push(...await runStep(step, !plan.json, plan.etaNewlineMs));
    }
  }
  const interrupted = signal.aborted;
  const jobs = entries.map(fioJob);
  if (plan.jsonPlus) addJsonPlusBins(jobs, entries);
  const doc = fioDocument(started, jobs, diskUtil(disk0, diskSample(machine.fileSystem?.device)),
    { machine, command: commandLine(), ...(interrupted ? { interrupted: true } : {}) }, plan.globalOptions);
  outputJson(plan, doc);
  if (!plan.json) plan.phases.forEach((_, p) => printTable(plan, p, entries.filter((e) => e.phase === p)));
  if (interrupted) {
    markInterrupted();
    return;
  }
  const failed = entries.find((r) => r.error);
  if (failed?.error) throw new Error(failed.error);
  // The table already says why each engine could not run; with none run, say so by the exit code.
  if (entries.every((r) => r.result?.unavailable)) process.exitCode = 1;
}

function printTable(plan: IopsRun, phase: number, entries: StepEntry[]): void {
  const rows: string[][] = [];
  for (const { job, result, error, point, members } of entries) {
    const label = entryLabel(job, point, members);
    if (error) rows.push([label, `error: ${error}`]);
    else if (result?.unavailable) rows.push([label, `unavailable: ${result.unavailable}`]);
    else if (result) rows.push(...resultRows(label, result, members * (job.numjobs ?? 1)));
  }
  const jobs = plan.phases[phase];
  for (const job of jobs) {
    // the size the job addressed: a file used whole (no --size) or a block device has its own
    const size = entries.find((e) => e.job.filename === job.filename && e.result?.size)?.result?.size ?? job.size;
    process.stdout.write(`iolab bench iops: ${describeJob({ ...job, size }, plan.sweep)} file=${shownFiles(job)}\n`);
  }
  if (jobs.length > 1) process.stdout.write(`at the same time: ${jobs.map((j) => j.name).join(', ')}\n`);
  process.stdout.write(table(resultHeader, rows));
  for (const { job, result, point, members } of entries) {
    const ios = result && !result.unavailable ? result.read.ios + result.write.ios : MEANINGFUL_IOS;
    if (ios < MEANINGFUL_IOS) {
      process.stdout.write(`note: ${entryLabel(job, point, members)}: ${plural(ios, 'I/O')}, too few for a meaningful rate\n`);
    }
  }
  const verified = entries.reduce((s, r) => s + (r.result?.verifiedBlocks ?? 0), 0);
  if (jobs.some((j) => j.verify) && !entries.some((r) => r.error || r.result?.interrupted)) {
    process.stdout.write(`verify: every block read matched its pattern` +
      (verified ? `; ${formatCount(verified)} written blocks read back and checked` : '') + '\n');
  }
  if (entries.some((r) => r.result?.interrupted)) process.stdout.write('interrupted: the row marked (partial) stopped early\n');
}
