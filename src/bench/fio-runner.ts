// fio for --vs-fio: the user's own job, as the user wrote it (the job file, the command line's
// job options as typed), never iolab's reading of it, so a job iolab misreads cannot be misread
// for fio too. iolab adds only what its own run decided where the user said nothing: the engine
// of an engine list, a sweep point, and on iolab's plain command line a job name and the size.
// fio runs with no shell between (src/parent-death.ts: it dies with iolab), and its CPU time,
// every thread of it, comes from wait4; its main thread's (start-up: reading the job, laying the
// files out, starting the jobs; the report at the end) is read while it runs and left out of the
// CPU of its I/O, as iolab's start-up is left out of its own.
import { runDyingWithParent } from '../parent-death.js';
import { threadCpuNs } from '../procfs.js';
import type { FioCommandLine } from './fio-cli.js';
import type { FioOptionText, FioSectionText } from './fio-jobfile.js';
import { presets } from './iops-job.js';
import { engineInfo } from './engines.js';

export interface FioFigures {
  /** IOPS of all of fio's jobs together. */
  iops: number;
  /** CPU microseconds per I/O: the fio process's CPU (all its threads) but its main thread's, per I/O. */
  cpuPerIoUs: number;
  /** CPU seconds of the whole process (wait4), and of its main thread (start-up and report). */
  cpuSec: number;
  mainThreadCpuSec: number;
  bwBytes: number;
  clatP50: number;
  clatP99: number;
  clatP999: number;
  /** fio's first job entry as it printed it. */
  job: Record<string, unknown>;
  /** fio's whole JSON document. */
  doc: { jobs: Record<string, any>[]; 'global options'?: Record<string, string> };
}

/** Is fio on PATH? Resolves to its version line, or undefined. */
export async function fioVersion(): Promise<string | undefined> {
  try {
    const r = await runDyingWithParent(fioBinary(), ['--version']);
    return r.exitCode === 0 ? r.stdout.trim() : undefined;
  } catch {
    return undefined;
  }
}

/** What fio is given beside the user's own job: the options iolab's run set that the user did not. */
export interface FioRunChoices {
  /** The engine of this run, when it came from a list (or from iolab's default of every engine). */
  engine?: string;
  /** The sweep point of this run (fio's names and values). */
  point?: Record<string, string>;
  /** iolab's plain command line: fio needs a job name and a size. */
  plain?: { size: number };
  /** fio's own run flags the user gave (--section, --readonly): fio is given them too. */
  sections?: string[];
  readonly?: boolean;
}

const word = (o: FioOptionText) => (o.value === undefined ? `--${o.name}` : `--${o.name}=${o.value}`);
const isEngineList = (o: FioOptionText) => o.name === 'ioengine' && o.value !== undefined && (o.value.includes(',') || o.value.trim() === 'all');

/** A preset in fio's words (its engine list is the run's engine), first in its part of the
 * command line so that the user's own options override it, as they do in iolab. */
function presetWords(section: FioSectionText): string[] {
  const name = section.options.find((o) => o.name === 'preset')?.value;
  const p = name !== undefined ? presets[name] : undefined;
  if (!p) return [];
  const o: Record<string, unknown> = { rw: p.rw, bs: p.bs, iodepth: p.iodepth, rwmixread: p.rwmixread,
    direct: p.direct === undefined ? undefined : Number(p.direct) };
  return Object.entries(o).filter(([, v]) => v !== undefined).map(([k, v]) => `--${k}=${String(v)}`);
}

/** A part of the command line in fio's words: the preset spelled out, iolab's --force left out
 * (fio has no such option: it writes where it is told). */
function sectionWords(section: FioSectionText, engine: (o: FioOptionText) => string): string[] {
  const own = section.options.filter((o) => o.name !== 'preset' && o.name !== 'force').map(engine);
  const name = own[0]?.startsWith('--name=') ? [own.shift() as string] : [];
  return [...name, ...presetWords(section), ...own];
}

/**
 * fio's argv for the user's job: the command line's job options as typed (an engine list
 * replaced by this run's engine), the job file, and this run's sweep point after each job's
 * options. iolab's defaults that differ from fio's go first, where any option of the user's
 * overrides them: --thread (iolab's jobs are threads).
 */
export function fioArgs(commandLine: FioCommandLine, jobFiles: string | string[] | undefined, choices: FioRunChoices): string[] {
  const files = jobFiles === undefined ? [] : typeof jobFiles === 'string' ? [jobFiles] : jobFiles;
  // an engine list is this run's engine; an engine by another of iolab's spellings (posix_aio,
  // uring) is fio's name for it, which is all fio loads
  const engine = (o: FioOptionText) => (isEngineList(o) ? `--ioengine=${choices.engine}` :
    o.name === 'ioengine' && o.value !== undefined ? `--ioengine=${engineInfo(o.value.trim())?.name ?? o.value}` : word(o));
  const point = Object.entries(choices.point ?? {}).map(([k, v]) => `--${k}=${v}`);
  const typed = [commandLine.global, ...commandLine.jobs].some((s) => s.options.some((o) => o.name === 'ioengine'));
  const args = ['--output-format=json', '--thread', ...(choices.sections ?? []).map((s) => `--section=${s}`),
    ...(choices.readonly ? ['--readonly'] : [])];
  if (choices.engine !== undefined && !typed) args.push(`--ioengine=${choices.engine}`);
  args.push(...sectionWords(commandLine.global, engine));
  if (choices.plain) {
    if (!commandLine.global.options.some((o) => o.name === 'size')) args.push(`--size=${choices.plain.size}`);
    args.push(...point, '--name=iolab');
  } else if (files.length === 0) {
    for (const job of commandLine.jobs) args.push(...sectionWords(job, engine), ...point);
  } else {
    for (const job of commandLine.jobs) args.push(...sectionWords(job, engine));
    args.push(...files);
  }
  return args;
}

function pct(clat: Record<string, unknown> | undefined, key: string): number {
  const p = clat?.percentile as Record<string, number> | undefined;
  return p?.[key] ?? NaN;
}

/** How often fio's main thread's CPU is read while it runs: what it spends after the last reading
 * (the report: a few ms) counts as its I/O's. */
const MAIN_THREAD_SAMPLE_MS = 10;

/** The fio binary: IOLAB_FIO names another than the one on PATH (a newer fio built from source). */
export function fioBinary(): string {
  return process.env.IOLAB_FIO || 'fio';
}

/** Runs fio with args (fioArgs) and returns its figures, all of its jobs together. */
export async function runFio(args: string[], stop?: AbortSignal): Promise<FioFigures> {
  let mainNs = 0;
  const watch = (pid: number) => {
    const read = () => {
      const ns = threadCpuNs(pid);
      if (ns !== undefined) mainNs = ns;
    };
    read();
    const timer = setInterval(read, MAIN_THREAD_SAMPLE_MS);
    return () => clearInterval(timer);
  };
  const r = await runDyingWithParent(fioBinary(), args, stop, watch);
  const start = r.stdout.indexOf('{');
  if (r.exitCode !== 0 || start < 0) {
    // fio's whole refusal, one line (its last line alone often only says it gave up)
    const said = r.stderr.split('\n').map((l) => l.trim()).filter((l) => l !== '').join(' / ');
    const why = said || (r.signal ? `killed by ${r.signal}` : `exit code ${r.exitCode}`);
    throw new Error(`fio failed: ${why}`);
  }
  const doc = JSON.parse(r.stdout.slice(start)) as FioFigures['doc'];
  const dirs = doc.jobs.flatMap((j) => [j.read, j.write]).filter((d) => d && d.total_ios > 0);
  const main = dirs[0] ?? doc.jobs[0].read;
  const ios = dirs.reduce((s, d) => s + d.total_ios, 0);
  const mainThreadCpuSec = Math.min(mainNs / 1e9, r.cpuSec);
  return {
    iops: dirs.reduce((s, d) => s + d.iops, 0),
    cpuPerIoUs: ios > 0 ? ((r.cpuSec - mainThreadCpuSec) * 1e6) / ios : NaN,
    cpuSec: r.cpuSec,
    mainThreadCpuSec,
    bwBytes: dirs.reduce((s, d) => s + d.bw_bytes, 0),
    clatP50: pct(main.clat_ns, '50.000000'),
    clatP99: pct(main.clat_ns, '99.000000'),
    clatP999: pct(main.clat_ns, '99.900000'),
    job: doc.jobs[0],
    doc,
  };
}
