// Runs the same job in fio (fio --output-format=json) for --vs-fio, and reads its figures. fio
// keeps its defaults for latency recording (slat, clat and lat per I/O), as iolab records them.
import { execFile } from 'node:child_process';
import type { IopsJob } from './iops-plan.js';

export interface FioFigures {
  iops: number;
  /** CPU microseconds per I/O: the fio process's CPU (all its threads), per I/O. */
  cpuPerIoUs: number;
  bwBytes: number;
  clatP50: number;
  clatP99: number;
  clatP999: number;
  /** fio's job entry as it printed it. */
  job: Record<string, unknown>;
}

/** Runs file with args to its end: exit code (null when killed or not started) and its output. */
function run(file: string, args: string[]): Promise<{ exitCode: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : null;
      resolve({ exitCode: code, stdout, stderr });
    });
  });
}

/** Is fio on PATH? Resolves to its version line, or undefined. */
export async function fioVersion(): Promise<string | undefined> {
  try {
    const r = await run('fio', ['--version']);
    return r.exitCode === 0 ? r.stdout.trim() : undefined;
  } catch {
    return undefined;
  }
}

function fioTime(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

/** The options beyond rw/bs/depth/size that change what a job measures, as fio names them, each
 * given explicitly: fio gets them on its command line and both JSONs' job options show them, so
 * the two sides cannot run different jobs by default again. */
export function measuredFioOptions(job: IopsJob): Record<string, string> {
  const o: Record<string, string> = {
    norandommap: job.norandommap ? '1' : '0',
    randrepeat: job.randrepeat === false ? '0' : '1',
    refill_buffers: job.refillBuffers ? '1' : '0',
  };
  if (job.randrepeat !== false && job.randseed !== undefined) o.randseed = String(job.randseed);
  return o;
}

/** fio's command line for one of our jobs (group_reporting: numjobs add up, as ours do). */
export function fioArgs(job: IopsJob): string[] {
  const args = [
    `--name=${job.name ?? 'iolab'}`, `--filename=${job.filename}`, `--ioengine=${job.engine}`, `--rw=${job.rw}`,
    `--bs=${job.bs}`, `--iodepth=${job.iodepth}`, `--numjobs=${job.numjobs ?? 1}`, `--size=${job.size}`,
    `--direct=${job.direct ? 1 : 0}`, `--invalidate=${job.invalidate ? 1 : 0}`, '--group_reporting',
    '--output-format=json', '--thread',
  ];
  const hint = job.fadviseHint ?? 1;
  args.push(`--fadvise_hint=${hint === 2 ? 'sequential' : hint === 3 ? 'random' : hint}`);
  if (job.iodepthBatch && job.iodepthBatch > 1) args.push(`--iodepth_batch_submit=${job.iodepthBatch}`);
  if (job.iodepthBatchCompleteMin !== undefined && job.iodepthBatchCompleteMin !== 1) {
    args.push(`--iodepth_batch_complete_min=${job.iodepthBatchCompleteMin}`);
  }
  if (job.iodepthBatchCompleteMax) args.push(`--iodepth_batch_complete_max=${job.iodepthBatchCompleteMax}`);
  if (job.runtimeMs) args.push(`--runtime=${fioTime(job.runtimeMs)}`);
  if (job.timeBased) args.push('--time_based');
  if (job.rampMs) args.push(`--ramp_time=${fioTime(job.rampMs)}`);
  if (job.numberIos) args.push(`--number_ios=${job.numberIos}`);
  if (job.rw === 'randrw' || job.rw === 'readwrite') args.push(`--rwmixread=${job.rwmixread ?? 50}`);
  for (const [k, v] of Object.entries(measuredFioOptions(job))) args.push(`--${k}=${v}`);
  // the engines' options carry fio's names; fio takes an engine's options after --ioengine
  for (const [name, value] of Object.entries(job.engineOptions ?? {})) {
    const n = typeof value === 'boolean' ? Number(value) : value;
    if (n !== 0) args.push(`--${name}${n === 1 ? '' : `=${n}`}`);
  }
  return args;
}

function pct(clat: Record<string, unknown> | undefined, key: string): number {
  const p = clat?.percentile as Record<string, number> | undefined;
  return p?.[key] ?? NaN;
}

/** Runs fio for the job and returns its combined read+write figures. */
/** The shell's `times` after fio ran: "0m0.001s 0m0.002s" (the shell), then fio's user and system
 * CPU, all of its threads (AIO helpers and io-wq workers too), in seconds. */
function childCpuSeconds(stderr: string): number | undefined {
  const last = stderr.trim().split('\n').pop() ?? '';
  const m = /^(\d+)m([\d.]+)s (\d+)m([\d.]+)s$/.exec(last.trim());
  return m ? Number(m[1]) * 60 + Number(m[2]) + Number(m[3]) * 60 + Number(m[4]) : undefined;
}

export async function runFio(job: IopsJob): Promise<FioFigures> {
  // fio runs as a child of a shell that prints its children's CPU: fio's own usr_cpu/sys_cpu count
  // only its job thread (RUSAGE_THREAD), while iolab counts its whole process over the job
  const r = await run('bash', ['-c', 'fio "$@"; code=$?; times >&2; exit $code', 'fio', ...fioArgs(job)]);
  const out = String(r.stdout);
  const start = out.indexOf('{');
  if (r.exitCode !== 0 || start < 0) {
    const why = String(r.stderr).trim().split('\n').slice(0, -2).pop() || `exit code ${r.exitCode}`;
    throw new Error(`fio failed for ${job.engine}: ${why}`);
  }
  const parsed = JSON.parse(out.slice(start)) as { jobs: Record<string, any>[] };
  const j = parsed.jobs[0];
  const dirs = [j.read, j.write].filter((d) => d && d.total_ios > 0);
  const main = dirs[0] ?? j.read;
  const ios = dirs.reduce((s, d) => s + d.total_ios, 0);
  const cpuSec = childCpuSeconds(String(r.stderr)) ?? ((j.usr_cpu + j.sys_cpu) / 100) * (j.job_runtime / 1000);
  return {
    iops: dirs.reduce((s, d) => s + d.iops, 0),
    cpuPerIoUs: ios > 0 ? (cpuSec * 1e6) / ios : NaN,
    bwBytes: dirs.reduce((s, d) => s + d.bw_bytes, 0),
    clatP50: pct(main.clat_ns, '50.000000'),
    clatP99: pct(main.clat_ns, '99.000000'),
    clatP999: pct(main.clat_ns, '99.900000'),
    job: j,
  };
}
