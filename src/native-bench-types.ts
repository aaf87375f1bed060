// The types of the storage benchmark's exports (native/bench_binding.cc): a job as fio's options
// describe it, the engine table, progress and the results. Types only; src/native-types.ts
// re-exports them beside the addon's other subsystems'.

/** One storage benchmark job (fio's options; sizes in bytes, times in ms). */
export interface BenchJob {
  filename: string;
  /** fio's filename=a:b: every file of the job, the first filename; the size is split among them
   * (each size / files), each laid out, the I/Os going to one after the other. Default: filename alone. */
  filenames?: string[];
  engine: string;
  rw: 'read' | 'write' | 'randread' | 'randwrite' | 'randrw' | 'readwrite';
  rwmixread?: number;
  bs: number;
  iodepth: number;
  /** Commit after this many queued I/Os (fio's iodepth_batch_submit; default 1). */
  iodepthBatch?: number;
  /** A full queue reaps at least this many (fio's iodepth_batch_complete_min; default 1; 0 counts as 1). */
  iodepthBatchCompleteMin?: number;
  /** ...and at most this many per reap (fio's iodepth_batch_complete_max; default 0: the same as min). */
  iodepthBatchCompleteMax?: number;
  numjobs?: number;
  size: number;
  runtimeMs?: number;
  timeBased?: boolean;
  rampMs?: number;
  /** Stop after this many I/Os: as fio's number_ios, at most one pass over the size, and not
   * for a time_based job (numberIosWraps: counted on, pass after pass). */
  numberIos?: number;
  numberIosWraps?: boolean;
  direct?: boolean;
  invalidate?: boolean;
  /** fio's fadvise_hint: 0 none, 1 (default) as rw implies, 2 sequential, 3 random. */
  fadviseHint?: number;
  /** Options of the engines' own tables by name (fixedbufs: true, test_delay_usec: 50...);
   * an engine reads its own and ignores the rest. */
  engineOptions?: Record<string, number | boolean>;
  verify?: boolean;
  force?: boolean;
  /** fio's randseed: the random offsets and rw mix (randrepeat=0 draws one per run in the CLI). */
  randseed?: number;
  /** fio's norandommap: random offsets drawn with replacement; default a random map (every block
   * once per pass, as fio). */
  norandommap?: boolean;
  /** fio's refill_buffers: fresh random data in each write buffer before every write. */
  refillBuffers?: boolean;
  /** fio's dedupe_percentage, dedupe_mode (0 repeat, 1 working_set), dedupe_working_set_percentage,
   * dedupe_global (this job dedupeIndex of the dedupeJobs sharing the set), buffer_compress_percentage
   * and buffer_compress_chunk: what writes carry. */
  dedupePercentage?: number;
  dedupeMode?: number;
  dedupeWorkingSetPercentage?: number;
  dedupeGlobal?: boolean;
  dedupeIndex?: number;
  dedupeJobs?: number;
  compressPercentage?: number;
  compressChunk?: number;
  /** No size was asked for: an existing foreign file or a block device is used whole. */
  sizeIsDefault?: boolean;
  /** fio's filesize: the file is laid out at this size, the I/O covers [0, size) of it; default size. */
  fileSize?: number;
  /** fio's gtod_reduce: no latencies or bw/IOPS samples are recorded (I/Os and bytes still are). */
  gtodReduce?: boolean;
  /** fio's end_fsync: a job that wrote fsyncs its file when its I/O is done. */
  endFsync?: boolean;
  /** fio's atomic (3.42): every write carries RWF_ATOMIC (libaio, io_uring, pvsync2). */
  atomic?: boolean;
  /** fio 3.42's end_syncfs: a job that wrote syncfs()s its file system when its I/O is done. */
  endSyncfs?: boolean;
  /** fio's steadystate: its criterion (1 iops, 2 bw, 4 lat, 8 slope, 16 percent), limit in
   * millionths, ss_dur, ss_ramp, ss_interval (ms), and whether its group's jobs are judged together. */
  ssKind?: number;
  ssLimitMicros?: number;
  ssDurMs?: number;
  ssRampMs?: number;
  ssIntervalMs?: number;
  ssGroup?: boolean;
  /** fio 3.42's ramp_size: the job's first bytes (its group's, with rampGroup) are not recorded. */
  rampBytes?: number;
  rampGroup?: boolean;
  /** fio's exitall: when a thread of this job ends, 1 ends the jobs of its groupid, 2 every job
   * of the run (exit_what=stonewall, all); 0 (the default): none. */
  exitWhat?: number;
  /** fio's prioclass/prio: the job thread's I/O priority (class << 13 | level); -1 or none: unset. */
  ioprio?: number;
  /** fio's cmdprio_bssplit: [ddir, bs, percent, prio (-1: the engine's cmdprio), ...]. */
  cmdprioBssplit?: number[];
  /** fio's log_prio: the logs' last column is the I/O's priority value. */
  logPrio?: boolean;
  /** fio's log_offset: each log line has the I/O's offset after its block size. */
  logOffset?: boolean;
  /** fio's latency_target, latency_window (ns), latency_percentile (millionths of a percent),
   * latency_run: the job searches for the deepest queue that meets the target. */
  latencyTargetNs?: number;
  latencyWindowNs?: number;
  latencyPercentileMicros?: number;
  latencyRun?: boolean;
  /** fio's verify_pattern: writes carry these bytes repeated from each I/O's start, and the
   * verify compares against them (1 to 512 bytes, a length that divides bs). */
  verifyPattern?: Uint8Array;
  /** fio's verify_backlog, verify_backlog_batch: the blocks written lately read back while the
   * job runs; verify_dump: a block that fails is written out beside what was expected. */
  verifyBacklog?: number;
  verifyBacklogBatch?: number;
  verifyDump?: boolean;
  /** fio's groupid (exitWhat 1). */
  groupid?: number;
  /** fio's file_service_type over several files: 0 roundrobin, 1 sequential, 2 random (each
   * switching after fileServiceNr I/Os), 3 zipf, 4 pareto, 5 normal (their value and center in millionths). */
  fileService?: number;
  fileServiceNr?: number;
  fileServiceParamMicros?: number;
  fileServiceCenterMicros?: number;
  /** fio's random_distribution: 0 random (uniform), 1 zipf, 2 pareto, 3 normal, 4 zoned, 5 zoned_abs. */
  randomDistribution?: number;
  /** zoned: [access %, size %] per zone, in order (5, zoned_abs: [access %, bytes]); the writes' own
   * in distributionZonesWrite (default: the same). */
  distributionZones?: number[];
  distributionZonesWrite?: number[];
  /** Its value in millionths: zipf's theta, pareto's power, normal's deviation in percent. */
  distributionMicros?: number;
  /** Its center (0..1) in millionths; -1000000 (default): spread by a hash. */
  distributionCenterMicros?: number;
  /** fio's rate (bytes/s) and rate_iops per direction; 0 or absent: no cap. */
  rateRead?: number;
  rateWrite?: number;
  rateIopsRead?: number;
  rateIopsWrite?: number;
  /** fio's io_submit_mode=offload: iodepth submit threads, each with the job's engine, run the I/Os. */
  offload?: boolean;
  /** fio's rate_process=poisson: the gaps between paced I/Os drawn from an exponential. */
  ratePoisson?: boolean;
  /** fio's fsync=N (fdatasync: true: fdatasync=N): a sync after every N writes. */
  fsync?: number;
  fdatasync?: boolean;
  /** fio's sync: 1 opens with O_SYNC, 2 with O_DSYNC. */
  openSync?: number;
  /** fio's thinktime: microseconds the job stalls before issuing each next I/O. */
  thinktimeUs?: number;
  /** fio's bsrange (bs=1k-4k): each I/O's length a multiple of bs up to this. */
  bsMax?: number;
  /** fio's flow, flow_id, flow_sleep (µs): the jobs of one flow id share its I/Os by weight. */
  flow?: number;
  flowId?: number;
  flowSleepUs?: number;
  /** fio's blockalign (ba): random offsets a multiple of it. */
  blockAlign?: number;
  /** fio's bssplit: [size, percent, ...], each I/O's length one of the sizes, in fio's order (by
   * percent); bssplitWrite: the writes' own (default: the same). */
  bssplit?: number[];
  bssplitWrite?: number[];
  /** fio's offset: the job's I/O covers [offset, offset + size) of the file. */
  offset?: number;
  /** fio's zonemode=strided: zonesize bytes of I/O in each zone of zonerange (default zonesize),
   * then zoneskip bytes on. */
  zoneSize?: number;
  zoneRange?: number;
  zoneSkip?: number;
  /** fio's io_size: bytes of I/O, wrapping around the size (default the size). */
  ioSize?: number;
  /** fio's loops: the job's I/O this many times. */
  loops?: number;
  /** fio's rw=read:-8k / write:8k: bytes added to each sequential offset beyond bs. */
  seqAdd?: number;
  /** fio's write_lat_log (1, 2, 4: lat, clat, slat), write_bw_log (8), write_iops_log (16): the logs the runner keeps. */
  logMask?: number;
  /** fio's log_avg_msec: 0 (default) a line per I/O. */
  logAvgMs?: number;
  /** Set stop[0] to 1 (Atomics.store) to end the job early: the result is marked interrupted. */
  stop?: Int32Array;
  /** Tests only: bytes per layout pwrite, to force short writes. */
  layoutWriteCap?: number;
  /** fio's subjob number: the clones of one job (numjobs) draw other random offsets. */
  clone?: number;
  /** benchRunGroup: the result this job is reported in (jobs of one entry are summed). */
  entry?: number;
}

export interface BenchEngineOption {
  name: string;
  type: 'bool' | 'uint';
  help: string;
  default: number;
  min: number;
  max: number;
}

export interface BenchEngineInfo {
  name: string;
  /** Another spelling users type (posix_aio for posixaio). */
  alias?: string;
  async: boolean;
  /** Fault injection or a known delay, for tests: hidden from help and from 'all'. */
  testOnly: boolean;
  /** Runs when named (listed in help), not one of 'all': fio's other engines (null, pvsync, pvsync2). */
  namedOnly: boolean;
  /** Moves no data and opens no file (null): a job lays nothing out. */
  diskless: boolean;
  maxDepth?: number;
  maxDepthReason?: string;
  options: BenchEngineOption[];
}

export interface BenchProgress {
  phase: 'layout' | 'ramp' | 'run' | 'verify';
  ios: number;
  bytes: number;
  elapsedMs: number;
}

/** Latency statistics in ns; percentiles follow benchPercentileList. */
export interface BenchHistogram {
  n: number;
  min: number;
  max: number;
  mean: number;
  stddev: number;
  percentiles: number[];
  /** Samples below 2, 4, 10, 20, 50, 100, 250, 500, 750, 1000 ns, the same in us, then in ms up
   * to 2000, and at or above 2000 ms (32 counts: fio's latency_ns / _us / _ms buckets). */
  bins: number[];
  /** Every histogram bucket that counted something: [bucket, count, ...], the bucket by fio's
   * index (log-linear, 64 per power of two, exact below 128 ns). */
  buckets: number[];
}

/** fio's interval samples (one per 500 ms window). */
export interface BenchSamples {
  n: number;
  min: number;
  max: number;
  mean: number;
  stddev: number;
}

export interface BenchDirection {
  ios: number;
  bytes: number;
  /** Submission latency; null for synchronous engines (sync, psync, mmap). */
  slat: BenchHistogram | null;
  clat: BenchHistogram;
  lat: BenchHistogram;
  bwKiBSamples: BenchSamples;
  iopsSamples: BenchSamples;
}

export interface BenchResult {
  /** fio's sync figures: fsync/fdatasync calls and their latency. */
  sync?: { ios: number; lat: BenchHistogram };
  /** The queue depth a latency_target job ended at (absent without latency_target). */
  /** fio's steadystate: whether it was attained, its last criterion, and the window, oldest first. */
  steadystate?: { attained: boolean; criterion: number; deviation: number; slope: number; iops: number[]; bw: number[]; latNs: number[] };
  latencyDepth?: number;
  /** fio's log files' text, per job of the result that keeps logs (logMask), in job order. */
  logs?: Partial<Record<'lat' | 'clat' | 'slat' | 'bw' | 'iops', string>>[];
  engine: string;
  /** Set when the engine cannot run here (e.g. io_uring refused); nothing ran. */
  unavailable?: string;
  async: boolean;
  /** Bytes of the file each job addressed. */
  size: number;
  laidOutBytes: number;
  /** job.stop was set: what ran is partial. */
  interrupted: boolean;
  /** Stopped while laying out: what this run created is gone (false: nothing was, or it stayed). */
  layoutRemoved: boolean;
  runtimeNs: number;
  /** fio's job_runtime: the measured times of the jobs (threads) it sums, added up. */
  jobRuntimeNs: number;
  /** From the first job thread's loop start to the last one's end. */
  elapsedNs: number;
  /** When the measured time began (after the ramp), ms since the epoch: fio's job_start. */
  startUnixMs: number;
  /** The process's CPU while the job ran (helper threads included), context switches, faults. */
  usrSec: number;
  sysSec: number;
  ctx: number;
  majf: number;
  minf: number;
  verifiedBlocks: number;
  read: BenchDirection;
  write: BenchDirection;
  /** fio's iodepth_level / iodepth_submit / iodepth_complete counts (7 buckets each). */
  depth: { level: number[]; submit: number[]; complete: number[] };
}
