/* libaio: Linux native AIO. queue() only prepares an iocb; commit() sends the batch with as few
 * io_submit calls as the kernel allows; getevents() first takes what the kernel already put in
 * the completion ring mapped into our address space (no syscall), and asks io_getevents only for
 * what is missing (fio's userspace_reap). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libaio.h>

#include "cmdprio.h"
#include "engine.h"

/* The kernel's completion ring, mapped at the io_context_t address (linux/fs/aio.c). */
struct aio_ring {
  unsigned id, nr, head, tail, magic, compat_features, incompat_features, header_length;
  struct io_event io_events[];
};
#define AIO_RING_MAGIC 0xa10a10a1

struct libaio_options {
  struct cmdprio_options cmdprio;
};

static const struct engine_option libaio_option_table[] = {
    CMDPRIO_OPTIONS(struct libaio_options, cmdprio, "libaio"),
    {NULL},
};

/* linux/aio_abi.h: the iocb's aio_reqprio is its I/O priority */
#ifndef IOCB_FLAG_IOPRIO
#define IOCB_FLAG_IOPRIO (1 << 1)
#endif

struct libaio_data {
  io_context_t ctx;
  uint64_t prio_state;  /* cmdprio's draws */
  int ctx_ok;
  struct iocb *iocbs;        /* one per io_u, by index */
  struct iocb **pending;     /* queued, not yet submitted */
  unsigned npending;
  struct io_event *events;
};

static int libaio_setup(struct engine_ctx *ctx) {
  struct libaio_data *d = calloc(1, sizeof(*d));
  if (d == NULL) return ENGINE_ERR(ctx, ENOMEM, "calloc");
  ctx->engine_data = d;
  d->prio_state = 0x853c49e6748fea9bULL;
  d->iocbs = calloc(ctx->depth, sizeof(*d->iocbs));
  d->pending = calloc(ctx->depth, sizeof(*d->pending));
  d->events = calloc(ctx->depth, sizeof(*d->events));
  if (d->iocbs == NULL || d->pending == NULL || d->events == NULL) return ENGINE_ERR(ctx, ENOMEM, "calloc");
  int ret = io_setup((int)ctx->depth, &d->ctx);  /* libaio returns -errno */
  if (ret < 0) {
    snprintf(ctx->reason, sizeof(ctx->reason), "io_setup failed: %s", strerror(-ret));
    return -1;
  }
  d->ctx_ok = 1;
  return 0;
}

static int libaio_queue(struct engine_ctx *ctx, struct io_u *io) {
  struct libaio_data *d = ctx->engine_data;
  struct iocb *cb = &d->iocbs[io->index];
  if (io->ddir == DDIR_READ) io_prep_pread(cb, io->fd, io->buf, io->len, (long long)io->offset);
  else io_prep_pwrite(cb, io->fd, io->buf, io->len, (long long)io->offset);
  if (ctx->atomic && io->ddir == DDIR_WRITE) cb->aio_rw_flags |= RWF_ATOMIC;
  const struct libaio_options *o = ctx->options;
  if (cmdprio_pick(ctx, &o->cmdprio, &d->prio_state, io)) {
    cb->aio_reqprio = (short)io->ioprio;
    cb->u.c.flags |= IOCB_FLAG_IOPRIO;
  }
  cb->data = io;
  d->pending[d->npending++] = cb;
  return FIO_Q_QUEUED;
}

static int libaio_commit(struct engine_ctx *ctx) {
  struct libaio_data *d = ctx->engine_data;
  unsigned done = 0;
  while (done < d->npending) {
    int ret = io_submit(d->ctx, (long)(d->npending - done), d->pending + done);
    if (ret > 0) {
      done += (unsigned)ret;
    } else if (ret != -EINTR && ret != -EAGAIN) {
      d->npending = 0;
      return ENGINE_ERR(ctx, ret == 0 ? EIO : -ret, "io_submit");
    }
  }
  d->npending = 0;
  return 0;
}

/* Copies completions from the user-visible ring; 0 when the ring layout is not the known one. */
static unsigned reap_ring(struct libaio_data *d, struct io_event *out, unsigned max) {
  struct aio_ring *ring = (struct aio_ring *)d->ctx;
  if (ring->magic != AIO_RING_MAGIC || ring->incompat_features != 0) return 0;
  unsigned head = ring->head, tail = __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE), got = 0;
  while (head != tail && got < max) {
    out[got++] = ring->io_events[head];
    head = (head + 1) % ring->nr;
  }
  if (got > 0) __atomic_store_n(&ring->head, head, __ATOMIC_RELEASE);
  return got;
}

static int libaio_getevents(struct engine_ctx *ctx, unsigned min, unsigned max) {
  struct libaio_data *d = ctx->engine_data;
  unsigned got = reap_ring(d, d->events, max);
  while (got < min) {
    int ret = io_getevents(d->ctx, (long)(min - got), (long)(max - got), d->events + got, NULL);
    if (ret >= 0) got += (unsigned)ret;
    else if (ret != -EINTR && ret != -EAGAIN) return ENGINE_ERR(ctx, -ret, "io_getevents");
  }
  for (unsigned i = 0; i < got; i++) {
    struct io_u *io = d->events[i].data;
    io->result = (long)d->events[i].res;
  }
  return (int)got;
}

static struct io_u *libaio_event(struct engine_ctx *ctx, unsigned i) {
  struct libaio_data *d = ctx->engine_data;
  return d->events[i].data;
}

static void libaio_cleanup(struct engine_ctx *ctx) {
  struct libaio_data *d = ctx->engine_data;
  if (d == NULL) return;
  if (d->ctx_ok) io_destroy(d->ctx);
  free(d->iocbs);
  free(d->pending);
  free(d->events);
  free(d);
  ctx->engine_data = NULL;
}

static const struct engine_ops engine_libaio = {
    .name = "libaio", .flags = ENGINE_ASYNC | ENGINE_ATOMIC_WRITES, .list_order = 40, .setup = libaio_setup, .queue = libaio_queue, .commit = libaio_commit,
    .getevents = libaio_getevents, .event = libaio_event, .cleanup = libaio_cleanup,
    .options = libaio_option_table, .options_size = sizeof(struct libaio_options),
};
ENGINE_REGISTER(engine_libaio)
