/* fio's io_submit_mode=offload: the job thread draws each I/O, paces it and hands it on; iodepth
 * submit threads, each with an instance of the job's engine of its own, take one I/O at a time
 * and run it to its completion, as fio's rate-submit workqueue does (its workers' engines at
 * depth 1), so I/Os go out at the rate asked whatever the completions do. To the measured loop
 * (job_loop.c) this is one more engine: queue hands an I/O on, getevents takes what the threads
 * finished. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "worker.h"

struct offload {
  const struct engine_ops *ops;  /* the job's engine, one instance per submit thread */
  struct engine_ctx *ctxs;
  pthread_t *threads;
  unsigned n, started, ready;
  int ioprio;
  pthread_mutex_t lock;
  pthread_cond_t work, done_cond;
  struct io_u **todo, **done, **events;  /* rings and lists of depth entries */
  unsigned todo_head, todo_n, done_n;
  int quit;
};

/* One I/O on a submit thread's own engine, to its completion. */
static void run_one(const struct engine_ops *ops, struct engine_ctx *ctx, struct io_u *io) {
  int r = ops->queue(ctx, io);
  if (r == FIO_Q_QUEUED) {
    if (ops->commit != NULL && ops->commit(ctx) < 0) {
      io->result = -ctx->err;
      return;
    }
    if (ops->getevents(ctx, 1, 1) < 1) io->result = -(ctx->err ? ctx->err : EIO);
    else ops->event(ctx, 0);  /* the completion is io's: one in flight */
  } else if (r != FIO_Q_COMPLETED) {
    io->result = -(ctx->err ? ctx->err : EBUSY);
  }
}

struct submit_arg {
  struct offload *o;
  unsigned i;
};

static void *submit_main(void *p) {
  struct submit_arg *a = p;
  struct offload *o = a->o;
  struct engine_ctx *ctx = &o->ctxs[a->i];
  free(a);
  if (o->ioprio >= 0) (void)syscall(SYS_ioprio_set, 1, 0, o->ioprio);  /* the job's priority, as its thread's */
  for (;;) {
    pthread_mutex_lock(&o->lock);
    while (o->todo_n == 0 && !o->quit) pthread_cond_wait(&o->work, &o->lock);
    if (o->todo_n == 0) {
      pthread_mutex_unlock(&o->lock);
      return NULL;
    }
    struct io_u *io = o->todo[o->todo_head];
    o->todo_head = (o->todo_head + 1) % o->n;
    o->todo_n--;
    pthread_mutex_unlock(&o->lock);
    run_one(o->ops, ctx, io);
    pthread_mutex_lock(&o->lock);
    o->done[o->done_n++] = io;
    pthread_cond_signal(&o->done_cond);
    pthread_mutex_unlock(&o->lock);
  }
}

static int offload_queue(struct engine_ctx *ctx, struct io_u *io) {
  struct offload *o = ctx->engine_data;
  pthread_mutex_lock(&o->lock);
  o->todo[(o->todo_head + o->todo_n) % o->n] = io;
  o->todo_n++;
  pthread_cond_signal(&o->work);
  pthread_mutex_unlock(&o->lock);
  return FIO_Q_QUEUED;
}

static int offload_getevents(struct engine_ctx *ctx, unsigned min, unsigned max) {
  struct offload *o = ctx->engine_data;
  pthread_mutex_lock(&o->lock);
  while (o->done_n < min) pthread_cond_wait(&o->done_cond, &o->lock);
  unsigned n = o->done_n < max ? o->done_n : max;
  memcpy(o->events, o->done, n * sizeof(*o->done));
  memmove(o->done, o->done + n, (o->done_n - n) * sizeof(*o->done));
  o->done_n -= n;
  pthread_mutex_unlock(&o->lock);
  return (int)n;
}

static struct io_u *offload_event(struct engine_ctx *ctx, unsigned i) {
  struct offload *o = ctx->engine_data;
  return o->events[i];
}

static int offload_flush(struct engine_ctx *ctx) {
  struct offload *o = ctx->engine_data;
  for (unsigned i = 0; o->ops->flush != NULL && i < o->ready; i++) {
    if (o->ops->flush(&o->ctxs[i]) < 0) return ENGINE_ERR(ctx, o->ctxs[i].err, o->ctxs[i].syscall);
  }
  return 0;
}

static void offload_cleanup(struct engine_ctx *ctx) {
  struct offload *o = ctx->engine_data;
  if (o == NULL) return;
  pthread_mutex_lock(&o->lock);
  o->quit = 1;
  pthread_cond_broadcast(&o->work);
  pthread_mutex_unlock(&o->lock);
  for (unsigned i = 0; i < o->started; i++) pthread_join(o->threads[i], NULL);
  for (unsigned i = 0; i < o->ready; i++) o->ops->cleanup(&o->ctxs[i]);
  pthread_mutex_destroy(&o->lock);
  pthread_cond_destroy(&o->work);
  pthread_cond_destroy(&o->done_cond);
  free(o->ctxs);
  free(o->threads);
  free(o->todo);
  free(o->done);
  free(o->events);
  free(o);
  ctx->engine_data = NULL;
}

const struct engine_ops offload_ops = {
    .name = "offload", .flags = ENGINE_ASYNC, .queue = offload_queue, .getevents = offload_getevents,
    .event = offload_event, .flush = offload_flush, .cleanup = offload_cleanup,
};

int offload_setup(struct engine_ctx *ctx, const struct engine_ops *ops, int ioprio) {
  struct offload *o = calloc(1, sizeof(*o));
  if (o == NULL) return ENGINE_ERR(ctx, ENOMEM, "calloc");
  ctx->engine_data = o;
  o->ops = ops;
  o->n = ctx->depth;
  o->ioprio = ioprio;
  pthread_mutex_init(&o->lock, NULL);
  pthread_cond_init(&o->work, NULL);
  pthread_cond_init(&o->done_cond, NULL);
  o->ctxs = calloc(o->n, sizeof(*o->ctxs));
  o->threads = calloc(o->n, sizeof(*o->threads));
  o->todo = calloc(o->n, sizeof(*o->todo));
  o->done = calloc(o->n, sizeof(*o->done));
  o->events = calloc(o->n, sizeof(*o->events));
  if (o->ctxs == NULL || o->threads == NULL || o->todo == NULL || o->done == NULL || o->events == NULL)
    return ENGINE_ERR(ctx, ENOMEM, "calloc");
  for (unsigned i = 0; i < o->n; i++) {
    /* each submit thread's engine: the job's files and units, one I/O of them in flight */
    o->ctxs[i] = *ctx;
    o->ctxs[i].engine_data = NULL;
    o->ctxs[i].reason[0] = '\0';
    if (ops->setup(&o->ctxs[i]) < 0) {
      memcpy(ctx->reason, o->ctxs[i].reason, sizeof(ctx->reason));
      ops->cleanup(&o->ctxs[i]);
      return ctx->reason[0] != '\0' ? -1 : ENGINE_ERR(ctx, o->ctxs[i].err, o->ctxs[i].syscall);
    }
    o->ready++;
  }
  for (unsigned i = 0; i < o->n; i++) {
    struct submit_arg *a = malloc(sizeof(*a));
    if (a == NULL) return ENGINE_ERR(ctx, ENOMEM, "malloc");
    *a = (struct submit_arg){.o = o, .i = i};
    int err = pthread_create(&o->threads[i], NULL, submit_main, a);
    if (err != 0) {
      free(a);
      return ENGINE_ERR(ctx, err, "pthread_create");
    }
    o->started++;
  }
  return 0;
}
