/* One job thread's state, shared by the thread setup (job.c), the measured loop (job_loop.c)
 * and the statistics it keeps (job_stats.c). Internal to native/bench. */
#ifndef IOLAB_BENCH_WORKER_H
#define IOLAB_BENCH_WORKER_H

#include <pthread.h>
#include <stdint.h>
#include <sys/resource.h>
#include <time.h>

#include "engine.h"
#include "job.h"

/* fio's flow: the jobs of one flow_id (at the same time) and the I/Os they issued. */
#define MAX_FLOWS 16
struct job_flow {
  unsigned id;
  long total_weight;  /* atomic: the weights of the jobs still running */
  uint64_t counter;   /* atomic */
};

/* fio's steadystate window of one job (or group): the last n intervals' IOPS, bytes and mean
 * completion latency, and what the unit had done at the last check. */
struct ss_window {
  unsigned n, head, filled;
  uint64_t iops[SS_MAX_INTERVALS], bw[SS_MAX_INTERVALS], lat[SS_MAX_INTERVALS];
  uint64_t prev_at, record_from, next_check, prev_ios, prev_bytes, prev_lat;
  int attained;
  double criterion, deviation, slope;
};

/* What the job's threads share: the stop flags and the process CPU window of the I/O loops. */
struct job_shared {
  struct job_flow flows[MAX_FLOWS];
  unsigned nflows;
  const int *abort;        /* a sibling thread could not start */
  /* fio's exitall: exited[j] set ends the threads of specs[j] (no interruption) */
  const struct job_spec *specs;
  unsigned nspecs;
  int *exited;
  uint64_t *ramp_done;     /* fio's ramp_size: bytes each spec's threads completed in their ramp (atomic) */
  struct ss_window *ss;    /* fio's steadystate: a window per spec (a group's is its first job's) */
  pthread_mutex_t lock;
  unsigned in_loop;        /* threads inside their I/O loop */
  int cpu_started;
  struct rusage cpu_from, cpu_to;
  uint64_t started_ns, ended_ns;
};

/* One file of a job over several (fio's filename=a:b): its own offsets, random map and verify
 * bitmap. The worker's fields hold the current file's; file_next() swaps them. */
struct file_state {
  int fd;
  uint64_t next_block, last_pos, map_left;
  uint64_t *randmap;
  unsigned char *written;
  int done;                /* its pass is over (fio's FIO_FILE_DONE): skipped until every file is */
};

struct worker {
  const struct job_spec *spec;
  struct job_shared *shared;
  unsigned index;
  uint64_t size;
  pthread_t thread;
  struct dir_stats *dir;  /* [2] */
  struct depth_stats depth;
  uint64_t ios_done, bytes_done;  /* read by the progress poller (relaxed atomics) */
  uint64_t clat_sum_ns;            /* the measured I/Os' completion latencies, for steadystate's lat */
  int phase;
  int interrupted;
  uint64_t runtime_ns;
  uint64_t verified;
  int unavailable;
  char reason[160];
  int async;
  struct job_error error;
  /* hot-loop state */
  uint64_t rand_state, next_block, nblocks, measure_from;
  double zipf_zetan, zipf_zeta2;  /* zipf's sums over the blocks (dist_init) */
  uint64_t last_pos;       /* rw=read:-8k: where the last sequential I/O ended (file offset; the region's start at first) */
  uint64_t zone_start, zone_bytes;  /* zonemode=strided: the zone's start in the region, the bytes done in it */
  uint64_t fill_state;     /* refill_buffers' data: its own stream, so the offsets stay as without it */
  uint64_t dedupe_state, unique_writes, last_start;  /* fio's dedupe: its draws, the new buffers so far, the last one */
  uint64_t *ws_starts, ws_n;  /* dedupe_mode=working_set: the first new buffers' starting numbers */
  unsigned char *written;  /* verify: bitmap of blocks written */
  /* fio's random map: a bit per block, set once the block was issued in this pass; NULL for
   * sequential jobs and norandommap. map_left blocks are still free in the pass. */
  uint64_t *randmap, map_left;
  int fd;                  /* the current file's fd: a new pass of a time_based job invalidates it */
  struct file_state *files;  /* nfiles of them when the job has several files, else NULL */
  unsigned nfiles, cur;      /* cur: the file the next I/O goes to */
  unsigned file_left;        /* I/Os to the current file before the next is picked (file_service_nr) */
  uint64_t file_rand;        /* the file picks' own random stream */
  double file_zetan, file_zeta2;  /* file_service_type=zipf: its sums over the files' ranges */
  uint64_t file_off;         /* the distribution's offset over those ranges (its center, or drawn) */
  uint64_t start_unix_ms;  /* CLOCK_REALTIME at measure_from (fio's job_start) */
  struct job_logs logs;    /* fio's log files (write_*_log) */
  /* fio's latency_target: the depth tried (lat_qd) between its bounds, the window's counts */
  unsigned lat_qd, lat_qd_low, lat_qd_high, lat_stable;
  int lat_end_run, lat_done;
  uint64_t lat_window_from, lat_ios, lat_ios_from, lat_failed;
  uint64_t rate_next_ns[2];  /* rate/rate_iops: when the next I/O of each direction may be issued */
  uint64_t writes_since_sync, syncs;
  /* fio's verify_backlog: the blocks written since the last check (file, offset), and a buffer to read them into */
  uint64_t *backlog_off;
  unsigned *backlog_file, backlog_n;
  void *backlog_buf;
  int sync_fd;             /* fsync=N syncs the file of the last write (fio's, too) */
  uint64_t issued_bytes;   /* bsrange/bssplit: bytes issued toward the size (their budget is in bytes) */
  struct job_flow *flow;   /* its flow_id's (NULL: no flow) */
  uint64_t flow_counter;
  struct histogram sync_lat;
  /* the current 500 ms sample window */
  uint64_t window_from, window_ios[2], window_bytes[2];
};

static inline uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t next_random(uint64_t *s) {  /* xorshift64* */
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545f4914f6cdd1dULL;
}

/* The longest I/O a job issues (bsrange's max, bssplit's largest, else bs). */
static inline unsigned job_max_len(const struct job_spec *s) {
  unsigned max = s->bs_max > s->bs ? s->bs_max : s->bs;
  for (int d = 0; d < 2; d++)
    for (unsigned i = 0; i < s->nsplit[d]; i++) if (s->split_bs[d][i] > max) max = s->split_bs[d][i];
  return max;
}
static inline int job_varlen(const struct job_spec *s) { return s->nsplit[0] != 0 || s->nsplit[1] != 0 || s->bs_max > s->bs; }

static inline int job_reads(enum rw_mode rw) { return rw != RW_WRITE && rw != RW_RANDWRITE; }
static inline int job_writes(enum rw_mode rw) { return rw != RW_READ && rw != RW_RANDREAD; }
static inline int job_random(enum rw_mode rw) {
  return rw == RW_RANDREAD || rw == RW_RANDWRITE || rw == RW_RANDRW;
}
static inline int job_stopped(const struct worker *w) {
  return __atomic_load_n(w->shared->abort, __ATOMIC_RELAXED) ||
         (w->spec->stop != NULL && __atomic_load_n(w->spec->stop, __ATOMIC_RELAXED)) ||
         (w->shared->exited != NULL && __atomic_load_n(&w->shared->exited[w->spec - w->shared->specs], __ATOMIC_RELAXED));
}

/* job_map.c */
int randmap_init(struct worker *w);
uint64_t randmap_next(struct worker *w);
/* Takes up to n free blocks that follow block in the map, stopping at the first taken one (fio's
 * axmap_set_nr): how many it took */
uint64_t randmap_take_after(struct worker *w, uint64_t block, uint64_t n);
/* job_dist.c: fio's random_distribution */
void dist_init(struct worker *w);
uint64_t dist_next_block(struct worker *w, int ddir);
void pass_start(struct worker *w);

/* job_map.c: fio's file_service_type: file_init picks the first file, file_next the file of the
 * next I/O */
void file_init(struct worker *w);
void file_next(struct worker *w);

/* job_latency.c: fio's latency_target search (a window at a depth, then deeper or shallower) */
void lat_new_window(struct worker *w, uint64_t now);
/* -1 when an I/O over a target every I/O must meet fails the job at depth 1 */
int lat_check_io(struct worker *w, const struct io_u *io, uint64_t t);
/* 1 when the depth is found and its last window starts (the measurement restarts) */
int lat_check_window(struct worker *w, uint64_t now);

/* job_offload.c: fio's io_submit_mode=offload, an engine over iodepth submit threads, each with
 * an instance of the job's engine (offload_setup sets it up over ctx) */
extern const struct engine_ops offload_ops;
int offload_setup(struct engine_ctx *ctx, const struct engine_ops *ops, int ioprio);

/* job_data.c: what writes carry without a verify pattern (refill_buffers, dedupe, compression) */
int write_data_varies(const struct job_spec *s);
void fill_write_data(struct worker *w, struct io_u *io);

/* job_steady.c: fio's steadystate, judged by the thread that waits for the jobs */
int ss_init(struct job_shared *sh);
void ss_check(struct job_shared *sh, struct worker *const *all, unsigned nworkers, uint64_t now);
void ss_result(const struct job_shared *sh, unsigned j, struct job_result *res);

/* job_pace.c: sleeps (the stopped-job one wakes at an exitall or Ctrl-C), rate slots, fsync=N, flow */
void job_stall(uint64_t ns);
void job_stall_unless_stopped(const struct worker *w, uint64_t ns);
void wait_for_rate(struct worker *w, const struct io_u *io);
int sync_if_due(struct worker *w);
int sync_due(const struct worker *w);
int flow_ahead(struct worker *w);

/* job_next.c: the next I/O (direction, offset, length, file; fill_buffer: what its buffer holds,
 * again when a paced mixed job turns it round); seq_add_done: a job with fio's offset modifier is over */
void prepare_io(struct worker *w, struct io_u *io);
void fill_buffer(struct worker *w, struct io_u *io);
int seq_add_done(const struct worker *w);

/* job_loop.c */
int run_loop(struct worker *w, const struct engine_ops *ops, struct engine_ctx *ctx);
int verify_pass(struct worker *w, void *buf);
/* job_verify.c: fio's verify_backlog (the blocks written lately, read back while the job runs)
 * and verify_dump; check_block is the one check of a block read back */
int backlog_init(struct worker *w);
void backlog_free(struct worker *w);
void backlog_note(struct worker *w, unsigned file, uint64_t offset);
int backlog_due(const struct worker *w);
int backlog_verify(struct worker *w);
/* the check of a read a verify job issued (its buffer poisoned first: fill_buffer) */
int verify_read_io(struct worker *w, const struct io_u *io);

/* Read buffers are filled with this before a verify read, so a read that moves no data cannot
 * pass on what an earlier I/O left in the buffer. */
#define VERIFY_POISON 0xa5

/* job_stats.c */
int worker_fail_errno(struct worker *w, int err, const char *syscall, uint64_t offset);
void depth_mark_level(struct depth_stats *d, unsigned inflight, unsigned n);
void depth_mark_submit(struct depth_stats *d, unsigned n);
void depth_mark_complete(struct depth_stats *d, unsigned n);
void depth_merge(struct depth_stats *into, const struct depth_stats *from);
void samples_init(struct sample_stats *s);
void samples_add(struct sample_stats *s, double v);
/* fio's pure sum (group_reporting's bw and IOPS): min, max, mean and squares added, samples counted */
void samples_sum(struct sample_stats *into, const struct sample_stats *from);
/* Closes the 500 ms window when it is over: one bw and one iops sample per direction the job does. */
void window_tick(struct worker *w, uint64_t now);
/* The process CPU window: the first thread entering its loop opens it, the last leaving closes it. */
void cpu_enter(struct job_shared *s);
void cpu_leave(struct job_shared *s);

#endif
