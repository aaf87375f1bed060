/* io_uring: one ring per job, set up as fio's io_uring engine sets up its own, so the two run the
 * same kernel path: SQ and CQ sized to the depth (CQSIZE), COOP_TASKRUN, SINGLE_ISSUER and
 * DEFER_TASKRUN (completions run in our thread when we enter, not as interrupting task work),
 * each dropped in fio's order when the kernel refuses it. READ/WRITE by default (fio's
 * nonvectored=-1 picks them where the kernel has them); fio's knobs fixedbufs (registered
 * buffers, READ_FIXED/WRITE_FIXED), registerfiles (IOSQE_FIXED_FILE) and sqthread_poll (a
 * kernel thread polls the SQ). Completions already in the CQ are reaped without a syscall. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include <liburing.h>

#include "cmdprio.h"
#include "engine.h"

#ifndef IORING_SETUP_COOP_TASKRUN
#define IORING_SETUP_COOP_TASKRUN (1U << 8)
#endif
#ifndef IORING_SETUP_SINGLE_ISSUER
#define IORING_SETUP_SINGLE_ISSUER (1U << 12)
#endif
#ifndef IORING_SETUP_DEFER_TASKRUN
#define IORING_SETUP_DEFER_TASKRUN (1U << 13)
#endif

/* IORING_MAX_ENTRIES in the kernel: io_uring_setup refuses a deeper ring with EINVAL */
#define URING_MAX_ENTRIES 32768

struct uring_options {
  unsigned fixedbufs, registerfiles, sqthread_poll, hipri, uncached;
  struct cmdprio_options cmdprio;
};

static const struct engine_option uring_option_table[] = {
    {"fixedbufs", ENGINE_OPT_BOOL, "io_uring: registered buffers (READ_FIXED/WRITE_FIXED)",
     offsetof(struct uring_options, fixedbufs), 0, 0, 1},
    {"registerfiles", ENGINE_OPT_BOOL, "io_uring: registered file (IOSQE_FIXED_FILE)",
     offsetof(struct uring_options, registerfiles), 0, 0, 1},
    {"sqthread_poll", ENGINE_OPT_BOOL, "io_uring: a kernel thread polls the SQ (SQPOLL)",
     offsetof(struct uring_options, sqthread_poll), 0, 0, 1},
    {"hipri", ENGINE_OPT_BOOL, "io_uring: polled completions (IOPOLL: O_DIRECT on a device with poll queues, else EOPNOTSUPP, as in fio)",
     offsetof(struct uring_options, hipri), 0, 0, 1},
    {"uncached", ENGINE_OPT_UINT, "RWF_DONTCACHE on buffered I/O: read pages dropped after the copy, writes written back at once (fio 3.42's)",
     offsetof(struct uring_options, uncached), 0, 0, 1},
    CMDPRIO_OPTIONS(struct uring_options, cmdprio, "io_uring"),
    {NULL},
};

struct uring_data {
  struct io_uring ring;
  uint64_t prio_state;  /* cmdprio's draws */
  int ring_ok;
  int defer_taskrun;
  struct io_u **events;
};

static int uring_init(struct uring_data *d, struct engine_ctx *ctx) {
  const struct uring_options *o = ctx->options;
  struct io_uring_params p;
  memset(&p, 0, sizeof(p));
  /* SQPOLL's idle time stays the kernel's default (1 s), as fio leaves it */
  if (o->sqthread_poll) p.flags |= IORING_SETUP_SQPOLL;
  if (o->hipri) p.flags |= IORING_SETUP_IOPOLL;  /* fio's hipri: completions polled, not interrupted */
  p.flags |= IORING_SETUP_CQSIZE;  /* no more CQ entries than I/Os in flight */
  p.cq_entries = ctx->depth;
  p.flags |= IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
  for (;;) {
    int ret = io_uring_queue_init_params(ctx->depth, &d->ring, &p);
    if (ret == 0) break;
    if (ret != -EINVAL) return ret;
    /* an older kernel (or SQPOLL, which DEFER_TASKRUN excludes): drop what it refuses */
    if (p.flags & IORING_SETUP_DEFER_TASKRUN) p.flags &= ~(IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_SINGLE_ISSUER);
    else if (p.flags & IORING_SETUP_COOP_TASKRUN) p.flags &= ~IORING_SETUP_COOP_TASKRUN;
    else if (p.flags & IORING_SETUP_CQSIZE) p.flags &= ~IORING_SETUP_CQSIZE;
    else return ret;
  }
  d->defer_taskrun = (p.flags & IORING_SETUP_DEFER_TASKRUN) != 0;
  return 0;
}

static int uring_setup(struct engine_ctx *ctx) {
  struct uring_data *d = calloc(1, sizeof(*d));
  if (d == NULL) return ENGINE_ERR(ctx, ENOMEM, "calloc");
  ctx->engine_data = d;
  d->prio_state = 0x853c49e6748fea9bULL;
  d->events = calloc(ctx->depth, sizeof(*d->events));
  if (d->events == NULL) return ENGINE_ERR(ctx, ENOMEM, "calloc");
  int ret = uring_init(d, ctx);
  if (ret < 0) {
    snprintf(ctx->reason, sizeof(ctx->reason), "io_uring_setup refused: %s", strerror(-ret));
    return -1;
  }
  d->ring_ok = 1;
  const struct uring_options *o = ctx->options;
  if (o->fixedbufs) {
    struct iovec *iov = calloc(ctx->depth, sizeof(*iov));
    if (iov == NULL) return ENGINE_ERR(ctx, ENOMEM, "calloc");
    for (unsigned i = 0; i < ctx->depth; i++) {
      iov[i].iov_base = ctx->io_us[i].buf;
      iov[i].iov_len = ctx->bs;
    }
    ret = io_uring_register_buffers(&d->ring, iov, ctx->depth);
    free(iov);
    if (ret < 0) {
      snprintf(ctx->reason, sizeof(ctx->reason), "io_uring_register_buffers: %s", strerror(-ret));
      return -1;
    }
  }
  if (o->registerfiles) {
    ret = io_uring_register_files(&d->ring, ctx->fds, ctx->nfiles);
    if (ret < 0) {
      snprintf(ctx->reason, sizeof(ctx->reason), "io_uring_register_files: %s", strerror(-ret));
      return -1;
    }
  }
  return 0;
}

static int uring_queue(struct engine_ctx *ctx, struct io_u *io) {
  struct uring_data *d = ctx->engine_data;
  const struct uring_options *o = ctx->options;
  struct io_uring_sqe *sqe = io_uring_get_sqe(&d->ring);
  if (sqe == NULL) return FIO_Q_BUSY;  /* the SQ is full until the runner commits */
  int fd = o->registerfiles ? (int)io->file : io->fd;  /* a registered file by its index */
  if (o->fixedbufs) {
    if (io->ddir == DDIR_READ) io_uring_prep_read_fixed(sqe, fd, io->buf, io->len, io->offset, (int)io->index);
    else io_uring_prep_write_fixed(sqe, fd, io->buf, io->len, io->offset, (int)io->index);
  } else if (io->ddir == DDIR_READ) {
    io_uring_prep_read(sqe, fd, io->buf, io->len, io->offset);
  } else {
    io_uring_prep_write(sqe, fd, io->buf, io->len, io->offset);
  }
  if (o->registerfiles) sqe->flags |= IOSQE_FIXED_FILE;
  if (o->uncached && !ctx->direct) sqe->rw_flags |= RWF_DONTCACHE;  /* as fio: a buffered I/O only */
  if (ctx->atomic && io->ddir == DDIR_WRITE) sqe->rw_flags |= RWF_ATOMIC;
  if (cmdprio_pick(ctx, &o->cmdprio, &d->prio_state, io)) sqe->ioprio = (uint16_t)io->ioprio;
  io_uring_sqe_set_data(sqe, io);
  return FIO_Q_QUEUED;
}

static int uring_commit(struct engine_ctx *ctx) {
  struct uring_data *d = ctx->engine_data;
  for (;;) {
    /* with DEFER_TASKRUN, also run completions that are ready so getevents finds them in the CQ */
    int ret = d->defer_taskrun ? io_uring_submit_and_get_events(&d->ring) : io_uring_submit(&d->ring);
    if (ret >= 0) return 0;
    if (ret != -EINTR && ret != -EAGAIN) return ENGINE_ERR(ctx, -ret, "io_uring_enter");
  }
}

static int uring_getevents(struct engine_ctx *ctx, unsigned min, unsigned max) {
  struct uring_data *d = ctx->engine_data;
  unsigned got = 0;
  for (;;) {
    struct io_uring_cqe *cqe;
    unsigned head, seen = 0;
    io_uring_for_each_cqe(&d->ring, head, cqe) {
      if (got == max) break;
      struct io_u *io = io_uring_cqe_get_data(cqe);
      io->result = cqe->res;
      d->events[got++] = io;
      seen++;
    }
    io_uring_cq_advance(&d->ring, seen);
    if (got >= min) return (int)got;
    int ret = io_uring_wait_cqe(&d->ring, &cqe);  /* enters only when the CQ is empty */
    if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -ETIME)
      return ENGINE_ERR(ctx, -ret, "io_uring_enter");
  }
}

static struct io_u *uring_event(struct engine_ctx *ctx, unsigned i) {
  struct uring_data *d = ctx->engine_data;
  return d->events[i];
}

static void uring_cleanup(struct engine_ctx *ctx) {
  struct uring_data *d = ctx->engine_data;
  if (d == NULL) return;
  if (d->ring_ok) io_uring_queue_exit(&d->ring);
  free(d->events);
  free(d);
  ctx->engine_data = NULL;
}

static const struct engine_ops engine_io_uring = {
    .name = "io_uring", .alias = "uring", .flags = ENGINE_ASYNC | ENGINE_ATOMIC_WRITES, .list_order = 30,
    .max_depth = URING_MAX_ENTRIES, .max_depth_why = "io_uring's entry limit, IORING_MAX_ENTRIES",
    .options = uring_option_table, .options_size = sizeof(struct uring_options),
    .setup = uring_setup, .queue = uring_queue, .commit = uring_commit,
    .getevents = uring_getevents, .event = uring_event, .cleanup = uring_cleanup,
};
ENGINE_REGISTER(engine_io_uring)
