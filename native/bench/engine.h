/* The engine contract, modelled on fio's ioengine_ops: an engine knows how to move a batch of
 * I/Os and nothing else. The job runner (job.c) owns timing, offsets, depth and statistics.
 * Each engine is one engine_<name>.c that fills a struct engine_ops, declares its own options
 * (name, type, help, offset into its private options struct, as fio's engines do) and registers
 * itself with ENGINE_REGISTER. Adding an engine or a knob touches that file only: the binding
 * and the CLI read the tables. Plain C, no Node headers. */
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
  unsigned ioprio;    /* the I/O's priority (class << 13 | level): the job's, or cmdprio's (cmdprio.h) */
  int fd;             /* the file it targets: one of ctx->fds (a job may run over several files) */
  unsigned file;      /* that file's index in ctx->fds */
};

/* fio's cmdprio_bssplit: of a direction's I/Os of bs bytes, perc percent go at prio (-1: the
 * engine's cmdprio_class/cmdprio/cmdprio_hint); a direction's entries of one bs add up to at most 100 */
struct cmdprio_entry {
  int ddir;
  uint32_t bs;
  unsigned perc;
  int prio;
};

/* What an engine is given; engine_data holds its private state between calls. */
struct engine_ctx {
  int fd;                 /* the job's first file (its only one, but for fio's filename=a:b) */
  const char *filename;
  const int *fds;         /* every file of the job, nfiles of them (fds[0] == fd); an I/O names its own */
  unsigned nfiles;
  uint64_t file_size;     /* bytes the job addresses in each file: [0, file_size) */
  unsigned depth;
  unsigned bs;
  int direct;
  int writable;           /* opened for writing (the job writes) */
  int atomic;             /* fio's atomic: writes carry RWF_ATOMIC (an engine flagged ENGINE_ATOMIC_WRITES) */
  const struct cmdprio_entry *prio_split;  /* fio's cmdprio_bssplit, nprio_split entries (0: cmdprio_percentage) */
  unsigned nprio_split;
  const void *options;    /* the engine's own options struct, filled from its option table */
  struct io_u *io_us;     /* all of the job's units (depth of them) */
  void *engine_data;
  /* setup() failure: why the engine cannot run here (shown as "unavailable: <reason>") */
  char reason[160];
  /* error of a failed call: errno + syscall name, for the runner to report */
  int err;
  const char *syscall;
};

/* queue() results, with fio's values. BUSY: the engine took nothing (its queue is full); the
 * runner commits and reaps, then offers the same I/O again. ENGINE_Q_ERROR: ctx->err set. */
enum fio_q_status { FIO_Q_COMPLETED = 0, FIO_Q_QUEUED = 1, FIO_Q_BUSY = 2 };
#define ENGINE_Q_ERROR (-1)

/* One engine option: a whole number (a flag is one in [0, 1]) stored as `unsigned` at offset
 * in the engine's options struct. The CLI spells it --<name>, as fio does. */
enum engine_opt_type { ENGINE_OPT_BOOL = 0, ENGINE_OPT_UINT = 1 };
struct engine_option {
  const char *name;
  enum engine_opt_type type;
  const char *help;
  size_t offset;
  unsigned def, min, max;
};

enum engine_flags {
  ENGINE_ASYNC = 1,      /* queues (has commit/getevents/event); slat is measured */
  ENGINE_TEST_ONLY = 2,  /* fault injection / known delay for tests: hidden from help and 'all' */
  ENGINE_NAMED = 4,      /* runs when named (and in help), not one of 'all': fio's other engines */
  ENGINE_DISKLESS = 8,   /* moves no data and opens no file (fio's FIO_DISKLESSIO): no layout, fd -1 */
  ENGINE_ATOMIC_WRITES = 16,  /* can issue a write with RWF_ATOMIC (fio's FIO_ATOMICWRITES) */
};

/* The kernel's per-I/O flags of preadv2/pwritev2 (and io_uring's rw_flags, libaio's
 * aio_rw_flags), for headers older than the kernel */
#ifndef RWF_ATOMIC
#define RWF_ATOMIC 0x00000040
#endif
#ifndef RWF_DONTCACHE
#define RWF_DONTCACHE 0x00000080
#endif

struct engine_ops {
  const char *name;
  const char *alias;        /* another spelling users type for it (NULL: none) */
  unsigned flags;
  unsigned list_order;      /* place in listings and 'all' (ascending) */
  unsigned max_depth;       /* deepest queue the engine can run (0: the runner's limit) */
  const char *max_depth_why;  /* what imposes max_depth, for the error message */
  const struct engine_option *options;  /* terminated by an entry with name NULL; may be NULL */
  size_t options_size;      /* sizeof the engine's options struct */
  /* Prepares the engine for ctx (fd already open). 0, or -1 with ctx->reason set. */
  int (*setup)(struct engine_ctx *ctx);
  /* Queues one I/O: FIO_Q_COMPLETED (done, result set), FIO_Q_QUEUED (completes through
   * getevents), FIO_Q_BUSY, or ENGINE_Q_ERROR. */
  int (*queue)(struct engine_ctx *ctx, struct io_u *io);
  /* Sends everything queued since the last commit. 0 or -1 (ctx->err set). May be NULL. */
  int (*commit)(struct engine_ctx *ctx);
  /* Waits for at least min completions, up to max (an engine may return more, up to the depth,
   * as fio's posixaio does). Returns how many, or -1 (ctx->err set). */
  int (*getevents)(struct engine_ctx *ctx, unsigned min, unsigned max);
  /* The i-th completion of the last getevents, result filled in. */
  struct io_u *(*event)(struct engine_ctx *ctx, unsigned i);
  /* Flushes what the engine buffered (mmap: msync). 0 or -1 (ctx->err set). May be NULL. */
  int (*flush)(struct engine_ctx *ctx);
  /* Releases what setup() took; safe after a failed setup. */
  void (*cleanup)(struct engine_ctx *ctx);
};

/* The registry (engines.c). Engines register from a constructor before any lookup. */
void engine_register(const struct engine_ops *ops);
/* By name or alias; NULL when unknown. */
const struct engine_ops *engine_find(const char *name);
/* The i-th registered engine in list order, NULL past the last. */
const struct engine_ops *engine_at(unsigned i);
/* Fills opts (ops->options_size bytes) with the defaults of ops's option table. */
void engine_default_options(const struct engine_ops *ops, void *opts);

#define ENGINE_REGISTER(ops) \
  __attribute__((constructor)) static void register_##ops(void) { engine_register(&ops); }

#define ENGINE_ERR(ctx, e, call) ((ctx)->err = (e), (ctx)->syscall = (call), -1)

#endif
