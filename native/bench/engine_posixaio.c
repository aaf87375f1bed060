/* posixaio: POSIX AIO (glibc runs it on its own threads). queue() starts aio_read/aio_write;
 * getevents() reaps the way fio's posixaio does, so both run the same job at the same cost:
 *
 *  - scan the job's I/O units in slot order (io_u index) and reap every in-flight one whose
 *    aio_error() is no longer EINPROGRESS (aio_error reads the control block: no lock, no
 *    syscall), past max too, as fio's does;
 *  - while fewer than min are done, sleep in aio_suspend() on at most SUSPEND_ENTRIES (8) of the
 *    I/Os still in flight, the first ones in slot order, then scan again.
 *
 * Why at most 8: glibc's aio_suspend() takes its global AIO lock and, for every entry, searches
 * the request list for it and hooks a waiter onto it, then unhooks them all on the way out. The
 * helper thread that runs the fd's requests needs that lock for every request it finishes, so
 * suspending on the whole in-flight list (32 at qd32) starves the helper: it cost a third of the
 * IOPS and a quarter more CPU per I/O than fio.
 *
 * What that costs in latency: glibc runs one fd's requests in submission order, so the next to
 * finish is the oldest in flight. When the oldest is not among the 8 lowest slots, the thread
 * sleeps past its completion (and any that follow) until one of the 8 finishes; the rescan then
 * reaps them all, and their clat includes that wait. fio's posixaio has the same wake-up rule,
 * so the two clat figures are comparable. */
#include <aio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

#define SUSPEND_ENTRIES 8

struct posixaio_data {
  struct aiocb *cbs;            /* one per io_u, by index */
  unsigned char *inflight;      /* by index: queued and not reaped yet */
  unsigned ninflight;
  struct io_u **events;
};

static int posixaio_setup(struct engine_ctx *ctx) {
  struct posixaio_data *d = calloc(1, sizeof(*d));
  if (d == NULL) return ENGINE_ERR(ctx, ENOMEM, "calloc");
  ctx->engine_data = d;
  d->cbs = calloc(ctx->depth, sizeof(*d->cbs));
  d->inflight = calloc(ctx->depth, sizeof(*d->inflight));
  d->events = calloc(ctx->depth, sizeof(*d->events));
  if (!d->cbs || !d->inflight || !d->events) return ENGINE_ERR(ctx, ENOMEM, "calloc");
  return 0;
}

static int posixaio_queue(struct engine_ctx *ctx, struct io_u *io) {
  struct posixaio_data *d = ctx->engine_data;
  struct aiocb *cb = &d->cbs[io->index];
  memset(cb, 0, sizeof(*cb));
  cb->aio_fildes = io->fd;
  cb->aio_buf = io->buf;
  cb->aio_nbytes = io->len;
  cb->aio_offset = (off_t)io->offset;
  cb->aio_sigevent.sigev_notify = SIGEV_NONE;
  int ret = io->ddir == DDIR_READ ? aio_read(cb) : aio_write(cb);
  if (ret < 0) return ENGINE_ERR(ctx, errno, io->ddir == DDIR_READ ? "aio_read" : "aio_write");
  d->inflight[io->index] = 1;
  d->ninflight++;
  return FIO_Q_QUEUED;
}

static int posixaio_getevents(struct engine_ctx *ctx, unsigned min, unsigned max) {
  (void)max;  /* every finished one is reaped, as fio's posixaio does */
  struct posixaio_data *d = ctx->engine_data;
  unsigned got = 0;
  for (;;) {
    const struct aiocb *suspend[SUSPEND_ENTRIES];
    int nsuspend = 0;
    for (unsigned i = 0; i < ctx->depth; i++) {
      if (!d->inflight[i]) continue;
      struct aiocb *cb = &d->cbs[i];
      int e = aio_error(cb);
      if (e == EINPROGRESS) {
        if (nsuspend < SUSPEND_ENTRIES) suspend[nsuspend++] = cb;
        continue;
      }
      ssize_t n = aio_return(cb);
      struct io_u *io = &ctx->io_us[i];
      io->result = e == 0 ? n : -e;
      d->inflight[i] = 0;
      d->ninflight--;
      d->events[got++] = io;
    }
    if (got >= min || nsuspend == 0) return (int)got;
    if (aio_suspend(suspend, nsuspend, NULL) < 0 && errno != EINTR && errno != EAGAIN)
      return ENGINE_ERR(ctx, errno, "aio_suspend");
  }
}

static struct io_u *posixaio_event(struct engine_ctx *ctx, unsigned i) {
  struct posixaio_data *d = ctx->engine_data;
  return d->events[i];
}

static void posixaio_cleanup(struct engine_ctx *ctx) {
  struct posixaio_data *d = ctx->engine_data;
  if (d == NULL) return;
  /* never free control blocks glibc's threads still use */
  if (d->ninflight > 0 && d->cbs != NULL) {
    for (unsigned i = 0; i < ctx->nfiles; i++) aio_cancel(ctx->fds[i], NULL);
    while (d->ninflight > 0) {
      const struct aiocb *suspend[SUSPEND_ENTRIES];
      int nsuspend = 0;
      for (unsigned i = 0; i < ctx->depth; i++) {
        if (!d->inflight[i]) continue;
        if (aio_error(&d->cbs[i]) != EINPROGRESS) {
          aio_return(&d->cbs[i]);
          d->inflight[i] = 0;
          d->ninflight--;
        } else if (nsuspend < SUSPEND_ENTRIES) {
          suspend[nsuspend++] = &d->cbs[i];
        }
      }
      if (nsuspend > 0) aio_suspend(suspend, nsuspend, NULL);
    }
  }
  free(d->cbs);
  free(d->inflight);
  free(d->events);
  free(d);
  ctx->engine_data = NULL;
}

static const struct engine_ops engine_posixaio = {
    .name = "posixaio", .alias = "posix_aio", .flags = ENGINE_ASYNC, .list_order = 50, .setup = posixaio_setup, .queue = posixaio_queue,
    .getevents = posixaio_getevents, .event = posixaio_event, .cleanup = posixaio_cleanup,
};
ENGINE_REGISTER(engine_posixaio)
