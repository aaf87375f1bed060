// One `bench iops` job from its options: fio's names (commander's keys), the presets, iolab's
// defaults (fio's, except where docs/storage.md says why not), and the fio options it was given
// that change nothing iolab measures (thread), shown in its job options.
import { UserError } from '../cli-util.js';
import { randomInt } from 'node:crypto';
import type { BenchJob } from '../native.js';
import { checkDepth, engineOptionsFrom } from './engines.js';
import type { RwMode } from './storage-job.js';
import type { SweepAxis } from './sweep.js';
import { jobBlockSizes, type BlockSizes, type PerDirection, type Split } from './block-sizes.js';
import type { LogKind } from './fio-logs.js';
import { distributionFields, fileServiceFields, type Distribution, type FileService } from './distribution.js';
import { steadyStateFields, type SteadyOptions } from './steadystate.js';

interface Preset {
  rw?: RwMode;
  bs?: number;
  iodepth?: number;
  rwmixread?: number;
  direct?: boolean;
  ioengine?: string[];
}

/** fio profiles for latency, IOPS, throughput and mixed load, and a large sequential write. */
export const presets: Record<string, Preset> = {
  latency: { rw: 'randread', bs: 4096, iodepth: 1 },
  iops: { rw: 'randread', bs: 4096, iodepth: 32 },
  throughput: { rw: 'read', bs: 128 * 1024, iodepth: 32 },
  mixed: { rw: 'randrw', rwmixread: 70, bs: 4096, iodepth: 32 },
  bigwrite: { rw: 'write', bs: 1 << 20, iodepth: 16, direct: true, ioengine: ['libaio', 'psync'] },
};

const DEFAULT_SIZE = 256 * 2 ** 20;

/** A job's options as commander keys them (fio's names), values parsed. */
export interface IopsOptions extends Record<string, unknown>, SteadyOptions {
  filename?: string;
  ioengine?: string[];
  rw?: RwMode;
  rwmixread?: number;
  bs?: BlockSizes;
  iodepth?: number;
  iodepth_batch?: number;  // --iodepth_batch_submit or --iodepth_batch
  iodepth_batch_complete?: number;  // --iodepth_batch_complete_min or --iodepth_batch_complete
  iodepth_batch_complete_max?: number;
  numjobs?: number;
  size?: number;
  runtime?: number;
  time_based?: boolean;
  ramp_time?: number;
  number_ios?: number;
  direct?: boolean;
  invalidate?: boolean;
  fadvise_hint?: number;
  verify?: boolean | string;
  verify_pattern?: Buffer;
  verify_backlog?: number;
  verify_backlog_batch?: number;
  verify_dump?: boolean;
  offset_increment?: number;
  zonemode?: string;
  zonesize?: number;
  zonerange?: number;
  zoneskip?: number;
  force?: boolean;
  preset?: string;
  name?: string;
  thread?: boolean;
  group_reporting?: boolean;
  stonewall?: boolean;
  new_group?: boolean;
  norandommap?: boolean;
  randrepeat?: boolean;
  randseed?: number;
  refill_buffers?: boolean;
  dedupe_percentage?: number;
  dedupe_mode?: string;
  dedupe_working_set_percentage?: number;
  dedupe_global?: boolean;
  buffer_compress_percentage?: number;
  buffer_compress_chunk?: number;
  directory?: string;
  bsrange?: BlockSizes;
  bssplit?: Split;
  ba?: number;
  filesize?: number;
  gtod_reduce?: boolean;
  end_fsync?: boolean;
  end_syncfs?: boolean;
  ramp_size?: number;
  atomic?: boolean;
  exitall?: boolean;
  prioclass?: number;
  prio?: number;
  cmdprio_bssplit?: { text: string; entries: number[] };
  log_prio?: boolean;
  log_offset?: boolean;
  latency_target?: number;
  latency_window?: number;
  latency_percentile?: number;
  latency_run?: boolean;
  exit_what?: 'group' | 'stonewall' | 'all';
  random_distribution?: Distribution;
  file_service_type?: FileService;
  wait_for?: string;
  flow?: number;
  flow_id?: number;
  flow_sleep?: number;
  sync?: number;
  thinktime?: number;
  overwrite?: number;
  unlink?: boolean;
  rate?: PerDirection;
  rate_iops?: PerDirection;
  rate_process?: string;
  io_submit_mode?: string;
  fsync?: number;
  fdatasync?: number;
  random_generator?: string;
  offset?: number | { percent: number };
  io_size?: number;
  loops?: number;
  /** fio's rw=read:-8k offset modifier (fio-jobs.ts reads it from the rw text). */
  rw_offset_add?: number;
  write_lat_log?: string | boolean;
  write_bw_log?: string | boolean;
  write_iops_log?: string | boolean;
  log_avg_msec?: number;
  description?: string;
  allow_file_create?: boolean;
  /** fio options given at fio's default, which iolab runs only so (do_verify=1, startdelay=0). */
  fio_defaults?: Record<string, string>;
}

/** A bench iops job: the native job, and what fio's JSON says of it beside the native options. */
export interface IopsJob extends BenchJob {
  /** fio's jobname; undefined on iolab's plain command line, whose rows are named by engine. */
  name?: string;
  /** The job's numjobs: each of its clones runs as a job of its own (numjobs 1, clone 0..N-1). */
  clones?: number;
  groupid?: number;
  groupReporting?: boolean;
  /** fio's randrepeat (default 1); randrepeat=0 runs with a randseed drawn for the run. */
  randrepeat?: boolean;
  /** fio's offset=N%: the offset is that share of the file when the job's step starts. */
  offsetPercent?: number;
  /** fio's unlink: the job's file is deleted when its step is done. */
  unlink?: boolean;
  /** fio's log files this job writes (write_*_log), named as fio names them. */
  logFiles?: Partial<Record<LogKind, string>>;
  /** fio options accepted as given that change nothing iolab measures (thread). */
  accepted?: Record<string, string>;
}

/** fio options a job may carry that change nothing iolab measures: iolab's jobs are threads, a
 * description is text (fio's HOWTO: "doesn't do anything except dump this text"). Shown in the
 * job options as given. */
function acceptedOptions(opts: IopsOptions): Record<string, string> {
  const o: Record<string, string> = {};
  if (opts.thread !== undefined) o.thread = opts.thread ? '1' : '0';
  if (opts.group_reporting !== undefined) o.group_reporting = opts.group_reporting ? '1' : '0';
  if (opts.description !== undefined) o.description = opts.description;
  if (opts.random_generator !== undefined) o.random_generator = opts.random_generator;
  if (opts.io_submit_mode !== undefined) o.io_submit_mode = opts.io_submit_mode;
  if (opts.wait_for !== undefined) o.wait_for = opts.wait_for;
  if (opts.overwrite !== undefined) o.overwrite = String(opts.overwrite);
  if (opts.random_distribution !== undefined) o.random_distribution = opts.random_distribution.text;
  if (opts.cmdprio_bssplit !== undefined) o.cmdprio_bssplit = opts.cmdprio_bssplit.text;
  if (opts.zonemode !== undefined) o.zonemode = opts.zonemode;
  if (opts.file_service_type !== undefined) o.file_service_type = opts.file_service_type.text;
  if (opts.steadystate !== undefined) o.steadystate = opts.steadystate.text;
  if (opts.steadystate_duration !== undefined) o.steadystate_duration = `${opts.steadystate_duration}ms`;
  if (opts.steadystate_ramp_time !== undefined) o.steadystate_ramp_time = `${opts.steadystate_ramp_time}ms`;
  if (opts.steadystate_check_interval !== undefined) o.steadystate_check_interval = `${opts.steadystate_check_interval}ms`;
  Object.assign(o, opts.fio_defaults);
  return o;
}

/** The job of these options over filename (its engine set per run: '' here). */
export function jobFromOptions(opts: IopsOptions, filename: string, engines: string[], sweep: SweepAxis[]): IopsJob {
  const preset = opts.preset ? presets[opts.preset] : {};
  // fio's verify_pattern verifies too when no verify= is given
  const verify = (opts.verify !== undefined && opts.verify !== false && opts.verify !== '0') || opts.verify_pattern !== undefined;
  const iodepth = opts.iodepth ?? preset.iodepth ?? 1;
  checkDepth(iodepth, engines);
  for (const axis of sweep) if (axis.key === 'iodepth') for (const d of axis.values) checkDepth(d as number, engines);
  const job: IopsJob = {
    filename,
    engine: '',
    rw: opts.rw ?? preset.rw ?? 'read',
    rwmixread: opts.rwmixread ?? preset.rwmixread ?? 50,
    ...(jobBlockSizes(opts.bs, opts.bsrange, opts.bssplit, opts.rw ?? preset.rw ?? 'read') ?? { bs: preset.bs ?? 4096 }),
    iodepth,
    iodepthBatch: opts.iodepth_batch ?? 1,
    iodepthBatchCompleteMin: opts.iodepth_batch_complete ?? 1,
    iodepthBatchCompleteMax: opts.iodepth_batch_complete_max ?? 0,
    numjobs: 1,
    clones: opts.numjobs ?? 1,
    size: opts.size ?? opts.filesize ?? DEFAULT_SIZE,
    sizeIsDefault: opts.size === undefined && opts.filesize === undefined,
    fileSize: opts.filesize,
    gtodReduce: opts.gtod_reduce ?? false,
    blockAlign: opts.ba,
    flow: opts.flow ?? 0,
    flowId: opts.flow_id ?? 0,
    flowSleepUs: opts.flow_sleep ?? 0,
    offset: typeof opts.offset === 'number' ? opts.offset : undefined,
    // fio's zonemode=strided (its zone options do nothing without it)
    ...(opts.zonemode === 'strided' && opts.zonesize ? { zoneSize: opts.zonesize, zoneRange: opts.zonerange, zoneSkip: opts.zoneskip } : {}),
    ioSize: opts.io_size,
    loops: opts.loops,
    seqAdd: opts.rw_offset_add,
    openSync: opts.sync ?? 0,
    thinktimeUs: opts.thinktime ?? 0,
    rateRead: opts.rate?.read, rateWrite: opts.rate?.write,
    rateIopsRead: opts.rate_iops?.read, rateIopsWrite: opts.rate_iops?.write, ratePoisson: opts.rate_process === 'poisson',
    offload: opts.io_submit_mode === 'offload',
    // fdatasync=N over fsync=N when both are given (fio runs both; one sync each N writes is iolab's)
    fsync: opts.fdatasync || opts.fsync || 0,
    fdatasync: (opts.fdatasync ?? 0) > 0,
    endFsync: opts.end_fsync ?? false,
    endSyncfs: opts.end_syncfs ?? false,
    // fio 3.42's ramp_size: its group's bytes together under group_reporting
    rampBytes: opts.ramp_size, rampGroup: opts.group_reporting ?? false,
    atomic: opts.atomic ?? false,
    // fio's exitall: its group's jobs end with it, or (exit_what=stonewall, all) every job running
    // fio's ioprio_value: class 0 (none given) is best effort, 2
    ioprio: opts.prioclass === undefined && opts.prio === undefined ? -1 : ((opts.prioclass || 2) << 13) | (opts.prio ?? 0),
    logPrio: opts.log_prio ?? false,
    cmdprioBssplit: opts.cmdprio_bssplit?.entries,
    logOffset: opts.log_offset ?? false,
    // fio's latency_target and latency_window, in microseconds unless a unit is given
    latencyTargetNs: Math.round((opts.latency_target ?? 0) * 1e6),
    latencyWindowNs: Math.round((opts.latency_window ?? 0) * 1e6),
    latencyPercentileMicros: Math.round((opts.latency_percentile ?? 100) * 1e6),
    latencyRun: opts.latency_run ?? false,
    exitWhat: !opts.exitall ? 0 : (opts.exit_what ?? 'group') === 'group' ? 1 : 2,
    runtimeMs: opts.runtime,
    timeBased: opts.time_based ?? false,
    rampMs: opts.ramp_time,
    numberIos: opts.number_ios,
    direct: opts.direct ?? preset.direct ?? false,
    invalidate: opts.invalidate ?? true,
    fadviseHint: opts.fadvise_hint ?? 1,
    engineOptions: engineOptionsFrom(opts, engines),
    verify,
    verifyPattern: opts.verify_pattern,
    verifyBacklog: opts.verify_backlog, verifyBacklogBatch: opts.verify_backlog_batch, verifyDump: opts.verify_dump ?? false,
    force: opts.force ?? false,
    // lfsr promises each block once per pass without a map: iolab's map does that
    norandommap: opts.random_generator === 'lfsr' ? false : opts.norandommap ?? false,
    ...distributionFields(opts.random_distribution),
    ...fileServiceFields(opts.file_service_type),
    ...steadyStateFields(opts),
    refillBuffers: opts.refill_buffers ?? false,
    dedupePercentage: opts.dedupe_percentage, dedupeMode: opts.dedupe_mode === 'working_set' ? 1 : 0,
    dedupeWorkingSetPercentage: opts.dedupe_working_set_percentage, dedupeGlobal: opts.dedupe_global ?? false,
    compressPercentage: opts.buffer_compress_percentage, compressChunk: opts.buffer_compress_chunk,
    randrepeat: opts.randrepeat ?? true,
    // --randrepeat=0: every run reads at other random offsets than the last (a new randseed
    // each run), as fio does
    randseed: opts.randrepeat === false ? randomInt(2 ** 47) : opts.randseed,
    name: opts.name,
    unlink: opts.unlink ?? false,
    groupReporting: opts.group_reporting ?? false,
    accepted: acceptedOptions(opts),
  };
  const prioEngines = ['libaio', 'io_uring'];
  if (opts.cmdprio_bssplit !== undefined && !engines.every((e) => prioEngines.includes(e))) {
    throw new UserError(`cmdprio_bssplit is an option of libaio and io_uring, and the job runs ${engines.join(', ')} ` +
      '(fio: "unrecognized option")');
  }
  if (opts.ramp_size !== undefined && opts.ramp_time !== undefined) {
    throw new UserError('ramp_time and ramp_size: one ramp or the other (fio: "job rejected: cannot specify both ramp_time and ramp_size")');
  }
  // the pattern is checked block by block, each block starting it again, as each of fio's I/Os does
  if (opts.verify_pattern && job.bs % opts.verify_pattern.length !== 0) {
    throw new UserError(`verify_pattern: its ${opts.verify_pattern.length} bytes do not divide bs ${job.bs}; ` +
      'iolab checks the pattern block by block, so give a pattern whose length divides the block size');
  }
  return job;
}

/** The engines a job runs: its ioengine (or its preset's); without one, fio's psync for a fio
 * job (a job file, or a command line with --name) and every engine on iolab's own command line. */
export function jobEngines(opts: IopsOptions, fioJob: boolean, all: string[]): string[] {
  const preset = opts.preset ? presets[opts.preset] : {};
  return opts.ioengine ?? preset.ioengine ?? (fioJob ? ['psync'] : [...all]);
}
