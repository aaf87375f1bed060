/* One job: lay out the file, start numjobs threads (each with its own fd, buffers and engine
 * state), poll their progress, merge what they measured. The measured loop is job_loop.c. */
#include "job.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "worker.h"

static void apply_hints(const struct job_spec *s, int fd, uint64_t size) {
  if (s->invalidate) (void)posix_fadvise(fd, 0, (off_t)size, POSIX_FADV_DONTNEED);
  int advice = s->fadvise_hint == FADVISE_SEQUENTIAL ? POSIX_FADV_SEQUENTIAL :
               s->fadvise_hint == FADVISE_RANDOM ? POSIX_FADV_RANDOM :
               s->fadvise_hint == FADVISE_BY_RW ? (job_random(s->rw) ? POSIX_FADV_RANDOM : POSIX_FADV_SEQUENTIAL) : -1;
  if (advice >= 0) (void)posix_fadvise(fd, 0, (off_t)size, advice);
}

static void *worker_main(void *arg) {
  struct worker *w = arg;
  const struct job_spec *s = w->spec;
  const struct engine_ops *ops = s->ops;
  int writes = job_writes(s->rw);
  int fd = open(s->filename, (writes ? O_RDWR : O_RDONLY) | O_CLOEXEC | (s->direct ? O_DIRECT : 0));
  if (fd < 0) {
    if (errno == EINVAL && s->direct) {
      w->error.kind = JOB_USER;
      snprintf(w->error.message, sizeof(w->error.message),
               "--direct: the filesystem of '%s' does not support O_DIRECT", s->filename);
    } else {
      worker_fail_errno(w, errno, "open", UINT64_MAX);
    }
    return NULL;
  }
  apply_hints(s, fd, w->size);
  w->fd = fd;
  size_t stride = ((size_t)s->bs + 4095) & ~(size_t)4095;
  void *mem = NULL;
  struct io_u *io_us = calloc(s->iodepth, sizeof(*io_us));
  if (io_us == NULL || posix_memalign(&mem, 4096, stride * s->iodepth) != 0) {
    free(io_us);
    close(fd);
    worker_fail_errno(w, ENOMEM, "posix_memalign", UINT64_MAX);
    return NULL;
  }
  uint64_t fill = w->rand_state | 1;  /* write data: random bytes, not zeros (fio does the same) */
  for (size_t i = 0; i < stride * s->iodepth / 8; i++) ((uint64_t *)mem)[i] = next_random(&fill);
  for (unsigned i = 0; i < s->iodepth; i++) {
    io_us[i].index = i;
    io_us[i].buf = (char *)mem + stride * i;
  }
  struct engine_ctx ctx;
  memset(&ctx, 0, sizeof(ctx));
  ctx.fd = fd;
  ctx.filename = s->filename;
  ctx.file_size = w->size;
  ctx.depth = s->iodepth;
  ctx.bs = s->bs;
  ctx.direct = s->direct;
  ctx.writable = writes;
  ctx.options = s->engine_options;
  ctx.io_us = io_us;
  if (ops->setup(&ctx) < 0) {
    if (ctx.reason[0] != '\0') {
      w->unavailable = 1;
      memcpy(w->reason, ctx.reason, sizeof(w->reason));
    } else {
      worker_fail_errno(w, ctx.err, ctx.syscall, UINT64_MAX);
    }
  } else {
    cpu_enter(w->shared);
    int ok = run_loop(w, ops, &ctx) == 0;
    if (ops->flush != NULL && ops->flush(&ctx) < 0 && ok) worker_fail_errno(w, ctx.err, ctx.syscall, UINT64_MAX);
    cpu_leave(w->shared);
  }
  ops->cleanup(&ctx);
  if (w->error.kind == JOB_OK && !w->unavailable && s->verify && writes) verify_pass(w, fd, mem);
  free(mem);
  free(io_us);
  close(fd);
  return NULL;
}

static void free_workers(struct worker *ws, unsigned n) {
  for (unsigned i = 0; i < n; i++) {
    free(ws[i].dir);
    free(ws[i].written);
    free(ws[i].randmap);
  }
  free(ws);
}

static void init_dir(struct dir_stats *d) {
  d->ios = d->bytes = 0;
  hist_init(&d->slat);
  hist_init(&d->clat);
  hist_init(&d->lat);
  samples_init(&d->bw_kib);
  samples_init(&d->iops);
}

static double tv_sec(struct timeval tv) { return (double)tv.tv_sec + (double)tv.tv_usec / 1e6; }

static void merge_workers(struct job_result *res, struct worker *ws, unsigned n, const struct job_shared *sh) {
  for (unsigned i = 0; i < n; i++) {
    struct worker *w = &ws[i];
    if (w->error.kind != JOB_OK && res->error.kind == JOB_OK) res->error = w->error;
    if (w->unavailable && !res->unavailable) {
      res->unavailable = 1;
      memcpy(res->reason, w->reason, sizeof(res->reason));
    }
    for (int d = 0; d < 2; d++) {
      res->dir[d].ios += w->dir[d].ios;
      res->dir[d].bytes += w->dir[d].bytes;
      hist_merge(&res->dir[d].slat, &w->dir[d].slat);
      hist_merge(&res->dir[d].clat, &w->dir[d].clat);
      hist_merge(&res->dir[d].lat, &w->dir[d].lat);
      samples_merge(&res->dir[d].bw_kib, &w->dir[d].bw_kib);
      samples_merge(&res->dir[d].iops, &w->dir[d].iops);
    }
    depth_merge(&res->depth, &w->depth);
    if (w->runtime_ns > res->runtime_ns) res->runtime_ns = w->runtime_ns;
    res->verified_blocks += w->verified;
    res->async |= w->async;
    res->interrupted |= w->interrupted;
  }
  if (sh->cpu_started) {
    const struct rusage *a = &sh->cpu_from, *b = &sh->cpu_to;
    res->usr_sec = tv_sec(b->ru_utime) - tv_sec(a->ru_utime);
    res->sys_sec = tv_sec(b->ru_stime) - tv_sec(a->ru_stime);
    res->ctx = (uint64_t)((b->ru_nvcsw + b->ru_nivcsw) - (a->ru_nvcsw + a->ru_nivcsw));
    res->majf = (uint64_t)(b->ru_majflt - a->ru_majflt);
    res->minf = (uint64_t)(b->ru_minflt - a->ru_minflt);
    res->elapsed_ns = sh->ended_ns - sh->started_ns;
  }
}

static void poll_progress(struct worker *ws, unsigned n, unsigned i, uint64_t start, job_progress_fn progress,
                          void *arg) {
  for (;;) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 200000000;
    if (until.tv_nsec >= 1000000000) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000;
    }
    if (pthread_timedjoin_np(ws[i].thread, NULL, &until) == 0) return;
    if (progress != NULL) {
      uint64_t ios = 0, bytes = 0;
      for (unsigned j = 0; j < n; j++) {
        ios += __atomic_load_n(&ws[j].ios_done, __ATOMIC_RELAXED);
        bytes += __atomic_load_n(&ws[j].bytes_done, __ATOMIC_RELAXED);
      }
      progress(arg, (enum job_phase)__atomic_load_n(&ws[0].phase, __ATOMIC_RELAXED), ios, bytes, now_ns() - start);
    }
  }
}

static int job_errno(struct job_result *res, int err, const char *syscall) {
  res->error.kind = JOB_ERRNO;
  res->error.err = err;
  res->error.syscall = syscall;
  res->error.offset = UINT64_MAX;
  return -1;
}

int job_run(const struct job_spec *spec, struct job_result *res, job_progress_fn progress, void *arg) {
  memset(res, 0, sizeof(*res));
  for (int d = 0; d < 2; d++) init_dir(&res->dir[d]);
  uint64_t size = spec->size;
  int laid = layout_prepare(spec, &size, res, progress, arg);
  if (laid == -2) {
    res->interrupted = 1;
    return 0;
  }
  if (laid < 0) return -1;
  res->size = size;

  int stop_all = 0;
  struct job_shared shared;
  memset(&shared, 0, sizeof(shared));
  shared.abort = &stop_all;
  pthread_mutex_init(&shared.lock, NULL);
  struct worker *ws = calloc(spec->numjobs, sizeof(*ws));
  if (ws == NULL) goto nomem;
  for (unsigned i = 0; i < spec->numjobs; i++) {
    struct worker *w = &ws[i];
    w->spec = spec;
    w->shared = &shared;
    w->index = i;
    w->size = size;
    w->nblocks = size / spec->bs;
    w->rand_state = (spec->randseed + 1) * 0x9e3779b97f4a7c15ULL + i * 0x632be59bd9b4e019ULL + 1;
    w->fill_state = (w->rand_state ^ 0x5851f42d4c957f2dULL) | 1;
    w->dir = malloc(2 * sizeof(*w->dir));
    if (w->dir == NULL) goto nomem;
    for (int d = 0; d < 2; d++) init_dir(&w->dir[d]);
    if (randmap_init(w) < 0) goto nomem;
    if (spec->verify && job_writes(spec->rw)) {
      w->written = calloc((size_t)(w->nblocks + 7) / 8, 1);
      if (w->written == NULL) goto nomem;
    }
  }
  uint64_t start = now_ns();
  for (unsigned i = 0; i < spec->numjobs; i++) {
    int err = pthread_create(&ws[i].thread, NULL, worker_main, &ws[i]);
    if (err != 0) {
      __atomic_store_n(&stop_all, 1, __ATOMIC_RELAXED);  /* let the started ones end quickly */
      for (unsigned j = 0; j < i; j++) pthread_join(ws[j].thread, NULL);
      free_workers(ws, spec->numjobs);
      pthread_mutex_destroy(&shared.lock);
      return job_errno(res, err, "pthread_create");
    }
  }
  for (unsigned i = 0; i < spec->numjobs; i++) poll_progress(ws, spec->numjobs, i, start, progress, arg);
  merge_workers(res, ws, spec->numjobs, &shared);
  free_workers(ws, spec->numjobs);
  pthread_mutex_destroy(&shared.lock);
  if (job_writes(spec->rw) && res->owned) layout_mark_written(spec->filename, spec->verify);
  return res->error.kind == JOB_OK ? 0 : -1;

nomem:
  if (ws != NULL) free_workers(ws, spec->numjobs);
  pthread_mutex_destroy(&shared.lock);
  return job_errno(res, ENOMEM, "malloc");
}
