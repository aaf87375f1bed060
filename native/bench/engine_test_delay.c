/* test_delay (tests only): a device with a known latency. queue() moves the data at once with
 * pread/pwrite; the I/O completes test_delay_usec after it was committed, each on its own (a
 * parallel device: depth does not add up). Tests check the runner's latency figures against it.
 * With test_delay_slots it holds at most that many I/Os and answers FIO_Q_BUSY beyond them. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"

struct delay_options {
  unsigned usec, slots;
};

static const struct engine_option delay_option_table[] = {
    {"test_delay_usec", ENGINE_OPT_UINT, "test_delay: microseconds from commit to completion",
     offsetof(struct delay_options, usec), 100, 0, 10000000},
    {"test_delay_slots", ENGINE_OPT_UINT, "test_delay: I/Os it holds before answering BUSY (0: the depth)",
     offsetof(struct delay_options, slots), 0, 0, 65536},
    {NULL},
};

struct delay_data {
  struct io_u **pending;   /* queued, in commit order */
  uint64_t *due;           /* by io index */
  unsigned npending, ncommitted;
  struct io_u **events;
};

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int delay_setup(struct engine_ctx *ctx) {
  struct delay_data *d = calloc(1, sizeof(*d));
  if (d == NULL) return ENGINE_ERR(ctx, ENOMEM, "calloc");
  ctx->engine_data = d;
  d->pending = calloc(ctx->depth, sizeof(*d->pending));
  d->due = calloc(ctx->depth, sizeof(*d->due));
  d->events = calloc(ctx->depth, sizeof(*d->events));
  if (!d->pending || !d->due || !d->events) return ENGINE_ERR(ctx, ENOMEM, "calloc");
  return 0;
}

static int delay_queue(struct engine_ctx *ctx, struct io_u *io) {
  struct delay_data *d = ctx->engine_data;
  const struct delay_options *o = ctx->options;
  if (o->slots != 0 && d->npending >= o->slots) return FIO_Q_BUSY;
  ssize_t n = io->ddir == DDIR_READ ? pread(io->fd, io->buf, io->len, (off_t)io->offset)
                                    : pwrite(io->fd, io->buf, io->len, (off_t)io->offset);
  io->result = n < 0 ? -errno : n;
  d->pending[d->npending++] = io;
  return FIO_Q_QUEUED;
}

static int delay_commit(struct engine_ctx *ctx) {
  struct delay_data *d = ctx->engine_data;
  const struct delay_options *o = ctx->options;
  uint64_t due = mono_ns() + (uint64_t)o->usec * 1000u;
  for (; d->ncommitted < d->npending; d->ncommitted++) d->due[d->pending[d->ncommitted]->index] = due;
  return 0;
}

static int delay_getevents(struct engine_ctx *ctx, unsigned min, unsigned max) {
  struct delay_data *d = ctx->engine_data;
  unsigned got = 0;
  for (;;) {
    uint64_t now = mono_ns(), earliest = UINT64_MAX;
    unsigned kept = 0;
    for (unsigned i = 0; i < d->ncommitted; i++) {
      struct io_u *io = d->pending[i];
      uint64_t due = d->due[io->index];
      if (due <= now && got < max) {
        d->events[got++] = io;
      } else {
        if (due < earliest) earliest = due;
        d->pending[kept++] = io;
      }
    }
    unsigned uncommitted = d->npending - d->ncommitted;
    memmove(&d->pending[kept], &d->pending[d->ncommitted], uncommitted * sizeof(*d->pending));
    d->ncommitted = kept;
    d->npending = kept + uncommitted;
    if (got >= min || earliest == UINT64_MAX) return (int)got;
    struct timespec until = {(time_t)(earliest / 1000000000u), (long)(earliest % 1000000000u)};
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL);
  }
}

static struct io_u *delay_event(struct engine_ctx *ctx, unsigned i) {
  struct delay_data *d = ctx->engine_data;
  return d->events[i];
}

static void delay_cleanup(struct engine_ctx *ctx) {
  struct delay_data *d = ctx->engine_data;
  if (d == NULL) return;
  free(d->pending);
  free(d->due);
  free(d->events);
  free(d);
  ctx->engine_data = NULL;
}

static const struct engine_ops engine_test_delay = {
    .name = "test_delay", .flags = ENGINE_ASYNC | ENGINE_TEST_ONLY, .list_order = 900,
    .options = delay_option_table, .options_size = sizeof(struct delay_options),
    .setup = delay_setup, .queue = delay_queue, .commit = delay_commit, .getevents = delay_getevents,
    .event = delay_event, .cleanup = delay_cleanup,
};
ENGINE_REGISTER(engine_test_delay)
