/* The job runner: timing, offsets, depth, ramp, latency recording, verify. It drives any
 * engine through engine.h and never looks inside one. */
#include "job.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "pattern.h"


static inline uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t next_random(uint64_t *s) {  /* xorshift64* */
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545f4914f6cdd1dULL;
}

static int job_reads(enum rw_mode rw) { return rw != RW_WRITE && rw != RW_RANDWRITE; }
static int job_writes(enum rw_mode rw) { return rw != RW_READ && rw != RW_RANDREAD; }
static int job_random(enum rw_mode rw) { return rw == RW_RANDREAD || rw == RW_RANDWRITE || rw == RW_RANDRW; }

struct worker {
  const struct job_spec *spec;
  const int *abort;  /* set when the job must end early (a sibling thread could not start) */
  unsigned index;
  uint64_t size;
  pthread_t thread;
  int started;
  struct dir_stats *dir;  /* [2] */
  uint64_t ios_done, bytes_done;  /* read by the progress poller (relaxed atomics) */
  int phase;
  uint64_t runtime_ns;
  double usr_sec, sys_sec;
  uint64_t verified;
  int unavailable;
  char reason[160];
  int async;
  struct job_error error;
  /* hot-loop state */
  uint64_t rand_state, next_block, nblocks, measure_from;
  unsigned char *written;  /* verify: bitmap of blocks written */
};

static int fail_errno(struct worker *w, int err, const char *syscall, uint64_t offset) {
  if (w->error.kind == JOB_OK) {
    w->error.kind = JOB_ERRNO;
    w->error.err = err;
    w->error.syscall = syscall;
    w->error.offset = offset;
  }
  return -1;
}

static int fail_verify(struct worker *w, uint64_t block, int64_t bad) {
  if (w->error.kind == JOB_OK) {
    w->error.kind = JOB_VERIFY;
    w->error.offset = (uint64_t)bad;
    snprintf(w->error.message, sizeof(w->error.message),
             "verify failed: block at offset %llu (bs %u) of '%s' does not hold what was written there "
             "(first bad byte at offset %llu)",
             (unsigned long long)block, w->spec->bs, w->spec->filename, (unsigned long long)bad);
  }
  return -1;
}

static void prepare_io(struct worker *w, struct io_u *io) {
  const struct job_spec *s = w->spec;
  uint64_t block;
  if (job_random(s->rw)) {
    block = next_random(&w->rand_state) % w->nblocks;
  } else {
    block = w->next_block++;
    if (w->next_block == w->nblocks) w->next_block = 0;
  }
  io->offset = block * s->bs;
  io->len = s->bs;
  if (s->rw == RW_RANDRW || s->rw == RW_READWRITE)
    io->ddir = next_random(&w->rand_state) % 100 < s->rwmixread ? DDIR_READ : DDIR_WRITE;
  else
    io->ddir = job_reads(s->rw) ? DDIR_READ : DDIR_WRITE;
  if (io->ddir == DDIR_WRITE && s->verify) pattern_fill(io->buf, io->offset, io->len, PATTERN_SEED);
}

static int complete_io(struct worker *w, struct io_u *io, uint64_t t, int async) {
  const struct job_spec *s = w->spec;
  if (io->result != (int64_t)io->len) {
    const char *call = io->ddir == DDIR_READ ? "read" : "write";
    return fail_errno(w, io->result < 0 ? (int)-io->result : EIO, call, io->offset);  /* short: EIO */
  }
  if (s->verify) {
    if (io->ddir == DDIR_READ) {
      int64_t bad = pattern_check(io->buf, io->offset, io->len, PATTERN_SEED);
      if (bad >= 0) return fail_verify(w, io->offset, bad);
    } else {
      uint64_t b = io->offset / s->bs;
      w->written[b / 8] |= (unsigned char)(1u << (b % 8));
    }
  }
  if (io->start_ns >= w->measure_from) {
    struct dir_stats *d = &w->dir[io->ddir];
    d->ios++;
    d->bytes += io->len;
    hist_add(&d->lat, t - io->start_ns);
    if (async) {
      hist_add(&d->slat, io->issue_ns - io->start_ns);
      hist_add(&d->clat, t - io->issue_ns);
    } else {
      hist_add(&d->clat, t - io->start_ns);
    }
    __atomic_store_n(&w->ios_done, w->ios_done + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&w->bytes_done, w->bytes_done + io->len, __ATOMIC_RELAXED);
  }
  return 0;
}

/* Commits what was queued since the last commit and stamps its issue time. */
static int commit_queued(struct worker *w, const struct engine_ops *ops, struct engine_ctx *ctx,
                         struct io_u **queued, unsigned *nqueued) {
  if (ops->commit != NULL && ops->commit(ctx) < 0) {
    *nqueued = 0;
    return fail_errno(w, ctx->err, ctx->syscall, UINT64_MAX);
  }
  uint64_t t = now_ns();
  for (unsigned i = 0; i < *nqueued; i++) queued[i]->issue_ns = t;
  *nqueued = 0;
  w->async = 1;
  return 0;
}

/* The measured loop: keep depth I/Os in flight, commit every iodepth_batch, reap what completed. */
static int run_loop(struct worker *w, const struct engine_ops *ops, struct engine_ctx *ctx) {
  const struct job_spec *s = w->spec;
  unsigned depth = s->iodepth, nfree = depth, inflight = 0, nqueued = 0;
  unsigned batch = s->iodepth_batch == 0 ? 1 : s->iodepth_batch;
  struct io_u **free_list = calloc(depth, sizeof(*free_list));
  struct io_u **queued = calloc(depth, sizeof(*queued));
  if (free_list == NULL || queued == NULL) {
    free(free_list);
    free(queued);
    return fail_errno(w, ENOMEM, "calloc", UINT64_MAX);
  }
  for (unsigned i = 0; i < depth; i++) free_list[i] = &ctx->io_us[depth - 1 - i];
  uint64_t budget = s->number_ios ? s->number_ios : s->time_based ? UINT64_MAX : w->nblocks;
  uint64_t issued = 0, start = now_ns(), now = start;
  w->measure_from = start + s->ramp_ns;
  uint64_t deadline = s->runtime_ns ? w->measure_from + s->runtime_ns : UINT64_MAX;
  uint64_t last = start;
  int failed = 0, stop = 0, commit_failed = 0;
  w->phase = s->ramp_ns ? PHASE_RAMP : PHASE_RUN;
  for (;;) {
    if (w->phase == PHASE_RAMP && now >= w->measure_from) w->phase = PHASE_RUN;
    nqueued = 0;
    while (!stop && !failed && nfree > 0) {
      if (issued >= budget || now >= deadline || __atomic_load_n(w->abort, __ATOMIC_RELAXED)) {
        stop = 1;
        break;
      }
      struct io_u *io = free_list[--nfree];
      prepare_io(w, io);
      io->start_ns = now_ns();
      issued++;
      int r = ops->queue(ctx, io);
      if (r == Q_COMPLETED) {
        now = now_ns();
        last = now;
        if (w->phase == PHASE_RAMP && now >= w->measure_from) w->phase = PHASE_RUN;
        if (complete_io(w, io, now, 0) < 0) failed = 1;
        free_list[nfree++] = io;
      } else if (r == Q_QUEUED) {
        queued[nqueued++] = io;
        inflight++;
        /* fio's iodepth_batch_submit (default 1): hand each I/O to the device as soon as it is
         * queued; a bigger batch saves syscalls but lets the device queue drain meanwhile */
        if (nqueued >= batch && commit_queued(w, ops, ctx, queued, &nqueued) < 0) {
          failed = commit_failed = 1;
          break;
        }
      } else {
        fail_errno(w, ctx->err, ctx->syscall, io->offset);
        free_list[nfree++] = io;
        failed = 1;
      }
    }
    if (!commit_failed && nqueued > 0 && commit_queued(w, ops, ctx, queued, &nqueued) < 0)
      failed = commit_failed = 1;
    /* after a failed commit, what was queued may or may not be in flight: cleanup() handles it */
    if (commit_failed) break;
    if (inflight == 0) {
      if (stop || failed) break;
      continue;
    }
    int n = ops->getevents(ctx, 1, inflight);
    if (n < 0) {
      fail_errno(w, ctx->err, ctx->syscall, UINT64_MAX);
      failed = 1;
      break;
    }
    now = now_ns();
    last = now;
    for (int i = 0; i < n; i++) {
      struct io_u *io = ops->event(ctx, (unsigned)i);
      if (!failed && complete_io(w, io, now, 1) < 0) failed = 1;
      free_list[nfree++] = io;
    }
    inflight -= (unsigned)n;
  }
  w->runtime_ns = last > w->measure_from ? last - w->measure_from : 0;
  free(free_list);
  free(queued);
  return failed ? -1 : 0;
}

/* After a job that wrote with verify on: read back every block written and check it. */
static int verify_pass(struct worker *w, int fd, void *buf) {
  const struct job_spec *s = w->spec;
  w->phase = PHASE_VERIFY;
  for (uint64_t b = 0; b < w->nblocks; b++) {
    if (!(w->written[b / 8] & (1u << (b % 8)))) continue;
    if (__atomic_load_n(w->abort, __ATOMIC_RELAXED)) return 0;
    uint64_t off = b * s->bs;
    ssize_t n = pread(fd, buf, s->bs, (off_t)off);
    if (n < 0) return fail_errno(w, errno, "pread", off);
    if (n != (ssize_t)s->bs) return fail_errno(w, EIO, "pread", off);
    int64_t bad = pattern_check(buf, off, s->bs, PATTERN_SEED);
    if (bad >= 0) return fail_verify(w, off, bad);
    w->verified++;
  }
  return 0;
}

static double tv_sec(struct timeval tv) { return (double)tv.tv_sec + (double)tv.tv_usec / 1e6; }

static void *worker_main(void *arg) {
  struct worker *w = arg;
  const struct job_spec *s = w->spec;
  const struct engine_ops *ops = engine_find(s->engine);
  int writes = job_writes(s->rw);
  int fd = open(s->filename, (writes ? O_RDWR : O_RDONLY) | O_CLOEXEC | (s->direct ? O_DIRECT : 0));
  if (fd < 0) {
    if (errno == EINVAL && s->direct) {
      w->error.kind = JOB_USER;
      snprintf(w->error.message, sizeof(w->error.message),
               "--direct: the filesystem of '%s' does not support O_DIRECT", s->filename);
    } else {
      fail_errno(w, errno, "open", UINT64_MAX);
    }
    return NULL;
  }
  if (s->invalidate) (void)posix_fadvise(fd, 0, (off_t)w->size, POSIX_FADV_DONTNEED);
  size_t stride = ((size_t)s->bs + 4095) & ~(size_t)4095;
  void *mem = NULL;
  struct io_u *io_us = calloc(s->iodepth, sizeof(*io_us));
  if (io_us == NULL || posix_memalign(&mem, 4096, stride * s->iodepth) != 0) {
    free(io_us);
    close(fd);
    fail_errno(w, ENOMEM, "posix_memalign", UINT64_MAX);
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
  ctx.fixedbufs = s->fixedbufs;
  ctx.registerfiles = s->registerfiles;
  ctx.sqthread_poll = s->sqthread_poll;
  ctx.io_us = io_us;
  if (ops->setup(&ctx) < 0) {
    if (ctx.reason[0] != '\0') {
      w->unavailable = 1;
      memcpy(w->reason, ctx.reason, sizeof(w->reason));
    } else {
      fail_errno(w, ctx.err, ctx.syscall, UINT64_MAX);
    }
  } else {
    struct rusage r0, r1;
    getrusage(RUSAGE_THREAD, &r0);
    int ok = run_loop(w, ops, &ctx) == 0;
    if (ops->flush != NULL && ops->flush(&ctx) < 0 && ok) fail_errno(w, ctx.err, ctx.syscall, UINT64_MAX);
    getrusage(RUSAGE_THREAD, &r1);
    w->usr_sec = tv_sec(r1.ru_utime) - tv_sec(r0.ru_utime);
    w->sys_sec = tv_sec(r1.ru_stime) - tv_sec(r0.ru_stime);
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
  }
  free(ws);
}

int job_run(const struct job_spec *spec, struct job_result *res, job_progress_fn progress, void *arg) {
  memset(res, 0, sizeof(*res));
  for (int d = 0; d < 2; d++) {
    hist_init(&res->dir[d].slat);
    hist_init(&res->dir[d].clat);
    hist_init(&res->dir[d].lat);
  }
  if (engine_find(spec->engine) == NULL) {
    res->error.kind = JOB_USER;
    snprintf(res->error.message, sizeof(res->error.message), "unknown ioengine '%s'", spec->engine);
    return -1;
  }
  uint64_t size = spec->size;
  if (layout_prepare(spec, &size, &res->laid_out_bytes, &res->error, progress, arg) < 0) return -1;
  res->size = size;
  if (job_writes(spec->rw) && !spec->verify) layout_mark_written(spec->filename);

  int stop_all = 0;
  struct worker *ws = calloc(spec->numjobs, sizeof(*ws));
  if (ws == NULL) goto nomem;
  for (unsigned i = 0; i < spec->numjobs; i++) {
    struct worker *w = &ws[i];
    w->spec = spec;
    w->abort = &stop_all;
    w->index = i;
    w->size = size;
    w->nblocks = size / spec->bs;
    w->rand_state = (spec->seed + 1) * 0x9e3779b97f4a7c15ULL + i * 0x632be59bd9b4e019ULL + 1;
    w->dir = malloc(2 * sizeof(*w->dir));
    if (w->dir == NULL) goto nomem;
    for (int d = 0; d < 2; d++) {
      w->dir[d].ios = w->dir[d].bytes = 0;
      hist_init(&w->dir[d].slat);
      hist_init(&w->dir[d].clat);
      hist_init(&w->dir[d].lat);
    }
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
      res->error.kind = JOB_ERRNO;
      res->error.err = err;
      res->error.syscall = "pthread_create";
      res->error.offset = UINT64_MAX;
      return -1;
    }
    ws[i].started = 1;
  }
  for (unsigned i = 0; i < spec->numjobs; i++) {
    for (;;) {
      struct timespec until;
      clock_gettime(CLOCK_REALTIME, &until);
      until.tv_nsec += 200000000;
      if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
      }
      if (pthread_timedjoin_np(ws[i].thread, NULL, &until) == 0) break;
      if (progress != NULL) {
        uint64_t ios = 0, bytes = 0;
        for (unsigned j = 0; j < spec->numjobs; j++) {
          ios += __atomic_load_n(&ws[j].ios_done, __ATOMIC_RELAXED);
          bytes += __atomic_load_n(&ws[j].bytes_done, __ATOMIC_RELAXED);
        }
        progress(arg, (enum job_phase)__atomic_load_n(&ws[0].phase, __ATOMIC_RELAXED), ios, bytes, now_ns() - start);
      }
    }
  }
  for (unsigned i = 0; i < spec->numjobs; i++) {
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
    }
    if (w->runtime_ns > res->runtime_ns) res->runtime_ns = w->runtime_ns;
    res->usr_sec += w->usr_sec;
    res->sys_sec += w->sys_sec;
    res->verified_blocks += w->verified;
    res->async |= w->async;
  }
  free_workers(ws, spec->numjobs);
  return res->error.kind == JOB_OK ? 0 : -1;

nomem:
  if (ws != NULL) free_workers(ws, spec->numjobs);
  res->error.kind = JOB_ERRNO;
  res->error.err = ENOMEM;
  res->error.syscall = "malloc";
  res->error.offset = UINT64_MAX;
  return -1;
}
