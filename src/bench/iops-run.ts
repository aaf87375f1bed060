// Runs a `bench iops` plan: every sweep point x every engine, one native job each, then the
// table and/or fio's JSON. Ctrl-C stops the running job: the finished rows print, the partial
// one marked, and the exit status is 130.
import { commandLine, UserError } from '../cli-util.js';
import { interruption, markInterrupted } from '../interrupt.js';
import { formatCount, table } from '../format.js';
import { plural } from '../numbers.js';
import { machineInfo } from './machine.js';
import { runJob } from './storage-job.js';
import { diskSample, diskUtil, fioDocument, fioJob, type JobEntry } from './fio-json.js';
import { resultHeader, resultRows } from './storage-table.js';
import { jobLabel, outputJson, reportInterruptedLayout, describeJob, type IopsRun, type PlannedJob } from './iops-plan.js';

/** Below this many I/Os a row's IOPS is a figure from a handful of calls: the table says so. */
const MEANINGFUL_IOS = 100;

function isBenchInputError(err: unknown): boolean {
  const code = (err as { code?: string })?.code;
  return err instanceof UserError || code === 'ERR_IOLAB_BENCH' || err instanceof TypeError || err instanceof RangeError;
}

/** Runs each plan (one, or the jobs of a job file in order): one JSON document, a table per plan. */
export async function runIops(runs: { plan: IopsRun; jobs: PlannedJob[] }[]): Promise<void> {
  const signal = interruption();
  const plan = runs[0].plan;
  const machine = machineInfo(plan.base.filename);
  const started = Date.now();
  const disk0 = diskSample(machine.fileSystem?.device);
  const perPlan: JobEntry[][] = [];
  for (const run of runs) {
    const entries: JobEntry[] = [];
    perPlan.push(entries);
    for (const { job, point } of run.jobs) {
      if (signal.aborted) break;
      const label = jobLabel(job.engine, point, job.name);
      try {
        const result = await runJob(job, { show: !plan.json, label });
        entries.push({ job, result, point });
        if (result.interrupted) reportInterruptedLayout(job, result);
      } catch (err) {
        if (isBenchInputError(err)) throw err;  // refused before any I/O: one line, nothing else
        entries.push({ job, error: (err as Error).message, point });
      }
    }
  }
  const entries = perPlan.flat();
  const interrupted = signal.aborted;
  const doc = fioDocument(started, entries.map(fioJob), diskUtil(disk0, diskSample(machine.fileSystem?.device)),
    { machine, command: commandLine(), ...(interrupted ? { interrupted: true } : {}) });
  outputJson(plan, doc);
  if (!plan.json) runs.forEach((run, i) => printTable(run.plan, perPlan[i]));
  if (interrupted) {
    markInterrupted();
    return;
  }
  const failed = entries.find((r) => r.error);
  if (failed?.error) throw new Error(failed.error);
  // The table already says why each engine could not run; with none run, say so by the exit code.
  if (entries.every((r) => r.result?.unavailable)) process.exitCode = 1;
}

function printTable(plan: IopsRun, entries: JobEntry[]): void {
  const rows: string[][] = [];
  for (const { job, result, error, point } of entries) {
    const label = jobLabel(job.engine, point, job.name);
    if (error) rows.push([label, `error: ${error}`]);
    else if (result?.unavailable) rows.push([label, `unavailable: ${result.unavailable}`]);
    else if (result) rows.push(...resultRows(label, result, job.numjobs ?? 1));
  }
  // the size the jobs addressed: a file used whole (no --size) or a block device has its own
  const size = entries.find((r) => r.result?.size)?.result?.size ?? plan.base.size;
  process.stdout.write(`iolab bench iops: ${describeJob({ ...plan.base, size }, plan.sweep)} file=${plan.base.filename}\n`);
  process.stdout.write(table(resultHeader, rows));
  for (const { job, result, point } of entries) {
    const ios = result && !result.unavailable ? result.read.ios + result.write.ios : MEANINGFUL_IOS;
    if (ios < MEANINGFUL_IOS) {
      process.stdout.write(`note: ${jobLabel(job.engine, point, job.name)}: ${plural(ios, 'I/O')}, too few for a meaningful rate\n`);
    }
  }
  const verified = entries.reduce((s, r) => s + (r.result?.verifiedBlocks ?? 0), 0);
  if (plan.base.verify && !entries.some((r) => r.error || r.result?.interrupted)) {
    process.stdout.write(`verify: every block read matched its pattern` +
      (verified ? `; ${formatCount(verified)} written blocks read back and checked` : '') + '\n');
  }
  if (entries.some((r) => r.result?.interrupted)) process.stdout.write('interrupted: the row marked (partial) stopped early\n');
}
