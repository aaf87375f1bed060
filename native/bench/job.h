/* One benchmark job: lay out the file, run numjobs threads of one engine over it, merge their
 * statistics. Knows no engine (engine.h is the only contract). Plain C. */
#ifndef IOLAB_BENCH_JOB_H
#define IOLAB_BENCH_JOB_H

#include <stdint.h>

#include "histogram.h"

enum rw_mode { RW_READ, RW_WRITE, RW_RANDREAD, RW_RANDWRITE, RW_RANDRW, RW_READWRITE };

struct job_spec {
  const char *filename;
  const char *engine;
  enum rw_mode rw;
  unsigned rwmixread;     /* percent of reads in randrw/readwrite */
  unsigned bs;
  unsigned iodepth;
  unsigned iodepth_batch;  /* commit after this many queued I/Os (fio's iodepth_batch_submit); 0 = 1 */
  unsigned numjobs;
  uint64_t size;          /* bytes of the file each job addresses */
  uint64_t runtime_ns;    /* 0: bounded by size / number_ios only */
  int time_based;         /* keep going (wrapping around) until runtime */
  uint64_t ramp_ns;       /* run this long before recording */
  uint64_t number_ios;    /* 0: no limit */
  int direct, invalidate, fixedbufs, registerfiles, sqthread_poll, verify, force;
  uint64_t seed;          /* offsets/mix; the verify pattern uses PATTERN_SEED */
};

enum job_error_kind { JOB_OK = 0, JOB_ERRNO, JOB_USER, JOB_VERIFY };

struct job_error {
  enum job_error_kind kind;
  int err;              /* JOB_ERRNO */
  const char *syscall;  /* JOB_ERRNO */
  uint64_t offset;      /* JOB_VERIFY: first differing byte; JOB_ERRNO: I/O offset or UINT64_MAX */
  char message[320];    /* JOB_USER / JOB_VERIFY */
};

struct dir_stats {
  uint64_t ios, bytes;
  struct histogram slat, clat, lat;
};

struct job_result {
  int unavailable;       /* the engine cannot run here; reason says why */
  char reason[160];
  struct job_error error;
  int async;             /* engine queued (slat measured) */
  struct dir_stats dir[2];
  uint64_t runtime_ns;   /* measured time (after ramp), longest job */
  double usr_sec, sys_sec;  /* CPU of the job threads */
  uint64_t verified_blocks;
  uint64_t laid_out_bytes;
  uint64_t size;         /* bytes each job addressed (may be less than asked on a short file) */
};

enum job_phase { PHASE_LAYOUT = 0, PHASE_RAMP, PHASE_RUN, PHASE_VERIFY };

/* Called about every 200 ms from the thread that called job_run. */
typedef void (*job_progress_fn)(void *arg, enum job_phase phase, uint64_t ios, uint64_t bytes,
                                uint64_t elapsed_ns);

/* Runs the job. Returns 0 (result filled, maybe unavailable) or -1 (result->error set). */
int job_run(const struct job_spec *spec, struct job_result *result, job_progress_fn progress,
            void *arg);

/* Prepares the file: creates and lays it out when missing or short, enforces ownership.
 * layout.c. 0 or -1 (error set). *size may shrink to what a short foreign file holds. */
int layout_prepare(const struct job_spec *spec, uint64_t *size, uint64_t *laid_out,
                   struct job_error *error, job_progress_fn progress, void *arg);
/* Records in the file's ownership mark that a job wrote non-pattern data. */
void layout_mark_written(const char *filename);

#endif
