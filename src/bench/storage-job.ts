// What the storage benchmarks share: rw names, fio-style option checks that must fail before
// any I/O (O_DIRECT alignment, sizes, file systems that hold no files), and running one native
// job with a progress bar on stderr that Ctrl-C stops.
import { accessSync, constants, existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { native, type BenchJob, type BenchProgress, type BenchResult } from '../native.js';
import { UserError } from '../cli-util.js';
import { interruption } from '../interrupt.js';
import { blockDeviceDir } from './machine.js';
import { mountOf, pseudoFileSystems } from '../mounts.js';
import { noteRunFile } from '../run-files.js';
import { removeStaleTempFiles } from '../temp-files.js';
import { namesFolder, refuseKernelFolder } from '../write-target.js';
import { showText } from '../show-bytes.js';
import { freeBytes } from '../free-space.js';

export const RW_MODES = ['read', 'write', 'randread', 'randwrite', 'randrw', 'readwrite'] as const;
export type RwMode = (typeof RW_MODES)[number];

export function parseRw(value: string): RwMode {
  const rw = value === 'rw' ? 'readwrite' : value;
  if (!(RW_MODES as readonly string[]).includes(rw)) {
    throw new UserError(`unknown rw '${value}' (known: ${RW_MODES.join(', ')})`);
  }
  return rw as RwMode;
}

/** The logical block size of the device a path lives on (or is), from sysfs; undefined when the
 * filesystem has no block device (tmpfs, overlay). Partitions use their disk's queue. */
export function logicalBlockSize(path: string): { size: number; device: string } | undefined {
  const real = blockDeviceDir(path);
  if (!real) return undefined;
  for (const dir of [real, dirname(real)]) {
    const file = join(dir, 'queue/logical_block_size');
    if (existsSync(file)) {
      return { size: Number(readFileSync(file, 'utf8').trim()), device: dir.split('/').pop() ?? real };
    }
  }
  return undefined;
}

/**
 * Refuses, before any file is laid out, a run whose new files do not fit together: each file's
 * own check (native/bench/layout.c) sees only itself, so numjobs=2 of 200 MiB on 252 MiB would
 * lay out the first and then be refused, leaving it. One line, as the layout's own. `lone`: a
 * single file too, for a run whose layout comes after other work (bench latency's --outfile,
 * laid out once the first engine's reads are done).
 */
export function checkLayoutSpace(jobs: { filename: string; filenames?: string[]; size?: number }[], lone = false): void {
  const byFileSystem = new Map<number, { folder: string; need: number; files: string[] }>();
  const seen = new Set<string>();
  for (const job of jobs.flatMap(eachFile)) {
    const path = resolve(job.filename);
    if (seen.has(path) || !job.size) continue;
    seen.add(path);
    const st = statSync(path, { throwIfNoEntry: false });
    if (st && !st.isFile()) continue;  // a device is not laid out
    const growth = job.size - (st?.size ?? 0);
    const folder = dirname(path);
    const dev = statSync(folder, { throwIfNoEntry: false })?.dev;
    if (growth <= 0 || dev === undefined) continue;
    const fs = byFileSystem.get(dev) ?? { folder, need: 0, files: [] };
    fs.need += growth;
    fs.files.push(job.filename);
    byFileSystem.set(dev, fs);
  }
  for (const fs of byFileSystem.values()) {
    if (fs.files.length < 2 && !lone) continue;  // one file: the layout's own check
    const free = freeBytes(fs.folder);
    if (free >= fs.need) continue;
    const names = fs.files.slice(0, 3).map((f) => `'${showText(f)}'`).join(', ') + (fs.files.length > 3 ? ` and ${fs.files.length - 3} more` : '');
    throw new UserError(`not enough free space to lay out ${names}${fs.files.length > 1 ? ' together: they need' : ': it needs'} ${Math.ceil(fs.need / 2 ** 20)} MiB more, ` +
      `${Math.floor(free / 2 ** 20)} MiB free; nothing was laid out`);
  }
}

/** A job over several files (fio's filename=a:b) as a job per file, each at its share of the
 * size (fio's size / nr_files); a job over one file as itself. */
export function eachFile<J extends { filename: string; filenames?: string[]; size?: number }>(job: J): J[] {
  const files = job.filenames ?? [];
  if (files.length < 2) return [job];
  const size = job.size === undefined ? undefined : Math.floor(job.size / files.length);
  return files.map((filename) => ({ ...job, filename, filenames: undefined, size }));
}

/** How a job's file was named: the option, and whether the job may create or write it. */
export interface JobFileRole {
  option: string;
  output: boolean;
}

/** Checks a job's options before any I/O; every problem is one UserError line naming the
 * option as the user typed it. The job's file joins the run's files (src/run-files.ts: never
 * the same as another it reads or writes); a file it may create is never one under /dev, /proc
 * or /sys, and the temp files that killed runs left for it are removed first. */
export function checkJob(job: BenchJob, role: JobFileRole = { option: '--filename', output: true }): void {
  const files = job.filenames ?? [];
  if (files.length > 1) {
    const share = Math.floor(job.size / files.length);
    if (share < job.bs) {
      throw new UserError(`--size (${job.size} bytes) over ${files.length} files is ${share} bytes each, less than one block (--bs ${job.bs})`);
    }
    for (const each of eachFile(job)) checkJob(each, role);
    return;
  }
  noteRunFile(job.filename, role.option, role.output);
  const fs = mountOf(job.filename);
  if (fs && pseudoFileSystems.has(fs.type)) {
    throw new UserError(`${role.option}: '${showText(job.filename)}' is on ${fs.mountPoint} (${fs.type}), a file system that ` +
      'holds no regular files to benchmark; choose a path on a disk file system or tmpfs');
  }
  const exists = existsSync(job.filename);
  if (!exists) {
    refuseKernelFolder(job.filename, `${role.option}: `, '; name a device that exists (fio, too, refuses a missing one without size=)');
  }
  if (job.size < job.bs) {
    throw new UserError(`--size (${job.size} bytes) is smaller than one block (--bs ${job.bs})`);
  }
  if (job.timeBased && !job.runtimeMs) throw new UserError('--time_based needs --runtime');
  if (job.verify && job.bs % 8 !== 0) throw new UserError(`--verify needs --bs to be a multiple of 8, got ${job.bs}`);
  if (job.blockAlign && job.blockAlign % job.bs !== 0) {
    throw new UserError(`blockalign=${job.blockAlign} is not a multiple of the block size (${job.bs}), to which every offset is aligned`);
  }
  if (job.verify && job.seqAdd && job.seqAdd % job.bs !== 0) {
    throw new UserError(`--verify with an offset modifier (rw=write:${job.seqAdd}) that is not a multiple of bs ${job.bs}: iolab checks ` +
      'whole blocks, which the modifier\'s offsets would straddle');
  }
  if (job.direct) {
    const lbs = logicalBlockSize(job.filename);
    if (lbs && job.bs % lbs.size !== 0) {
      throw new UserError(`--direct needs --bs to be a multiple of the logical block size of ${lbs.device} ` +
        `(${lbs.size} bytes); got ${job.bs}`);
    }
  }
  if (exists && statSync(job.filename).isDirectory()) throw new UserError(`'${showText(job.filename)}' is a directory; ${role.option} needs a file`);
  if (!exists && namesFolder(job.filename)) throw new UserError(`${role.option}: cannot create '${showText(job.filename)}': a name ending in / is a folder's; name a file`);
  if (role.output) removeStaleTempFiles(job.filename);
  // a file that can't be opened (or created) is one error line before the table's header, not a row
  const writes = job.rw !== 'read' && job.rw !== 'randread';
  try {
    if (exists) accessSync(job.filename, writes ? constants.R_OK | constants.W_OK : constants.R_OK);
    else accessSync(dirname(job.filename), constants.W_OK | constants.X_OK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (!exists && (code === 'ENOENT' || code === 'ENOTDIR')) {
      throw new UserError(`${role.option}: cannot create '${showText(job.filename)}': no folder '${showText(dirname(resolve(job.filename)))}'`);
    }
    if (code !== 'EACCES' && code !== 'EROFS') throw err;
    throw new UserError(`${code}: ${code === 'EACCES' ? 'permission denied' : 'read-only file system'}, open '${showText(job.filename)}'`);
  }
}

export interface ProgressOptions {
  /** Draw the bar (only when stderr is a terminal and output is not JSON). */
  show: boolean;
  label: string;
  /** fio's --eta-newline: the bar starts a new line every this many ms (0: it redraws its one line). */
  newlineMs?: number;
}

/** Runs one job natively; while it runs, a one-line progress bar with IOPS and ETA on stderr. */
export async function runJob(job: BenchJob, progress: ProgressOptions): Promise<BenchResult> {
  return withProgress([job], progress, (stop, onProgress) => native.benchRun({ ...job, stop }, onProgress));
}

/** Runs jobs at the same time (one result per job's entry), with the progress bar of them all. */
export async function runJobGroup(jobs: BenchJob[], progress: ProgressOptions): Promise<BenchResult[]> {
  return withProgress(jobs, progress, (stop, onProgress) => native.benchRunGroup(jobs.map((j) => ({ ...j, stop })), onProgress));
}

async function withProgress<T>(jobs: BenchJob[], progress: ProgressOptions,
  start: (stop: Int32Array, onProgress?: (p: BenchProgress) => void) => Promise<T>): Promise<T> {
  const draw = progress.show && process.stderr.isTTY === true;
  let lastIos = 0;
  let lastMs = 0;
  let lineFrom = 0;
  const job = jobs[0];
  const total = job.timeBased || job.runtimeMs ? (job.rampMs ?? 0) + (job.runtimeMs ?? 0) : undefined;
  const layoutBytes = jobs.reduce((sum, j) => sum + j.size, 0);
  const onProgress = draw ? (p: BenchProgress) => {
    const iops = p.elapsedMs > lastMs ? ((p.ios - lastIos) * 1000) / (p.elapsedMs - lastMs) : 0;
    lastIos = p.ios;
    lastMs = p.elapsedMs;
    let fraction: number;
    let eta: number;
    if (p.phase === 'layout') {
      fraction = Math.min(1, p.bytes / layoutBytes);
      eta = p.bytes > 0 ? ((layoutBytes - p.bytes) * p.elapsedMs) / p.bytes : 0;
    } else if (total !== undefined) {
      fraction = Math.min(1, p.elapsedMs / total);
      eta = Math.max(0, total - p.elapsedMs);
    } else {
      const want = jobs.reduce((sum, j) => sum + (j.numberIos ?? j.size / j.bs) * (j.numjobs ?? 1), 0);
      fraction = Math.min(1, p.ios / want);
      eta = iops > 0 ? ((want - p.ios) * 1000) / iops : 0;
    }
    const width = 24;
    const filled = Math.round(fraction * width);
    const what = p.phase === 'layout' ? `laying out ${(p.bytes / 2 ** 20).toFixed(0)} MiB` :
      `${p.phase} ${Math.round(iops).toLocaleString('en-US')} IOPS`;
    const newline = (progress.newlineMs ?? 0) > 0 && p.elapsedMs - lineFrom >= progress.newlineMs!;
    if (newline) lineFrom = p.elapsedMs;
    process.stderr.write(`\r\x1b[K${progress.label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ` +
      `${(fraction * 100).toFixed(0).padStart(3)}% ${what} ETA ${(eta / 1000).toFixed(0)}s${newline ? '\n' : ''}`);
  } : undefined;
  // Ctrl-C / SIGTERM: the native job sees the flag within one I/O and returns what it measured
  const stop = new Int32Array(new SharedArrayBuffer(4));
  const signal = interruption();
  const onAbort = () => Atomics.store(stop, 0, 1);
  if (signal.aborted) onAbort();
  signal.addEventListener('abort', onAbort);
  try {
    return await start(stop, onProgress);
  } finally {
    signal.removeEventListener('abort', onAbort);
    if (draw) process.stderr.write('\r\x1b[K');
  }
}
