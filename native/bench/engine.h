/* The engine contract, modelled on fio's ioengine_ops: an engine knows how to move a batch of
 * I/Os and nothing else. The job runner (job.c) owns timing, offsets, depth and statistics.
 * Plain C, no Node headers. Adding an engine: one engine_<name>.c and one line in engines.c. */
#ifndef IOLAB_BENCH_ENGINE_H
#define IOLAB_BENCH_ENGINE_H

#include <stddef.h>
#include <stdint.h>

enum io_ddir { DDIR_READ = 0, DDIR_WRITE = 1 };

/* One I/O unit: a buffer the runner owns for the whole job, reused after each completion. */
struct io_u {
  unsigned index;     /* position in the job's io_u array (fixed-buffer index) */
  void *buf;
  uint64_t offset;
  uint32_t len;
  int ddir;
  int64_t result;     /* bytes moved, or -errno; set by the engine before completion */
  uint64_t start_ns;  /* when the runner handed it to queue() */
  uint64_t issue_ns;  /* when commit() returned (async engines) */
  void *engine_data;  /* per-io state an engine may keep (iocb, aiocb) */
};

/* What an engine is given; engine_data holds its private state between calls. */
struct engine_ctx {
  int fd;
  const char *filename;
  uint64_t file_size;     /* bytes the job addresses: [0, file_size) */
  unsigned depth;
  unsigned bs;
  int direct;
  int writable;           /* opened for writing (the job writes) */
  int fixedbufs;
  int registerfiles;
  int sqthread_poll;
  struct io_u *io_us;     /* all of the job's units (depth of them) */
  void *engine_data;
  /* setup() failure: why the engine cannot run here (shown as "unavailable: <reason>") */
  char reason[160];
  /* error of a failed call: errno + syscall name, for the runner to report */
  int err;
  const char *syscall;
};

enum q_status { Q_QUEUED = 0, Q_COMPLETED = 1, Q_ERROR = -1 };

struct engine_ops {
  const char *name;
  /* Prepares the engine for ctx (fd already open). 0, or -1 with ctx->reason set. */
  int (*setup)(struct engine_ctx *ctx);
  /* Queues one I/O. Q_COMPLETED: done synchronously (result set). Q_QUEUED: will complete
   * through getevents. Q_ERROR: ctx->err/syscall set. */
  int (*queue)(struct engine_ctx *ctx, struct io_u *io);
  /* Sends everything queued since the last commit. 0 or -1 (ctx->err set). May be NULL. */
  int (*commit)(struct engine_ctx *ctx);
  /* Waits for at least min completions (up to max). Returns how many, or -1 (ctx->err set). */
  int (*getevents)(struct engine_ctx *ctx, unsigned min, unsigned max);
  /* The i-th completion of the last getevents, result filled in. */
  struct io_u *(*event)(struct engine_ctx *ctx, unsigned i);
  /* Flushes what the engine buffered (mmap: msync). 0 or -1 (ctx->err set). May be NULL. */
  int (*flush)(struct engine_ctx *ctx);
  /* Releases what setup() took; safe after a failed setup. */
  void (*cleanup)(struct engine_ctx *ctx);
};

/* Engine table (engines.c). NULL when the name is unknown. */
const struct engine_ops *engine_find(const char *name);
/* Names of all engines, NULL-terminated. */
extern const char *const engine_names[];

#define ENGINE_ERR(ctx, e, call) ((ctx)->err = (e), (ctx)->syscall = (call), -1)

#endif
