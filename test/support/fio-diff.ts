// The differential test's two runs and their comparison: one case (a job file of the corpus, or
// a command line) run by fio and by iolab, each in a folder of its own, read back the same way:
// the jobs (name, groupid, rw, bs, iodepth, I/Os, when each ran), fio's "global options", the
// files left in the folder, the exit status. fio 3.33's JSON has no job_start, so its jobs'
// times come from its own IOPS logs (--write_iops_log with --log_unix_epoch, every 100 ms);
// fio 3.36 and later's come from job_start and job_runtime, as iolab's.
import { execa } from 'execa';
import { mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { runCliText } from './cli.js';

/** The fio to compare with: IOLAB_FIO's (a fio built from source, such as 3.42), else PATH's. */
export const fioBinary = process.env.IOLAB_FIO || 'fio';

export interface DiffCase {
  name: string;
  /** A job file's path (the corpus), given after the command line's options. */
  jobFile?: string;
  /** Options before the job file (or the whole job, for a command-line case), as fio takes them. */
  args: string[];
  env?: Record<string, string>;
  /** Files that hold the same bytes after both runs (a corpus file's `; same bytes:` line). */
  sameBytes?: string[];
  /** iolab refuses this case by name, with a line matching this, where fio runs it. */
  refuses?: RegExp;
  /** The oldest fio the case is compared with (`; needs fio: 3.42`), for an older one's fault. */
  needsFio?: string;
  /** Comparisons that cannot be made for this case, by their names in the differences (its
   * definition says why). */
  skip?: string[];
}

export interface DiffJob {
  name: string;
  groupid: number;
  rw: string;
  bs: number;
  iodepth: number;
  ios: number;
  /** Bytes it moved, read and written. */
  bytes: number;
  /** The directions it moved: read, write. */
  directions: string[];
  /** fio's steadystate object: its criterion, window, whether it was attained, the intervals kept. */
  steady: string;
  /** Its I/Os' lengths are drawn (bsrange, bssplit): the count is the draw's, the bytes are not. */
  varlen: boolean;
  /** Its job options list time_based or verify (fio's JSON leaves out time_based, a bare word). */
  timeBased: boolean;
  verify: boolean;
  /** Its completion latencies were recorded (not under gtod_reduce). */
  latencies: boolean;
  gtodReduce: boolean;
  /** fio's latency_depth, latency_target (ns), latency_percentile, latency_window (us). */
  latency: string;
  /** fio's syncs (fsync=N, fdatasync=N): its sync lat_ns's N. */
  syncs: number;
  /** fio's aggregated keys, as what they mean (undefined: no bw samples to tell): how many jobs'
   * runtimes job_runtime sums, whether bw_mean is the whole of bw or a part, whether bw_agg is
   * the whole group's bandwidth or a share of it. */
  aggregates?: string;
  /** Its measured time, ms (the longer direction's). */
  runtime: number;
  /** When the job's measured I/O ran, ms since the epoch (undefined: too short to tell). */
  from?: number;
  to?: number;
}

export interface Outcome {
  exitCode: number;
  stderr: string;
  jobs: DiffJob[];
  globalOptions: Record<string, string>;
  /** "name size" of each file the run left in its folder. */
  files: string[];
}

/** A size as fio writes it: k, m, g (1024s, with or without b); KiB... (1000s, kb_base=1024). */
export function fioSize(text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const m = /^(\d+)\s*([kmgt]?)(i?)b?$/i.exec(text.trim());
  if (!m) return NaN;
  const power = ' kmgt'.indexOf(m[2].toLowerCase() || ' ');
  return Number(m[1]) * (m[3] ? 1000 : 1024) ** power;
}

const rwNames: Record<string, string> = { rw: 'readwrite', readwrite: 'readwrite' };

/** The block size a job ran: fio's bs (or bsrange) text, `4k,8k` by the job's direction (a
 * read job the first), `4k-4k` its one size. */
function blockSize(o: Record<string, string>, rw: string): number {
  const text = o.bsrange ?? o.bs;
  const pair = text?.split(',');
  if (pair && pair.length > 1) return fioSize(/read/.test(rw) ? pair[0] : pair[1] || pair[0], 4096);
  const range = text?.split('-');
  // fio 3.33 runs bs=1k-4k at 1k (its bs takes no range); a bsrange with equal ends is that size
  if (range && range.length === 2 && (o.bsrange === undefined || fioSize(range[0], 0) === fioSize(range[1], 0))) {
    return fioSize(range[0], 4096);
  }
  return fioSize(text, 4096);
}

/** What a job's job_runtime, bw_mean and bw_agg say, in words that hold across runs. */
function aggregatesOf(j: any): string | undefined {
  const d = [j.read, j.write].filter((x) => x?.bw_samples > 0 && x.bw > 0 && x.bw_mean > 0).sort((a, b) => b.bw - a.bw)[0];
  const runtime = Math.max(j.read?.runtime ?? 0, j.write?.runtime ?? 0);
  if (!d || runtime < 500) return undefined;
  // bw_mean against bw only for a sum of jobs (half of it was iolab's defect): one job's mean of
  // a 1 s run's two samples swings too far from its bw on a loaded machine to tell (the cases
  // that sum jobs run 2 s: four samples a job)
  const sums = Math.round(j.job_runtime / runtime);
  // between 0.55 and 0.8 of bw it tells neither (one stalled window of a loaded run puts fio's
  // own there): the keys are not compared then; a part of N jobs' sum is about 1/N, the whole 1
  const ratio = d.bw_mean / d.bw;
  if (sums > 1 && ratio > 0.55 && ratio < 0.8) return undefined;
  const mean = sums > 1 ? `, bw_mean is ${ratio >= 0.8 ? 'the whole' : 'a part'} of bw` : '';
  // bw_agg of a summed result is fio's mean of the samples over the group's bandwidth, which its
  // own runs put anywhere from ~60 to 100 beside a busy suite: compared only for single jobs.
  // There it is read against what the job's own bandwidth would give (its sample mean over its
  // bw, at most 100): the same mean on both sides, so a 1 s run's two uneven samples cancel
  // (read alone, one copy's mean came out at 80+ of the group's beside an ASan suite); what is
  // left is bw over the group's, about 1/N for a share
  const whole = Math.min(100, (100 * d.bw_mean) / d.bw);
  const agg = sums > 1 ? '' : `, bw_agg is ${d.bw_agg > 0.8 * whole ? 'the whole group' : 'a share'}`;
  return `job_runtime sums ${sums} runtimes${mean}${agg}`;
}

function jobsOf(doc: any): DiffJob[] {
  const global = (doc['global options'] ?? {}) as Record<string, string>;
  return (doc.jobs as any[]).map((j) => {
    const o = { ...global, ...(j['job options'] ?? {}) } as Record<string, string>;
    const rw = (o.rw ?? 'read').split(':')[0];
    return {
      name: j.jobname, groupid: j.groupid, rw: rwNames[rw] ?? rw, bs: blockSize(o, rw), iodepth: Number(o.iodepth ?? 1),
      latencies: (j.read?.clat_ns?.N ?? 0) + (j.write?.clat_ns?.N ?? 0) > 0, gtodReduce: o.gtod_reduce === '1',
      latency: `${j.latency_depth} ${j.latency_target} ${j.latency_percentile} ${j.latency_window}`,
      syncs: j.sync?.lat_ns?.N ?? 0,  // fio 3.33 counts an fdatasync in N, not in total_ios
      ios: (j.read?.total_ios ?? 0) + (j.write?.total_ios ?? 0), timeBased: 'time_based' in o, verify: 'verify' in o,
      bytes: (j.read?.io_bytes ?? 0) + (j.write?.io_bytes ?? 0),
      directions: ['read', 'write'].filter((d) => (j[d]?.total_ios ?? 0) > 0),
      steady: j.steadystate ? `${j.steadystate.ss} over ${j.steadystate.duration}s, attained ${j.steadystate.attained}, ` +
        `${j.steadystate.data.iops.length} intervals` : '-',
      varlen: 'bssplit' in o || (o.bsrange !== undefined && new Set(o.bsrange.split('-').map((x) => fioSize(x, 0))).size > 1),
      aggregates: aggregatesOf(j), runtime: Math.max(j.read?.runtime ?? 0, j.write?.runtime ?? 0),
    };
  });
}

/** A log whose lines carry each I/O's offset (log_offset=1), per direction: the bytes, the range
 * they cover and whether each byte of it once, and the runs of I/Os that each began where the
 * one before ended (one run: in order; a few: how a job over several files takes them in turn,
 * their lengths listed; many, as a random job's: not told): what a job's offsets are, across
 * runs whose lengths are drawn. */
function offsetsOf(lines: string[][]): string {
  const out: string[] = [];
  for (const dir of ['0', '1']) {
    const ios = lines.filter((l) => l[2] === dir).map((l) => ({ len: Number(l[3]), off: Number(l[4]) }));
    if (ios.length === 0) continue;
    const bytes = ios.reduce((s, io) => s + io.len, 0);
    const runs: number[] = [];
    ios.forEach((io, i) => {
      if (i > 0 && io.off === ios[i - 1].off + ios[i - 1].len) runs[runs.length - 1]++;
      else runs.push(1);
    });
    const inOrder = runs.length === 1 ? ', in order' : runs.length <= 24 ? `, in runs of ${runs.join(',')} I/Os` : '';
    const sorted = [...ios].sort((a, b) => a.off - b.off);
    const from = sorted[0].off;
    const to = Math.max(...sorted.map((io) => io.off + io.len));
    const once = sorted.every((io, i) => i === 0 || io.off === sorted[i - 1].off + sorted[i - 1].len);
    out.push(`${dir === '0' ? 'reads' : 'writes'} ${bytes} bytes over [${from}, ${to}) ${once ? 'each byte once' : 'not each byte once'}${inOrder}`);
  }
  return out.join('; ');
}

/** The files a run left, but fio's verify state (verify_state_save, fio's own bookkeeping); a log
 * file (write_*_log) by its lines: how many, whether each is fio's "time, value, direction,
 * block size, [offset,] priority", and the priorities they show (log_prio's values, or 1 for
 * realtime); a log with offsets by the offsets it covers instead of its count of lines. */
function filesIn(dir: string): string[] {
  return readdirSync(dir).filter((f) => !f.endsWith('-verify.state')).sort().map((f) => {
    if (!f.endsWith('.log')) return `${f} ${statSync(join(dir, f)).size}`;
    const lines = readFileSync(join(dir, f), 'utf8').split('\n').filter((l) => l !== '');
    const format = lines.every((l) => /^\d+, \d+, [01], \d+, (\d+, )?([01]|0x[0-9a-f]{4})$/.test(l)) ? '' : ', not fio\'s format';
    const prios = [...new Set(lines.map((l) => l.split(', ').pop()))].sort().join('/');
    const columns = lines.map((l) => l.split(', '));
    const count = columns.length > 0 && columns.every((c) => c.length === 6) ? offsetsOf(columns) : `${lines.length} lines`;
    return `${f} ${count}${format}${prios ? `, priorities ${prios}` : ''}`;
  });
}

/** The case's environment: the corpus file's `; env: A=b C=d` line, then its own. */
function caseEnv(c: DiffCase): Record<string, string> {
  const env: Record<string, string> = { ...c.env };
  if (c.jobFile) {
    const line = /^;\s*env:\s*(.+)$/m.exec(readFileSync(c.jobFile, 'utf8'))?.[1];
    for (const pair of line?.split(/\s+/) ?? []) {
      const [k, v] = pair.split('=');
      env[k] = v;
    }
  }
  return env;
}

/** The JSON a run printed (fio prints a line or two before it when a job fails). */
function jsonOf(stdout: string): any | undefined {
  const start = stdout.indexOf('{');
  try {
    return start >= 0 ? JSON.parse(stdout.slice(start)) : undefined;
  } catch {
    return undefined;
  }
}

// (fio 3.42 reads log_unix_epoch as log_alternate_epoch, and lists it so)
const logOptions = ['write_iops_log', 'log_avg_msec', 'log_unix_epoch', 'log_alternate_epoch'];

export async function runFioCase(c: DiffCase, dir: string): Promise<Outcome> {
  const cwd = join(dir, 'fio');
  const logs = join(dir, 'fio-logs');
  mkdirSync(cwd);
  mkdirSync(logs);
  const args = ['--output-format=json', `--write_iops_log=${join(logs, 'job')}`, '--log_avg_msec=100', '--log_unix_epoch=1',
    ...c.args, ...(c.jobFile ? [c.jobFile] : [])];
  // (a case iolab refuses needs nothing of fio's run, and fio 3.33's io_submit_mode=offload
  // sometimes never ends beside a second suite: its run is bounded)
  const r = await execa(fioBinary, args, { cwd, env: caseEnv(c), reject: false, ...(c.refuses ? { timeout: 20_000, forceKillAfterDelay: 2000 } : {}) });
  const doc = jsonOf(String(r.stdout));
  const jobs = doc ? jobsOf(doc) : [];
  // the IOPS log of job N (1-based, the JSON's order without group_reporting): its 100 ms windows
  const perJob = doc && jobs.length === readdirSync(logs).length;
  jobs.forEach((job, i) => {
    // fio 3.36 and later tell when a job's measured time began (job_start), as iolab does
    const j = doc.jobs[i];
    if (j.job_start > 0) {
      if (j.job_runtime >= 200) {
        job.from = j.job_start;
        job.to = j.job_start + j.job_runtime;
      }
      return;
    }
    if (!perJob) return;
    const times = readFileSync(join(logs, `job_iops.${i + 1}.log`), 'utf8').trim().split('\n')
      .filter((l) => l !== '').map((l) => Number(l.split(',')[0]));
    if (times.length >= 2) {
      job.from = times[0] - 100;
      job.to = times[times.length - 1];
    }
  });
  const globalOptions: Record<string, string> = { ...(doc?.['global options'] ?? {}) };
  for (const k of logOptions) delete globalOptions[k];
  // fio 3.42 lists a bare option (time_based, group_reporting) with an empty value; 3.33, and
  // iolab, leave it out
  for (const [k, v] of Object.entries(globalOptions)) if (v === '') delete globalOptions[k];
  return { exitCode: r.exitCode ?? -1, stderr: String(r.stderr), jobs, globalOptions, files: filesIn(cwd) };
}

export async function runIolabCase(c: DiffCase, dir: string): Promise<Outcome> {
  const cwd = join(dir, 'iolab');
  mkdirSync(cwd);
  const r = await runCliText(['bench', 'iops', ...c.args, ...(c.jobFile ? [c.jobFile] : []), '--json'],
    { cwd, env: caseEnv(c) });
  const doc = jsonOf(r.stdout);
  const jobs = doc ? jobsOf(doc) : [];
  jobs.forEach((job, i) => {
    const j = doc.jobs[i];
    if (j.job_start > 0 && j.job_runtime >= 200) {
      job.from = j.job_start;
      job.to = j.job_start + j.job_runtime;
    }
  });
  // the log options the harness gives fio are not compared, on either side
  const globalOptions = { ...(doc?.['global options'] ?? {}) };
  for (const k of logOptions) delete globalOptions[k];
  return { exitCode: r.exitCode ?? -1, stderr: r.stderr, jobs, globalOptions, files: filesIn(cwd) };
}

/** Do two jobs' measured times overlap by more than a third of a second? */
const overlap = (a: DiffJob, b: DiffJob) => Math.min(a.to!, b.to!) - Math.max(a.from!, b.from!) > 300;

/** Which pairs of jobs ran at the same time, where both runs tell: "0+1" for each pair that did. */
function overlaps(jobs: DiffJob[], known: (i: number) => boolean): string[] {
  const out: string[] = [];
  for (let i = 0; i < jobs.length; i++) {
    for (let k = i + 1; k < jobs.length; k++) {
      if (known(i) && known(k)) out.push(`${i}+${k}: ${overlap(jobs[i], jobs[k]) ? 'together' : 'apart'}`);
    }
  }
  return out;
}

/** How iolab's outcome differs from fio's for the case: nothing when it means what fio means. */
export function differences(c: DiffCase, fio: Outcome, iolab: Outcome): string[] {
  const d: string[] = [];
  if (c.refuses) {
    // iolab refuses by name, whether fio runs the case or refuses it too
    const lines = iolab.stderr.trim().split('\n');
    if (iolab.exitCode === 0 || lines.length !== 1 || !lines[0].startsWith('iolab: ') || !c.refuses.test(lines[0])) {
      d.push(`iolab should refuse by name (${c.refuses}), got exit ${iolab.exitCode}: ${iolab.stderr.trim()}`);
    }
    if (iolab.files.length > 0) d.push(`iolab's refusal left files: ${iolab.files.join(', ')}`);
    return d;
  }
  if ((fio.exitCode === 0) !== (iolab.exitCode === 0)) {
    d.push(`exit status: fio ${fio.exitCode}, iolab ${iolab.exitCode} (${iolab.stderr.trim() || fio.stderr.trim()})`);
  }
  if (fio.exitCode !== 0) {
    if (iolab.exitCode !== 0 && !/^iolab: [^\n]+\n?$/.test(iolab.stderr)) d.push(`iolab's refusal is not one line: ${iolab.stderr}`);
    return d;
  }
  const same = (what: string, a: unknown, b: unknown) => {
    if (c.skip?.includes(what)) return;
    if (JSON.stringify(a) !== JSON.stringify(b)) d.push(`${what}: fio ${JSON.stringify(a)}, iolab ${JSON.stringify(b)}`);
  };
  same('job count', fio.jobs.length, iolab.jobs.length);
  same('job names', fio.jobs.map((j) => j.name), iolab.jobs.map((j) => j.name));
  same('groupids', fio.jobs.map((j) => j.groupid), iolab.jobs.map((j) => j.groupid));
  same('rw, bs, iodepth', fio.jobs.map((j) => [j.rw, j.bs, j.iodepth]), iolab.jobs.map((j) => [j.rw, j.bs, j.iodepth]));
  same('jobs that did I/O', fio.jobs.map((j) => j.ios > 0), iolab.jobs.map((j) => j.ios > 0));
  // (fio counts a verify's reads as the job's: a verify job's directions are not compared)
  const directions = (jobs: DiffJob[]) => jobs.map((j, i) => (iolab.jobs[i]?.verify ? '-' : j.directions));
  same('directions each job moved', directions(fio.jobs), directions(iolab.jobs));
  same('steady state', fio.jobs.map((j) => j.steady), iolab.jobs.map((j) => j.steady));
  same('latency_depth, _target, _percentile, _window', fio.jobs.map((j) => j.latency), iolab.jobs.map((j) => j.latency));
  // gtod_reduce records none (fio records none either for a job whose I/O all fell in its ramp)
  same('latencies recorded under gtod_reduce', fio.jobs.map((j) => (j.gtodReduce ? j.latencies : '-')),
    iolab.jobs.map((j, i) => (fio.jobs[i]?.gtodReduce ? j.latencies : '-')));
  // a job bounded by its size or number_ios does as many I/Os in both, or moves as many bytes
  // when their lengths are drawn (fio counts a verify's reads as the job's, iolab checks its
  // pattern on its own: not compared)
  const bounded = (jobs: DiffJob[]) => jobs.map((j, i) => (iolab.jobs[i]?.timeBased || iolab.jobs[i]?.verify ? '-' :
    j.varlen ? `${j.bytes} bytes` : j.ios));
  same('I/Os (bytes, for lengths drawn) of jobs bounded by size or number_ios', bounded(fio.jobs), bounded(iolab.jobs));
  const syncs = (jobs: DiffJob[]) => jobs.map((j, i) => (iolab.jobs[i]?.timeBased ? '-' : j.syncs));
  same('syncs (fsync=N, fdatasync=N) of jobs bounded by size', syncs(fio.jobs), syncs(iolab.jobs));
  const sorted = (o: Record<string, string>) => Object.fromEntries(Object.entries(o).sort(([a], [b]) => a.localeCompare(b)));
  same('global options', sorted(fio.globalOptions), sorted(iolab.globalOptions));
  // job_runtime, bw_mean and bw_agg mean what fio's mean, with group_reporting and without, in
  // groups of one job's copies (numjobs), where a share is about 1/N of the whole: other jobs of
  // a group (a reader beside a writer) have shares of any size, too close to call in a 1 s run
  // (a job alone in its group is the whole of it whatever its samples say: not compared)
  const group = (i: number) => fio.jobs.filter((j) => j.groupid === fio.jobs[i].groupid);
  const copies = (i: number) => group(i).every((j) => j.name === fio.jobs[i].name) &&
    (group(i).length > 1 || !/sums 1 runtimes/.test(fio.jobs[i].aggregates ?? ''));
  // a share of the group's bandwidth (its bytes over its longest runtime) is a share only when
  // the copies ran about as long and did about as much: one held up past its runtime on a loaded
  // machine (a read stuck behind other I/O) stretches the group's time, and one the other
  // starved (fio's 2 libaio copies beside a second suite: one over 80 of the group's bw_agg)
  // reads as the whole, in fio as in iolab
  const steady = (jobs: DiffJob[], i: number) => {
    const group = jobs.filter((j) => j.groupid === jobs[i].groupid);
    const times = group.map((j) => j.runtime);
    const ios = group.map((j) => j.ios);
    return Math.max(...times) <= 1.2 * Math.min(...times) && Math.max(...ios) <= 1.5 * Math.min(...ios);
  };
  const told = (i: number) => copies(i) && steady(fio.jobs, i) && steady(iolab.jobs, i) &&
    fio.jobs[i]?.aggregates !== undefined && iolab.jobs[i]?.aggregates !== undefined;
  same('aggregated keys', fio.jobs.map((j, i) => (told(i) ? j.aggregates : '-')), iolab.jobs.map((j, i) => (told(i) ? j.aggregates : '-')));
  // a log's count of lines is a count of I/Os: not compared for a job whose lengths are drawn
  const logsOf = (files: string[]) => files.map((f) => {
    const n = Number(/^\S+\.(\d+)\.log /.exec(f)?.[1] ?? 0);
    return n > 0 && fio.jobs[n - 1]?.varlen ? f.replace(/ \d+ lines/, ' lines') : f;
  });
  same('files', logsOf(fio.files), logsOf(iolab.files));
  if (fio.jobs.length === iolab.jobs.length) {
    const known = (i: number) => fio.jobs[i].from !== undefined && iolab.jobs[i].from !== undefined;
    same('jobs at the same time', overlaps(fio.jobs, known), overlaps(iolab.jobs, known));
  }
  return d;
}

/** One row of the closing table: what each side did with the case. */
export function summaryRow(c: DiffCase, fio: Outcome, iolab: Outcome, diffs: string[]): string[] {
  const side = (o: Outcome) => o.exitCode !== 0 ? `refused (exit ${o.exitCode})` :
    `${o.jobs.length} jobs, groups ${[...new Set(o.jobs.map((j) => j.groupid))].join(',')}, ${o.files.length} files`;
  return [c.name, side(fio), side(iolab), diffs.length === 0 ? (c.refuses ? 'refused by name' : 'same') : 'DIFFERS'];
}
