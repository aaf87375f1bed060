// `bench iops --vs-fio`: each run of the job list (an engine of a list, a sweep point) in iolab
// and in fio, alternating who goes first, --repeat rounds; medians of IOPS and of CPU time per
// I/O, and their ratios iolab/fio: a row per group of the job list with its reads and writes
// apart (vs-fio-rows.ts), one row for a run of one group in one direction; the JSON has all jobs
// together too. fio is given the user's own job file or command line (fio-runner.ts), never
// iolab's reading of it.
import { native, type BenchResult } from '../native.js';
import { commandLine, UserError } from '../cli-util.js';
import { interruptedBy, interruption, markInterrupted } from '../interrupt.js';
import { closeSync, fstatSync, fsyncSync, openSync } from 'node:fs';
import { formatCount, formatNs, median, ratio, table } from '../format.js';
import { machineInfo } from './machine.js';
import { engineInfo } from './engines.js';
import { addJsonPlusBins, cpuPerIoUs, diskSample, diskUtil, fioDocument, fioJob } from './fio-json.js';
import { fioArgs, fioVersion, runFio, type FioFigures } from './fio-runner.js';
import { formatCpuPerIo, resultIops } from './storage-table.js';
import { describeJob, jobLabel, outputJson, shownFiles, type IopsRun, type Variant } from './iops-plan.js';
import { runStep, type StepEntry } from './iops-run.js';
import { checkLayoutSpace } from './storage-job.js';
import type { FioCommandLine } from './fio-cli.js';
import { fioGroups, groupLabel, groupRows, iolabGroups } from './vs-fio-rows.js';

/** One round of iolab's side: every step of the run, and the figures of all its jobs together. */
interface IolabRound {
  entries: StepEntry[];
  iops: number;
  cpuPerIoUs: number;
  clatP99: number;
}

interface Pair {
  variant: Variant;
  label: string;
  iolab: IolabRound[];
  fio: FioFigures[];
  unavailable?: string;
  partial?: boolean;
}

function iolabRound(entries: StepEntry[]): IolabRound {
  const results = entries.map((e) => e.result).filter((r): r is BenchResult => r !== undefined && !r.unavailable);
  const ios = results.reduce((s, r) => s + r.read.ios + r.write.ios, 0);
  const cpuUs = results.reduce((s, r) => s + (cpuPerIoUs(r) || 0) * (r.read.ios + r.write.ios), 0);
  const first = results[0];
  return {
    entries,
    iops: results.reduce((s, r) => s + resultIops(r), 0),
    cpuPerIoUs: ios > 0 ? cpuUs / ios : NaN,
    clatP99: first ? (first.read.ios ? first.read : first.write).clat.percentiles[12] : NaN,
  };
}

function summarize(p: Pair) {
  const engine = p.variant.engine ?? p.variant.steps[0].jobs[0].job.engine;
  if (p.unavailable) return { engine, point: p.variant.point, unavailable: p.unavailable };
  const iolabIops = median(p.iolab.map((r) => r.iops));
  const fioIops = median(p.fio.map((f) => f.iops));
  const iolabCpu = median(p.iolab.map((r) => r.cpuPerIoUs));
  const fioCpu = median(p.fio.map((f) => f.cpuPerIoUs));
  return {
    engine,
    point: p.variant.point,
    rounds: p.iolab.map((r, i) => ({ iolab_iops: r.iops, fio_iops: p.fio[i]?.iops, iolab_cpu_us_per_io: r.cpuPerIoUs,
      fio_cpu_us_per_io: p.fio[i]?.cpuPerIoUs })),
    iolab_iops: iolabIops,
    fio_iops: fioIops,
    ratio: fioIops > 0 ? iolabIops / fioIops : NaN,
    iolab_cpu_us_per_io: iolabCpu,
    fio_cpu_us_per_io: fioCpu,
    cpu_ratio: fioCpu > 0 ? iolabCpu / fioCpu : NaN,
    iolab_clat_p99_ns: median(p.iolab.map((r) => r.clatP99)),
    fio_clat_p99_ns: median(p.fio.map((f) => f.clatP99)),
    // fio's main thread (reading the job, laying out, reporting) left out of its CPU per I/O
    fio_startup_cpu_sec: median(p.fio.map((f) => f.mainThreadCpuSec)),
    groups: groupRows(p.iolab.map((r) => iolabGroups(r.entries)), p.fio.map(fioGroups), median),
    // what fio was told, as its JSON lists it: the user's own options
    fio_global_options: p.fio[0]?.doc['global options'],
    fio_job_options: p.fio[0]?.job['job options'],
    fio_jobs: p.fio[0]?.doc.jobs.length,
    ...(p.partial ? { partial: true } : {}),
  };
}

/** What fio needs to be told that the user did not say, and cannot be told at all. */
function checkVsFio(plan: IopsRun, jobFiles: string[], user: FioCommandLine): void {
  const jobFile = jobFiles.length > 0 ? jobFiles.join(', ') : undefined;
  const jobs = plan.variants.flatMap((v) => v.steps.flatMap((s) => s.jobs.map((j) => j.job)));
  if (jobs.some((j) => j.verify)) throw new UserError('--vs-fio runs fio on the same file, which overwrites the verify pattern: drop --verify');
  const testOnly = jobs.find((j) => engineInfo(j.engine)?.testOnly);
  if (testOnly) throw new UserError(`--vs-fio: fio has no engine ${testOnly.engine} (a test-only engine)`);
  if (jobFile !== undefined && plan.sweep.length > 0) {
    throw new UserError('--vs-fio --sweep needs the job on the command line: fio gives a job file\'s own options precedence over the command line\'s');
  }
  const listOnCommandLine = [user.global, ...user.jobs].some((s) => s.options.some((o) => o.name === 'ioengine' && /,|^\s*all\s*$/.test(o.value ?? '')));
  if (jobFile !== undefined && plan.variants.some((v) => v.engine !== undefined) && !listOnCommandLine) {
    throw new UserError(`--vs-fio: fio reads one ioengine per job, and '${jobFile}' gives a list`);
  }
}

/** The steps of a variant, one after the other, until a signal. */
async function runSteps(variant: Variant, signal: AbortSignal, show: boolean, newlineMs?: number): Promise<StepEntry[]> {
  const entries: StepEntry[] = [];
  for (const step of variant.steps) {
    if (signal.aborted) break;
    entries.push(...await runStep(step, show, newlineMs));
  }
  return entries;
}

/** Writes each file's dirty pages to disk (a block device or a file we may not open: skipped). */
function syncFiles(files: string[]): void {
  for (const file of new Set(files)) {
    let fd: number | undefined;
    try {
      fd = openSync(file, 'r');
      if (fstatSync(fd).isFile()) fsyncSync(fd);
    } catch {
      // not there or not ours to open: nothing of this run's to sync
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  }
}

/** "median of 3 rounds"; with an even count the median is the mean of the middle two, and
 * says so; a run cut short says how many rounds it finished. */
export function roundsText(done: number, asked: number): string {
  const of = done === 0 ? 'no round finished' : done === 1 ? 'one round' : done === 2 ? 'mean of 2 rounds' : `median of ${done} rounds${done % 2 === 0 ? ' (the mean of the middle two)' : ''}`;
  return done < asked ? `${of}, of ${asked} asked: cut short` : of;
}

export async function runVsFio(plan: IopsRun, user: { jobFiles: string[]; commandLine: FioCommandLine }): Promise<void> {
  const version = await fioVersion();
  if (!version) throw new UserError('--vs-fio needs fio on PATH (apt-get install fio)');
  checkVsFio(plan, user.jobFiles, user.commandLine);
  checkLayoutSpace(plan.variants.flatMap((v) => v.steps.flatMap((s) => s.jobs.map((j) => j.job))));
  const signal = interruption();
  const first = plan.variants[0].steps[0].jobs[0].job;
  const machine = machineInfo(first.filename);
  const started = Date.now();
  const disk0 = diskSample(machine.fileSystem?.device);
  const plain = first.name === undefined;
  const jobs = plan.variants[0].steps.flatMap((s) => s.jobs.map((j) => j.job));
  const writes = jobs.some((j) => j.rw !== 'read' && j.rw !== 'randread');
  const pairs: Pair[] = plan.variants.map((variant) => ({
    variant, iolab: [], fio: [], label: jobLabel(variant.engine ?? variant.steps[0].jobs[0].job.engine, variant.point),
  }));
  rounds: for (let round = 0; round < plan.repeat; round++) {
    for (const p of pairs) {
      if (p.unavailable) continue;
      const ours = async () => {
        let entries = await runSteps(p.variant, signal, !plan.json, plan.etaNewlineMs);
        // a file this run just laid out is still dirty in the page cache, where fio's and
        // iolab's cache drop cannot reach it: a read would be of memory, not the file. So the
        // layout is written to disk and the round run again, on the file as fio will find it.
        if (entries.some((e) => (e.result?.laidOutBytes ?? 0) > 0) && !signal.aborted && !entries.some((e) => e.error)) {
          syncFiles(jobs.flatMap((j) => j.filenames ?? [j.filename]));
          entries = await runSteps(p.variant, signal, !plan.json, plan.etaNewlineMs);
        }
        const failed = entries.find((e) => e.error);
        if (failed?.error) throw new Error(failed.error);
        const unavailable = entries.find((e) => e.result?.unavailable)?.result?.unavailable;
        if (unavailable) p.unavailable = unavailable;
        else if (entries.some((e) => e.result?.interrupted)) {
          if (entries.some((e) => (e.result?.read.ios ?? 0) + (e.result?.write.ios ?? 0) > 0)) p.iolab.push(iolabRound(entries));
          p.partial = true;
        } else p.iolab.push(iolabRound(entries));
      };
      const theirs = async () => {
        if (p.unavailable || signal.aborted) return;
        // on iolab's plain command line fio gets the size iolab's run addressed (a whole foreign file or device)
        const size = p.iolab.flatMap((r) => r.entries).find((e) => e.result?.size)?.result?.size ?? first.size;
        const args = fioArgs(user.commandLine, user.jobFiles, { engine: p.variant.engine, point: p.variant.point,
          sections: plan.sections, readonly: plan.readonly,
          plain: plain ? { size } : undefined });
        let f: FioFigures | undefined;
        try {
          f = await runFio(args, signal);
        } catch (err) {
          if (!signal.aborted) throw err;  // stopped by Ctrl-C: fio's run is partial
        }
        // fio wrote into iolab's files on its behalf
        if (writes) for (const j of jobs) for (const f of j.filenames ?? [j.filename]) native.benchMarkWritten(f);
        if (signal.aborted || f === undefined) p.partial = true;
        else p.fio.push(f);
      };
      // the first run of a round lays the files out; later rounds alternate who goes first
      if (round % 2 === 0) {
        await ours();
        await theirs();
      } else {
        await theirs();
        if (!signal.aborted) await ours();
      }
      if (signal.aborted) break rounds;
    }
  }
  const summary = pairs.map(summarize);
  const interrupted = signal.aborted;
  const entries = pairs.flatMap((p) => {
    const mid = p.iolab.length ? [...p.iolab].sort((a, b) => a.iops - b.iops)[p.iolab.length >> 1] : undefined;
    if (p.unavailable || !mid) {
      return p.variant.steps.flatMap((s) => s.jobs.filter((j, i) => s.jobs.findIndex((k) => k.entry === j.entry) === i)
        .map((j) => fioJob({ job: j.job, point: j.point, result: p.unavailable ? { unavailable: p.unavailable } as BenchResult : undefined })));
    }
    const jobs = mid.entries.map(fioJob);
    if (plan.jsonPlus) addJsonPlusBins(jobs, mid.entries);
    return jobs;
  });
  const doc = fioDocument(started, entries, diskUtil(disk0, diskSample(machine.fileSystem?.device)), {
    machine, command: commandLine(), vs_fio: { fio: version, repeat: plan.repeat, engines: summary },
    ...(interrupted ? { interrupted: true } : {}),
  }, plan.globalOptions);
  outputJson(plan, doc);
  if (!plan.json) {
    const titles = plan.phases.flat().map((j) => `${describeJob(j, plan.sweep)} file=${shownFiles(j)}`).join('; ');
    // the rounds both sides finished for every engine: the figures are over those
    const done = Math.min(...pairs.filter((p) => !p.unavailable).map((p) => Math.min(p.iolab.length, p.fio.length)), plan.repeat);
    process.stdout.write(`iolab bench iops --vs-fio (${version}, ${roundsText(Number.isFinite(done) ? done : 0, plan.repeat)}): ${titles}\n`);
    const rows = summary.flatMap((s, i) => {
      const label = `${pairs[i].label}${pairs[i].partial ? ' (partial)' : ''}`;
      if ('unavailable' in s && s.unavailable) return [[label, `unavailable: ${s.unavailable}`]];
      const v = s as Exclude<typeof s, { unavailable: string }>;
      // a row per group and direction, as fio's groups; a run of one of each is its engine's row
      const apart = summary.some((x) => 'groups' in x && (x.groups?.length ?? 0) > 1);
      const each = apart ? v.groups.map((g) => ({ ...g, label: `${label} ${groupLabel(g)}` })) : [{ ...v, label }];
      return each.map((g) => [g.label, formatCount(g.iolab_iops), formatCount(g.fio_iops), ratio(g.iolab_iops, g.fio_iops),
        formatCpuPerIo(g.iolab_cpu_us_per_io), formatCpuPerIo(g.fio_cpu_us_per_io), ratio(g.iolab_cpu_us_per_io, g.fio_cpu_us_per_io),
        formatNs(g.iolab_clat_p99_ns), formatNs(g.fio_clat_p99_ns)]);
    });
    process.stdout.write(table(['engine', 'iolab IOPS', 'fio IOPS', 'IOPS iolab/fio', 'iolab CPU/IO', 'fio CPU/IO',
      'CPU/IO iolab/fio', 'iolab clat p99', 'fio clat p99'], rows));
    const startup = median(summary.map((s) => ('fio_startup_cpu_sec' in s ? s.fio_startup_cpu_sec ?? NaN : NaN)).filter(Number.isFinite));
    if (Number.isFinite(startup)) {
      process.stdout.write(`note: CPU/IO is each side's process CPU over its jobs' I/O; fio's main thread (reading the job, laying ` +
        `files out, its report: ${formatNs(startup * 1e9)} of CPU a run) is left out, as iolab's start-up is\n`);
    }
  }
  if (interrupted) {
    if (!plan.json) process.stdout.write(`interrupted (${interruptedBy() ?? 'a signal'}): the rows hold the rounds that finished; a row marked (partial) lost a run cut short\n`);
    markInterrupted();
  }
}
