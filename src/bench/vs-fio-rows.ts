// --vs-fio's rows as fio's groups are: each group of the job list (fio's groupid: the jobs
// between two stonewalls, or a new_group) with its reads and its writes apart, for iolab's round
// and for fio's (its JSON's jobs by groupid). A group's CPU is its jobs': iolab's from each
// result's window, fio's process CPU over its I/O shared among its groups by the job threads'
// own CPU that fio's JSON reports (usr_cpu, sys_cpu over job_runtime).
import type { BenchResult } from '../native.js';
import { cpuPerIoUs } from './fio-json.js';
import type { FioFigures } from './fio-runner.js';
import type { StepEntry } from './iops-run.js';

export type Direction = 'read' | 'write';

/** One group's one direction in one round. */
export interface GroupFigures {
  /** The group's number in its run of the job list, from 0 (fio's groupid). */
  group: number;
  direction: Direction;
  /** The names of the group's jobs. */
  jobs: string[];
  iops: number;
  /** The group's CPU microseconds and I/Os, both directions together: its CPU per I/O. */
  groupCpuUs: number;
  groupIos: number;
  /** clat p99 (ns) of the group's first job that moved this direction. */
  clatP99: number;
}

const DIRECTIONS: Direction[] = ['read', 'write'];
const key = (g: { group: number; direction: Direction }) => `${g.group} ${g.direction}`;

/** iolab's round by group and direction. */
export function iolabGroups(entries: StepEntry[]): GroupFigures[] {
  const done = entries.filter((e): e is StepEntry & { result: BenchResult } => e.result !== undefined && !e.result.unavailable);
  const first = Math.min(...done.map((e) => e.job.groupid ?? 0));
  const out: GroupFigures[] = [];
  for (const group of [...new Set(done.map((e) => (e.job.groupid ?? 0) - first))].sort((a, b) => a - b)) {
    const members = done.filter((e) => (e.job.groupid ?? 0) - first === group);
    const groupIos = members.reduce((s, e) => s + e.result.read.ios + e.result.write.ios, 0);
    const groupCpuUs = members.reduce((s, e) => s + (cpuPerIoUs(e.result) || 0) * (e.result.read.ios + e.result.write.ios), 0);
    const jobs = [...new Set(members.map((e) => e.job.name ?? e.job.engine))];
    for (const direction of DIRECTIONS) {
      const moved = members.filter((e) => e.result[direction].ios > 0);
      if (moved.length === 0) continue;
      out.push({
        group, direction, jobs, groupCpuUs, groupIos,
        iops: moved.reduce((s, e) => s + (e.result.runtimeNs > 0 ? e.result[direction].ios / (e.result.runtimeNs / 1e9) : 0), 0),
        clatP99: moved[0].result[direction].clat.percentiles[12],
      });
    }
  }
  return out;
}

/** fio's run by group and direction. */
export function fioGroups(f: FioFigures): GroupFigures[] {
  const jobs = f.doc.jobs;
  const ioCpuUs = (f.cpuSec - f.mainThreadCpuSec) * 1e6;
  // each job thread's own CPU: its usr_cpu and sys_cpu are percents of its job_runtime
  const threadCpu = (j: Record<string, any>) => ((Number(j.usr_cpu) || 0) + (Number(j.sys_cpu) || 0)) * (Number(j.job_runtime) || 0);
  const ios = (j: Record<string, any>) => (j.read?.total_ios ?? 0) + (j.write?.total_ios ?? 0);
  const allThreads = jobs.reduce((s, j) => s + threadCpu(j), 0);
  const allIos = jobs.reduce((s, j) => s + ios(j), 0);
  const out: GroupFigures[] = [];
  for (const group of [...new Set(jobs.map((j) => Number(j.groupid)))].sort((a, b) => a - b)) {
    const members = jobs.filter((j) => Number(j.groupid) === group);
    const groupIos = members.reduce((s, j) => s + ios(j), 0);
    const share = allThreads > 0 ? members.reduce((s, j) => s + threadCpu(j), 0) / allThreads : allIos > 0 ? groupIos / allIos : 0;
    for (const direction of DIRECTIONS) {
      const moved = members.filter((j) => (j[direction]?.total_ios ?? 0) > 0);
      if (moved.length === 0) continue;
      out.push({
        group, direction, jobs: [...new Set(members.map((j) => String(j.jobname)))], groupIos, groupCpuUs: ioCpuUs * share,
        iops: moved.reduce((s, j) => s + (Number(j[direction].iops) || 0), 0),
        clatP99: moved[0][direction].clat_ns?.percentile?.['99.000000'] ?? NaN,
      });
    }
  }
  return out;
}

/** A row of the summary: one group's one direction, medians over the rounds of each side. */
export interface GroupRow {
  group: number;
  direction: Direction;
  jobs: string[];
  iolab_iops: number;
  fio_iops: number;
  ratio: number;
  iolab_cpu_us_per_io: number;
  fio_cpu_us_per_io: number;
  cpu_ratio: number;
  iolab_clat_p99_ns: number;
  fio_clat_p99_ns: number;
}

/** The rows of every group and direction either side moved, in fio's order (group, then reads
 * before writes); median is the runner's (format.ts). */
export function groupRows(iolab: GroupFigures[][], fio: GroupFigures[][], median: (xs: number[]) => number): GroupRow[] {
  const seen = new Map<string, GroupFigures>();
  for (const g of [...fio.flat(), ...iolab.flat()]) if (!seen.has(key(g))) seen.set(key(g), g);
  const rows = [...seen.values()].sort((a, b) => a.group - b.group || DIRECTIONS.indexOf(a.direction) - DIRECTIONS.indexOf(b.direction));
  const of = (rounds: GroupFigures[][], k: string, pick: (g: GroupFigures) => number) =>
    median(rounds.map((r) => r.find((g) => key(g) === k)).filter((g): g is GroupFigures => g !== undefined).map(pick));
  const cpu = (g: GroupFigures) => (g.groupIos > 0 ? g.groupCpuUs / g.groupIos : NaN);
  return rows.map((g) => {
    const k = key(g);
    const [ours, theirs] = [of(iolab, k, (x) => x.iops), of(fio, k, (x) => x.iops)];
    const [ourCpu, theirCpu] = [of(iolab, k, cpu), of(fio, k, cpu)];
    return {
      group: g.group, direction: g.direction, jobs: g.jobs,
      iolab_iops: ours, fio_iops: theirs, ratio: theirs > 0 ? ours / theirs : NaN,
      iolab_cpu_us_per_io: ourCpu, fio_cpu_us_per_io: theirCpu, cpu_ratio: theirCpu > 0 ? ourCpu / theirCpu : NaN,
      iolab_clat_p99_ns: of(iolab, k, (x) => x.clatP99), fio_clat_p99_ns: of(fio, k, (x) => x.clatP99),
    };
  });
}

/** "group 1 (reader, writer) read": a row's label after its engine, when the run has more than
 * one group or direction. */
export function groupLabel(row: { group: number; direction: Direction; jobs: string[] }): string {
  const names = row.jobs.length > 3 ? `${row.jobs.slice(0, 3).join(', ')}...` : row.jobs.join(', ');
  return `group ${row.group} (${names}) ${row.direction}`;
}
