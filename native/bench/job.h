/* Benchmark jobs: lay out each job's file, run numjobs threads of one engine over it, merge their
 * statistics; several jobs at the same time, as fio runs the jobs between two stonewalls. Knows
 * no engine (engine.h is the only contract). Plain C. */
#ifndef IOLAB_BENCH_JOB_H
#define IOLAB_BENCH_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "bench/engine.h"
#include "bench/job_log.h"
#include "stats/histogram.h"

/* fio's random_distribution (random: uniform, the default) */
enum rand_dist { DIST_RANDOM = 0, DIST_ZIPF, DIST_PARETO, DIST_NORMAL, DIST_ZONED, DIST_ZONED_ABS };
#define DIST_MAX_ZONES 32

enum rw_mode { RW_READ, RW_WRITE, RW_RANDREAD, RW_RANDWRITE, RW_RANDRW, RW_READWRITE };

/* fio's steadystate criterion: what is judged (IOPS, bandwidth, mean completion latency), by its
 * slope or its largest deviation, as a percent of its mean or absolute */
enum ss_kind { SS_IOPS = 1, SS_BW = 2, SS_LAT = 4, SS_SLOPE = 8, SS_PCT = 16 };
#define SS_MAX_INTERVALS 1024

/* fio's file_service_type: how a job over several files picks the file of its next I/O */
enum file_service { FS_ROUNDROBIN = 0, FS_SEQUENTIAL, FS_RANDOM, FS_ZIPF, FS_PARETO, FS_NORMAL };

/* fio's fadvise_hint: 1 (the default) tells the kernel the access pattern the job's rw implies */
enum fadvise_hint { FADVISE_OFF = 0, FADVISE_BY_RW = 1, FADVISE_SEQUENTIAL = 2, FADVISE_RANDOM = 3 };

struct job_spec {
  const char *filename;
  /* fio's filename=a:b: the job's files (filenames[0] == filename), nfiles of them (0 or 1: filename
   * alone). size is split among them (each size / nfiles, as fio's), each laid out and addressed
   * on its own; the I/Os go to one file after the other (fio's file_service_type=roundrobin) */
  const char *const *filenames;
  unsigned nfiles;
  /* fio's file_service_type: roundrobin, sequential and random switch after file_service_nr I/Os
   * (a file done with its pass is skipped until every one is); zipf, pareto and normal pick each
   * I/O's file by that distribution over the files (param: theta, power, deviation; center 0..1
   * or -1), a file done starting its pass again, as fio's */
  enum file_service file_service;
  unsigned file_service_nr;
  double file_service_param, file_service_center;
  const struct engine_ops *ops;
  const void *engine_options;  /* ops->options_size bytes, filled from the engine's table */
  enum rw_mode rw;
  unsigned rwmixread;     /* percent of reads in randrw/readwrite */
  unsigned bs;             /* the block: every length a multiple of it, offsets aligned to it */
  /* fio's bsrange (bs=1k-4k): each I/O's length a multiple of bs up to bs_max; bssplit: one of
   * split_bs[d][] by its split_pct[d][] share, a split per direction (d: DDIR_READ, DDIR_WRITE),
   * in fio's order (by share, ascending). 0 / none: every I/O is bs long */
  unsigned bs_max, nsplit[2], split_bs[2][16], split_pct[2][16];
  unsigned block_align;    /* fio's blockalign (ba): a random offset a multiple of it (a multiple of bs; 0: bs) */
  unsigned iodepth;
  unsigned iodepth_batch;  /* commit after this many queued I/Os (fio's iodepth_batch_submit); 0 = 1 */
  /* fio's iodepth_batch_complete_min/_max: a full queue reaps at least min (0 counts as 1) and at
   * most max completions per getevents; max 0 = min (fio's default: 1 and 1) */
  unsigned iodepth_batch_complete_min, iodepth_batch_complete_max;
  unsigned numjobs;
  uint64_t size;          /* bytes of the file each job addresses */
  uint64_t runtime_ns;    /* 0: bounded by size / number_ios only */
  int time_based;         /* keep going (wrapping around) until runtime */
  uint64_t ramp_ns;       /* run this long before recording */
  uint64_t number_ios;    /* 0: no limit; as fio, at most the size's I/Os, none for time_based */
  int number_ios_wraps;   /* number_ios counts on past the size, pass after pass (bench latency's count) */
  int direct, invalidate, verify, force;
  int refill_buffers;     /* fio's refill_buffers: fresh random data before every write */
  /* fio's dedupe_percentage, dedupe_mode, dedupe_working_set_percentage and dedupe_global (this
   * job is dedupe_index of dedupe_jobs sharing the set), buffer_compress_percentage and
   * buffer_compress_chunk: what writes carry (job_data.c). 0: none */
  unsigned dedupe_pct, dedupe_mode, dedupe_ws_pct, dedupe_global, dedupe_index, dedupe_jobs;
  unsigned compress_pct, compress_chunk;
  int norandommap;        /* fio's norandommap: random blocks drawn with replacement, no map */
  int size_is_default;    /* no size was asked for: a foreign file or a block device is used whole */
  uint64_t file_size;     /* fio's filesize: the file laid out at this size, the I/O over [0, size); 0: size */
  int gtod_reduce;        /* fio's gtod_reduce: no latency or bw/IOPS samples recorded, no clock read per I/O for them */
  int end_fsync;          /* fio's end_fsync: a job that wrote fsyncs its file when its I/O is done */
  int end_syncfs;         /* fio 3.42's end_syncfs: ... syncfs()s its file system instead */
  /* fio 3.42's ramp_size: the job's first ramp_bytes are not recorded (its group's together, with
   * ramp_group: fio's group_reporting); they count in its size. 0: none */
  uint64_t ramp_bytes;
  int ramp_group;
  enum rand_dist dist;    /* fio's random_distribution: zipf/pareto/normal draw blocks with replacement (no map) */
  double dist_param;      /* zipf's theta, pareto's power, normal's deviation (percent) */
  double dist_center;     /* the second value (0..1): where the hottest blocks sit; -1: spread by a hash */
  /* zoned: zone i takes zone_access_pct[d][i] percent of direction d's I/Os over zone_size[d][i]
   * percent of the blocks (zoned_abs: bytes), in order; a split per direction, as fio's */
  unsigned nzones[2], zone_access_pct[2][DIST_MAX_ZONES];
  uint64_t zone_size[2][DIST_MAX_ZONES];
  uint64_t offset;        /* fio's offset: the job's I/O covers [offset, offset + size) of the file */
  /* fio's zonemode=strided: strided_size (zonesize) bytes of I/O in a zone of strided_range
   * (zonerange) bytes, then on strided_range + strided_skip (zoneskip) further (back to the start past the end). 0: no zones */
  uint64_t strided_size, strided_range, strided_skip;
  uint64_t io_limit;      /* fio's io_size: bytes of I/O per pass set, wrapping around the size (0: the size) */
  unsigned loops;         /* fio's loops: the job's I/O this many times (0 counts as 1) */
  int64_t seq_add;        /* fio's rw=read:-8k / write:8k: added to each sequential offset beyond bs */
  uint64_t rate_bytes[2]; /* fio's rate: bytes/s per direction (read, write); 0: no cap */
  uint64_t rate_iops[2];  /* fio's rate_iops: I/Os per second per direction; 0: no cap */
  int rate_poisson;       /* fio's rate_process=poisson: the gaps between I/Os drawn, exponential around the rate's */
  int offload;            /* fio's io_submit_mode=offload: iodepth submit threads run the I/Os (job_offload.c) */
  int open_sync;          /* fio's sync: 0, O_SYNC or O_DSYNC on the job's open */
  uint64_t thinktime_ns;  /* fio's thinktime: the job stalls this long before issuing each next I/O */
  int flow;               /* fio's flow: this job's weight among the jobs of its flow_id (0: none) */
  unsigned flow_id;
  uint64_t flow_sleep_ns; /* fio's flow_sleep: how long a job ahead of its share waits (0: yields) */
  unsigned fsync_every;   /* fio's fsync: an fsync after every this many writes (0: none) */
  int sync_is_fdatasync;  /* fio's fdatasync=N instead: fdatasync */
  unsigned log_mask;      /* fio's write_lat_log / write_bw_log / write_iops_log: LOG_MASK_* bits */
  unsigned log_avg_ms;    /* fio's log_avg_msec: 0 a line per I/O */
  enum fadvise_hint fadvise_hint;
  uint64_t randseed;      /* fio's randseed: the random offsets and rw mix (the verify pattern has its own PATTERN_KEY) */
  unsigned clone;         /* fio's subjob number: the clones of one job (numjobs) draw other offsets */
  const int *stop;        /* another thread sets *stop to end the job early (interrupted) */
  /* fio's exitall: when a thread of this job ends, the jobs exit_what names end too, not as
   * interrupted: EXIT_GROUP those of its groupid, EXIT_RUNNING every job running (fio's
   * exit_what=stonewall and all; the steps after it are the caller's). 0: no exitall */
  unsigned exit_what;
  unsigned groupid;       /* fio's groupid, for exit_what=group */
  int ioprio;             /* fio's prioclass/prio: the job thread's I/O priority (class << 13 | level); -1: none set */
  /* fio's latency_target: the job searches for the deepest queue (up to iodepth) at which
   * latency_percentile percent of the I/Os of each latency_window finish within the target;
   * latency_run keeps searching instead of a last window at the depth found. 0: off */
  uint64_t latency_target_ns, latency_window_ns;
  double latency_percentile;
  int latency_run;
  /* fio's verify_pattern: writes carry these bytes repeated from each I/O's start, and reads
   * (and the check after a write job) compare against them instead of the offset pattern;
   * the length divides bs. 0: the offset pattern */
  const unsigned char *verify_pattern;
  unsigned verify_pattern_len;
  int log_prio;           /* fio's log_prio: the logs show each I/O's priority value, not only whether it was realtime */
  /* fio's verify_backlog: after every that many blocks written, verify_backlog_batch of them
   * (0: all) are read back and checked before the job goes on; 0: only the pass at the end */
  unsigned verify_backlog, verify_backlog_batch;
  int verify_dump;        /* fio's verify_dump: a block that fails its verify is written to NAME.OFFSET.received/.expected */
  int log_offset;         /* fio's log_offset: the logs show each I/O's offset */
  int atomic;             /* fio's atomic: every write carries RWF_ATOMIC (engines flagged ENGINE_ATOMIC_WRITES) */
  struct cmdprio_entry prio_split[64];  /* fio's cmdprio_bssplit (libaio, io_uring), nprio_split entries */
  unsigned nprio_split;
  /* fio's steadystate: the job (its group's jobs together, with ss_group: group_reporting) ends
   * once its window of ss_dur meets the criterion ss_kind under ss_limit, judged every
   * ss_interval from ss_ramp on (job_steady.c). ss_dur 0: off */
  unsigned ss_kind;
  double ss_limit;
  uint64_t ss_dur_ns, ss_ramp_ns, ss_interval_ns;
  int ss_group;
  uint32_t layout_write_cap;  /* tests only: bytes per layout pwrite, to force short writes (0: none) */
};

enum exit_what { EXIT_NONE = 0, EXIT_GROUP, EXIT_RUNNING };
enum dedupe_mode { DEDUPE_REPEAT = 0, DEDUPE_WORKING_SET };

enum job_error_kind { JOB_OK = 0, JOB_ERRNO, JOB_USER, JOB_VERIFY };

struct job_error {
  enum job_error_kind kind;
  int err;              /* JOB_ERRNO */
  const char *syscall;  /* JOB_ERRNO */
  uint64_t offset;      /* JOB_VERIFY: first differing byte; JOB_ERRNO: I/O offset or UINT64_MAX */
  char message[320];    /* JOB_USER / JOB_VERIFY */
};

/* Running statistics of interval samples (fio's bw/iops samples, one per 500 ms window). */
struct sample_stats {
  uint64_t n;
  double min, max, mean, m2;
};

struct dir_stats {
  uint64_t ios, bytes;
  struct histogram slat, clat, lat;
  struct sample_stats bw_kib, iops;  /* per 500 ms window */
};

/* fio's iodepth_level / iodepth_submit / iodepth_complete counters (7 buckets each). */
#define DEPTH_BUCKETS 7
struct depth_stats {
  uint64_t level[DEPTH_BUCKETS];     /* I/Os submitted, by I/Os in flight: 1 2 4 8 16 32 >=64 */
  uint64_t submit[DEPTH_BUCKETS];    /* submit calls, by I/Os they carried: 0 4 8 16 32 64 >=64 */
  uint64_t complete[DEPTH_BUCKETS];  /* reaps, by I/Os they returned: the same buckets */
};

struct job_result {
  int unavailable;       /* the engine cannot run here; reason says why */
  char reason[160];
  struct job_error error;
  int async;             /* engine queued (slat measured) */
  int interrupted;       /* *spec->stop was set: what ran is partial */
  struct dir_stats dir[2];
  struct depth_stats depth;
  uint64_t runtime_ns;   /* measured time (after ramp), longest job */
  uint64_t job_runtime_ns;  /* fio's job_runtime: the jobs' (threads') measured times summed, as group_reporting sums them */
  uint64_t elapsed_ns;   /* from the first thread's start to the last one's end */
  uint64_t start_unix_ms;  /* CLOCK_REALTIME when the measured time began (after ramp): fio's job_start */
  /* the process's CPU, context switches and faults while the job threads ran their I/O loops:
   * counts helper threads (POSIX AIO, SQPOLL, io-wq) that per-thread figures miss. Jobs run at
   * the same time share one window, split between them by their number of threads. */
  double usr_sec, sys_sec;
  uint64_t ctx, majf, minf;
  uint64_t verified_blocks;
  uint64_t laid_out_bytes;
  uint64_t size;         /* bytes each job addressed, over all its files (may be less than asked on a short file) */
  int layout_removed;    /* interrupted layout: the file this run created was removed */
  int owned;             /* the file is iolab's (its mark describes it) */
  uint64_t syncs;        /* fsync/fdatasync calls (fio's sync total_ios) */
  unsigned latency_depth; /* the queue depth a latency_target job ended at (else 0) */
  struct histogram sync_lat;  /* their latency (fio's sync lat_ns) */
  /* fio's steadystate: whether it was attained, the last criterion, and the window (oldest first) */
  struct {
    int attained;
    unsigned n;
    double criterion, deviation, slope;
    uint64_t iops[SS_MAX_INTERVALS], bw[SS_MAX_INTERVALS], lat[SS_MAX_INTERVALS];
  } ss;
  struct log_text logs[LOG_KINDS];  /* fio's log files' text, the job's threads one after another; freed by the caller */
};

enum job_phase { PHASE_LAYOUT = 0, PHASE_RAMP, PHASE_RUN, PHASE_VERIFY };

/* Called about every 200 ms from the thread that called job_run. */
typedef void (*job_progress_fn)(void *arg, enum job_phase phase, uint64_t ios, uint64_t bytes,
                                uint64_t elapsed_ns);

/* Runs the job. Returns 0 (result filled, maybe unavailable) or -1 (result->error set). */
int job_run(const struct job_spec *spec, struct job_result *result, job_progress_fn progress,
            void *arg);
/* Runs n jobs at the same time: their files are laid out first, one after another (fio's
 * create_serialize), then every job's threads start together. results[i] is specs[i]'s.
 * Returns 0, or -1 when a result has its error set (a failed layout runs none of them). */
int job_run_group(const struct job_spec *specs, unsigned n, struct job_result *results,
                  job_progress_fn progress, void *arg);
/* Adds what from measured into into (fio's group_reporting): counts, histograms, samples and
 * CPU summed, the longest runtime, the earliest start. */
void job_result_merge(struct job_result *into, const struct job_result *from);

/* layout.c: prepares the file: creates and lays it out when missing or short, enforces
 * ownership (see layout.c). 0, -1 (error set) or -2 (stopped; what this run created is gone,
 * or res->layout_removed = 0 when it could not be). *size may shrink to what a short foreign file
 * holds. */
int layout_prepare(const struct job_spec *spec, uint64_t *size, struct job_result *res,
                   job_progress_fn progress, void *arg);
/* layout.c: the job's file, or each of its files (fio's filename=a:b) at an equal share of its
 * size; a diskless engine's none. 0, -1 or -2 as layout_prepare. */
int layout_job(const struct job_spec *spec, uint64_t *size, struct job_result *res, job_progress_fn progress, void *arg);
/* After iolab (or fio, on iolab's behalf) wrote into its file: records the file as it is now
 * (inode, size, mtime, sampled content), in the state "written" unless it still holds the
 * layout pattern everywhere (pattern = 1). No-op for a file iolab does not own. */
void layout_mark_written(const char *filename, int pattern);
/* layout.c: a file name as the CLI shows one (a newline as \n, a control byte as \xHH), into buf. */
const char *shown_name(char *buf, size_t len, const char *name);


#endif
