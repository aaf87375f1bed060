/* posixaio: POSIX AIO (glibc runs it on its own threads). queue() starts aio_read/aio_write;
 * getevents() scans the in-flight list with aio_error and, while fewer than min are done, sleeps
 * in aio_suspend on the whole in-flight list: it wakes on the first completion, so every I/O is
 * timestamped when it finished, not when a later one did. That costs throughput: glibc runs one
 * fd's requests on one helper thread, and every wake-up and resubmission takes glibc's global
 * AIO lock, which the helper needs for each request it finishes (measured here: about 0.7x the
 * IOPS of waiting for the request halfway down the queue, which timestamped up to half a queue
 * of I/Os late). fio's posixaio passes the first 8 in-flight requests by slot, not by age, and so
 * sleeps past some completions too. */
#include <aio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

struct posixaio_data {
  struct aiocb *cbs;            /* one per io_u, by index */
  struct io_u **inflight;
  unsigned ninflight;
  const struct aiocb **suspend; /* scratch list for aio_suspend */
  struct io_u **events;
};

static int posixaio_setup(struct engine_ctx *ctx) {
  struct posixaio_data *d = calloc(1, sizeof(*d));
  if (d == NULL) return ENGINE_ERR(ctx, ENOMEM, "calloc");
  ctx->engine_data = d;
  d->cbs = calloc(ctx->depth, sizeof(*d->cbs));
  d->inflight = calloc(ctx->depth, sizeof(*d->inflight));
  d->suspend = calloc(ctx->depth, sizeof(*d->suspend));
  d->events = calloc(ctx->depth, sizeof(*d->events));
  if (!d->cbs || !d->inflight || !d->suspend || !d->events) return ENGINE_ERR(ctx, ENOMEM, "calloc");
  return 0;
}

static int posixaio_queue(struct engine_ctx *ctx, struct io_u *io) {
  struct posixaio_data *d = ctx->engine_data;
  struct aiocb *cb = &d->cbs[io->index];
  memset(cb, 0, sizeof(*cb));
  cb->aio_fildes = ctx->fd;
  cb->aio_buf = io->buf;
  cb->aio_nbytes = io->len;
  cb->aio_offset = (off_t)io->offset;
  cb->aio_sigevent.sigev_notify = SIGEV_NONE;
  int ret = io->ddir == DDIR_READ ? aio_read(cb) : aio_write(cb);
  if (ret < 0) return ENGINE_ERR(ctx, errno, io->ddir == DDIR_READ ? "aio_read" : "aio_write");
  d->inflight[d->ninflight++] = io;
  return FIO_Q_QUEUED;
}

static int posixaio_getevents(struct engine_ctx *ctx, unsigned min, unsigned max) {
  struct posixaio_data *d = ctx->engine_data;
  unsigned got = 0;
  for (;;) {
    unsigned kept = 0;
    for (unsigned i = 0; i < d->ninflight; i++) {
      struct io_u *io = d->inflight[i];
      struct aiocb *cb = &d->cbs[io->index];
      int e = got < max ? aio_error(cb) : EINPROGRESS;
      if (e == EINPROGRESS) {
        d->inflight[kept++] = io;  /* compacts in place, keeping submission order */
        continue;
      }
      ssize_t n = aio_return(cb);
      io->result = e == 0 ? n : -e;
      d->events[got++] = io;
    }
    d->ninflight = kept;
    if (got >= min || kept == 0) return (int)got;
    for (unsigned i = 0; i < kept; i++) d->suspend[i] = &d->cbs[d->inflight[i]->index];
    if (aio_suspend(d->suspend, (int)kept, NULL) < 0 && errno != EINTR && errno != EAGAIN)
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
    aio_cancel(ctx->fd, NULL);
    while (d->ninflight > 0) {
      for (unsigned i = 0; i < d->ninflight;) {
        struct aiocb *cb = &d->cbs[d->inflight[i]->index];
        if (aio_error(cb) != EINPROGRESS) {
          aio_return(cb);
          d->inflight[i] = d->inflight[--d->ninflight];
        } else {
          i++;
        }
      }
      for (unsigned i = 0; i < d->ninflight; i++) d->suspend[i] = &d->cbs[d->inflight[i]->index];
      if (d->ninflight > 0) aio_suspend(d->suspend, (int)d->ninflight, NULL);
    }
  }
  free(d->cbs);
  free(d->inflight);
  free(d->suspend);
  free(d->events);
  free(d);
  ctx->engine_data = NULL;
}

static const struct engine_ops engine_posixaio = {
    .name = "posixaio", .alias = "posix_aio", .flags = ENGINE_ASYNC, .list_order = 50, .setup = posixaio_setup, .queue = posixaio_queue,
    .getevents = posixaio_getevents, .event = posixaio_event, .cleanup = posixaio_cleanup,
};
ENGINE_REGISTER(engine_posixaio)
