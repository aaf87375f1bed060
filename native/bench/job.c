/* One job: lay out the file, start numjobs threads (each with its own fd, buffers and engine
 * state), poll their progress, merge what they measured. The measured loop is job_loop.c. */
#include "job.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "worker.h"

static void apply_hints(const struct job_spec *s, int fd, uint64_t size) {
  if (s->invalidate) (void)posix_fadvise(fd, 0, (off_t)size, POSIX_FADV_DONTNEED);
  int advice = s->fadvise_hint == FADVISE_SEQUENTIAL ? POSIX_FADV_SEQUENTIAL :
               s->fadvise_hint == FADVISE_RANDOM ? POSIX_FADV_RANDOM :
               s->fadvise_hint == FADVISE_BY_RW ? (job_random(s->rw) ? POSIX_FADV_RANDOM : POSIX_FADV_SEQUENTIAL) : -1;
  if (advice >= 0) (void)posix_fadvise(fd, 0, (off_t)size, advice);
}

/* fio's exitall: this thread's job ended, so the jobs its exit_what names end too. */
static void job_exit_others(const struct worker *w) {
  const struct job_spec *s = w->spec;
  if (s->exit_what == EXIT_NONE) return;
  for (unsigned j = 0; j < w->shared->nspecs; j++)
    if (s->exit_what == EXIT_RUNNING || w->shared->specs[j].groupid == s->groupid)
      __atomic_store_n(&w->shared->exited[j], 1, __ATOMIC_RELAXED);
}

static void close_all(const int *fds, unsigned n) {
  for (unsigned i = 0; i < n; i++)
    if (fds[i] >= 0) close(fds[i]);
}

static void *worker_main(void *arg) {
  struct worker *w = arg;
  const struct job_spec *s = w->spec;
  const struct engine_ops *ops = s->ops;
  int writes = job_writes(s->rw);
  int diskless = (ops->flags & ENGINE_DISKLESS) != 0;
  /* fio's prioclass/prio: the job thread's own I/O priority (IOPRIO_WHO_PROCESS 1, who 0: this thread) */
  if (s->ioprio >= 0 && syscall(SYS_ioprio_set, 1, 0, s->ioprio) < 0) {
    worker_fail_errno(w, errno, "ioprio_set", UINT64_MAX);
    job_exit_others(w);
    return NULL;
  }
  /* fio's filename=a:b: every file open for the whole job; a diskless engine opens none */
  unsigned nfiles = !diskless && s->nfiles > 1 ? s->nfiles : 1;
  int fds[nfiles];
  for (unsigned i = 0; i < nfiles; i++) fds[i] = -1;
  for (unsigned i = 0; i < nfiles && !diskless; i++) {
    const char *filename = nfiles > 1 ? s->filenames[i] : s->filename;
    fds[i] = open(filename, (writes ? O_RDWR : O_RDONLY) | O_CLOEXEC | (s->direct ? O_DIRECT : 0) | s->open_sync);
    if (fds[i] >= 0) {
      apply_hints(s, fds[i], w->size);
      if (w->files != NULL) w->files[i].fd = fds[i];
      continue;
    }
    if (errno == EINVAL && s->direct) {
      char name[256];
      w->error.kind = JOB_USER;
      snprintf(w->error.message, sizeof(w->error.message),
               "--direct: the filesystem of '%s' does not support O_DIRECT", shown_name(name, sizeof(name), filename));
    } else {
      worker_fail_errno(w, errno, "open", UINT64_MAX);
    }
    close_all(fds, i);
    return NULL;
  }
  int fd = fds[0];
  w->fd = fd;
  w->sync_fd = fd;
  file_init(w);  /* fio's file_service_type: the first file (random, a distribution: drawn) */
  if (backlog_init(w) < 0) {
    backlog_free(w);
    close_all(fds, nfiles);
    worker_fail_errno(w, ENOMEM, "malloc", UINT64_MAX);
    return NULL;
  }
  size_t stride = ((size_t)job_max_len(s) + 4095) & ~(size_t)4095;
  void *mem = NULL;
  struct io_u *io_us = calloc(s->iodepth, sizeof(*io_us));
  if (io_us == NULL || posix_memalign(&mem, 4096, stride * s->iodepth) != 0) {
    free(io_us);
    close_all(fds, nfiles);
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
  ctx.fds = fds;
  ctx.nfiles = nfiles;
  ctx.file_size = w->size + s->offset;
  ctx.depth = s->iodepth;
  ctx.bs = job_max_len(s);  /* the longest I/O: buffers (and io_uring's fixed ones) fit it */
  ctx.direct = s->direct;
  ctx.writable = writes;
  ctx.atomic = s->atomic && writes;  /* as fio: a job that does not write issues no atomic write */
  ctx.prio_split = s->prio_split;
  ctx.nprio_split = s->nprio_split;
  ctx.options = s->engine_options;
  ctx.io_us = io_us;
  /* fio's io_submit_mode=offload: the job's engine behind its submit threads */
  const struct engine_ops *run_ops = s->offload ? &offload_ops : ops;
  if ((s->offload ? offload_setup(&ctx, ops, s->ioprio) : ops->setup(&ctx)) < 0) {
    if (ctx.reason[0] != '\0') {
      w->unavailable = 1;
      memcpy(w->reason, ctx.reason, sizeof(w->reason));
    } else {
      worker_fail_errno(w, ctx.err, ctx.syscall, UINT64_MAX);
    }
  } else {
    cpu_enter(w->shared);
    int ok = run_loop(w, run_ops, &ctx) == 0;
    if (run_ops->flush != NULL && run_ops->flush(&ctx) < 0 && ok) worker_fail_errno(w, ctx.err, ctx.syscall, UINT64_MAX);
    /* fio's end_fsync: the written data reaches the device before the job ends (not timed) */
    for (unsigned i = 0; ok && s->end_fsync && writes && i < nfiles && fds[i] >= 0; i++)
      if (fsync(fds[i]) < 0) ok = worker_fail_errno(w, errno, "fsync", UINT64_MAX) == 0;
    /* fio 3.42's end_syncfs: one syncfs of the file system for every file the job wrote */
    if (ok && s->end_syncfs && writes && fds[0] >= 0 && syncfs(fds[0]) < 0) worker_fail_errno(w, errno, "syncfs", UINT64_MAX);
    cpu_leave(w->shared);
  }
  run_ops->cleanup(&ctx);
  job_exit_others(w);
  if (w->error.kind == JOB_OK && !w->unavailable && s->verify && writes) verify_pass(w, mem);
  backlog_free(w);
  free(mem);
  free(io_us);
  close_all(fds, nfiles);
  return NULL;
}

static void free_workers(struct worker *ws, unsigned n) {
  if (ws == NULL) return;
  for (unsigned i = 0; i < n; i++) {
    free(ws[i].dir);
    if (ws[i].files != NULL) {
      for (unsigned f = 0; f < ws[i].nfiles; f++) {
        free(ws[i].files[f].written);
        free(ws[i].files[f].randmap);
      }
      free(ws[i].files);
    } else {
      free(ws[i].written);
      free(ws[i].randmap);
    }
    for (int k = 0; k < LOG_KINDS; k++) log_text_free(&ws[i].logs.text[k]);
    free(ws[i].ws_starts);
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

static void merge_dir(struct dir_stats *into, const struct dir_stats *from) {
  into->ios += from->ios;
  into->bytes += from->bytes;
  hist_merge(&into->slat, &from->slat);
  hist_merge(&into->clat, &from->clat);
  hist_merge(&into->lat, &from->lat);
  /* bw and IOPS samples add up, as fio's group_reporting sums them: the summed mean is the
   * jobs' bandwidth together */
  samples_sum(&into->bw_kib, &from->bw_kib);
  samples_sum(&into->iops, &from->iops);
}

/* What a job's threads and the jobs of a group_reporting result merge alike: the first error
 * and reason, I/O counts and latencies, depths, the longest runtime, the earliest start. */
static void merge_measured(struct job_result *into, const struct job_error *error, int unavailable, const char *reason,
                           const struct dir_stats *dir, const struct depth_stats *depth, uint64_t runtime_ns,
                           uint64_t job_runtime_ns, uint64_t start_unix_ms) {
  if (error->kind != JOB_OK && into->error.kind == JOB_OK) into->error = *error;
  if (unavailable && !into->unavailable) {
    into->unavailable = 1;
    memcpy(into->reason, reason, sizeof(into->reason));
  }
  for (int d = 0; d < 2; d++) merge_dir(&into->dir[d], &dir[d]);
  depth_merge(&into->depth, depth);
  if (runtime_ns > into->runtime_ns) into->runtime_ns = runtime_ns;
  into->job_runtime_ns += job_runtime_ns;
  if (start_unix_ms != 0 && (into->start_unix_ms == 0 || start_unix_ms < into->start_unix_ms)) into->start_unix_ms = start_unix_ms;
}

/* share: this job's part of the process CPU of the window (its threads / all threads running). */
static void merge_workers(struct job_result *res, struct worker *ws, unsigned n, const struct job_shared *sh,
                          double share) {
  for (unsigned i = 0; i < n; i++) {
    struct worker *w = &ws[i];
    merge_measured(res, &w->error, w->unavailable, w->reason, w->dir, &w->depth, w->runtime_ns, w->runtime_ns,
                   w->start_unix_ms);
    res->verified_blocks += w->verified;
    res->syncs += w->syncs;
    if (w->spec->latency_target_ns != 0 && w->lat_qd > res->latency_depth) res->latency_depth = w->lat_qd;
    hist_merge(&res->sync_lat, &w->sync_lat);
    for (int k = 0; k < LOG_KINDS; k++) log_text_move(&res->logs[k], &w->logs.text[k]);
    res->async |= w->async;
    res->interrupted |= w->interrupted;
  }
  if (sh->cpu_started) {
    const struct rusage *a = &sh->cpu_from, *b = &sh->cpu_to;
    res->usr_sec = (tv_sec(b->ru_utime) - tv_sec(a->ru_utime)) * share;
    res->sys_sec = (tv_sec(b->ru_stime) - tv_sec(a->ru_stime)) * share;
    res->ctx = (uint64_t)((double)((b->ru_nvcsw + b->ru_nivcsw) - (a->ru_nvcsw + a->ru_nivcsw)) * share);
    res->majf = (uint64_t)((double)(b->ru_majflt - a->ru_majflt) * share);
    res->minf = (uint64_t)((double)(b->ru_minflt - a->ru_minflt) * share);
    res->elapsed_ns = sh->ended_ns - sh->started_ns;
  }
}

void job_result_merge(struct job_result *into, const struct job_result *from) {
  merge_measured(into, &from->error, from->unavailable, from->reason, from->dir, &from->depth, from->runtime_ns,
                 from->job_runtime_ns, from->start_unix_ms);
  if (from->elapsed_ns > into->elapsed_ns) into->elapsed_ns = from->elapsed_ns;
  into->usr_sec += from->usr_sec;
  into->sys_sec += from->sys_sec;
  into->ctx += from->ctx;
  into->majf += from->majf;
  into->minf += from->minf;
  into->verified_blocks += from->verified_blocks;
  into->syncs += from->syncs;
  if (from->latency_depth > into->latency_depth) into->latency_depth = from->latency_depth;
  if (into->ss.n == 0 && from->ss.n != 0) into->ss = from->ss;  /* a group's jobs share their steady state */
  hist_merge(&into->sync_lat, &from->sync_lat);
  into->laid_out_bytes += from->laid_out_bytes;
  into->async |= from->async;
  into->interrupted |= from->interrupted;
  into->layout_removed |= from->layout_removed;
}

/* Waits for every worker, reporting progress (all of them summed) and judging steady states about
 * every 200 ms. */
static void poll_progress(struct job_shared *sh, struct worker **all, unsigned n, uint64_t start, job_progress_fn progress,
                          void *arg) {
  for (unsigned i = 0; i < n; i++) {
    for (;;) {
      struct timespec until;
      clock_gettime(CLOCK_REALTIME, &until);
      until.tv_nsec += 200000000;
      if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
      }
      if (pthread_timedjoin_np(all[i]->thread, NULL, &until) == 0) break;
      ss_check(sh, all, n, now_ns());
      if (progress != NULL) {
        uint64_t ios = 0, bytes = 0;
        for (unsigned j = 0; j < n; j++) {
          ios += __atomic_load_n(&all[j]->ios_done, __ATOMIC_RELAXED);
          bytes += __atomic_load_n(&all[j]->bytes_done, __ATOMIC_RELAXED);
        }
        progress(arg, (enum job_phase)__atomic_load_n(&all[0]->phase, __ATOMIC_RELAXED), ios, bytes, now_ns() - start);
      }
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

/* The files a job's threads open: a diskless engine's none (one fd of -1), else the list's. */
static unsigned job_nfiles(const struct job_spec *spec) {
  return spec->nfiles > 1 && !(spec->ops->flags & ENGINE_DISKLESS) ? spec->nfiles : 1;
}

/* size: the job's, over all its files (each holds an equal share) */
static int init_workers(const struct job_spec *spec, struct job_shared *shared, uint64_t size, struct worker *ws) {
  unsigned nfiles = job_nfiles(spec);
  size /= nfiles;
  for (unsigned i = 0; i < spec->numjobs; i++) {
    struct worker *w = &ws[i];
    unsigned n = i + spec->clone;
    w->spec = spec;
    w->shared = shared;
    w->index = i;
    w->size = size;
    w->nblocks = size / spec->bs;
    w->last_pos = spec->offset;
    for (unsigned f = 0; spec->flow != 0 && f < shared->nflows; f++)
      if (shared->flows[f].id == spec->flow_id) w->flow = &shared->flows[f];
    w->rand_state = (spec->randseed + 1) * 0x9e3779b97f4a7c15ULL + n * 0x632be59bd9b4e019ULL + 1;
    w->fill_state = (w->rand_state ^ 0x5851f42d4c957f2dULL) | 1;
    w->dedupe_state = (w->rand_state ^ 0x2545f4914f6cdd1dULL) | 1;
    if (spec->dedupe_pct != 0 && spec->dedupe_mode == DEDUPE_WORKING_SET && !spec->dedupe_global) {
      uint64_t n = w->nblocks * spec->dedupe_ws_pct / 100;
      w->ws_n = n < 1 ? 1 : n;
      w->ws_starts = calloc(w->ws_n, sizeof(*w->ws_starts));
      if (w->ws_starts == NULL) return -1;
    }
    w->dir = malloc(2 * sizeof(*w->dir));
    if (w->dir == NULL) return -1;
    for (int d = 0; d < 2; d++) init_dir(&w->dir[d]);
    hist_init(&w->sync_lat);
    dist_init(w);
    /* a job over several files: each its own map and bitmap, the first one current */
    if (nfiles > 1) {
      w->files = calloc(nfiles, sizeof(*w->files));
      if (w->files == NULL) return -1;
      w->nfiles = nfiles;
    }
    for (unsigned f = nfiles; f-- > 0;) {
      w->randmap = NULL;
      w->written = NULL;
      if (randmap_init(w) < 0) return -1;
      if (w->files != NULL) {
        w->files[f] = (struct file_state){.fd = -1, .last_pos = w->last_pos, .map_left = w->map_left, .randmap = w->randmap};
      }
      if (spec->verify && job_writes(spec->rw)) {
        w->written = calloc((size_t)(w->nblocks + 7) / 8, 1);
        if (w->written == NULL) return -1;
        if (w->files != NULL) w->files[f].written = w->written;
      }
    }
  }
  return 0;
}

int job_run(const struct job_spec *spec, struct job_result *res, job_progress_fn progress, void *arg) {
  return job_run_group(spec, 1, res, progress, arg);
}

int job_run_group(const struct job_spec *specs, unsigned n, struct job_result *results, job_progress_fn progress,
                  void *arg) {
  for (unsigned j = 0; j < n; j++) {
    memset(&results[j], 0, sizeof(results[j]));
    for (int d = 0; d < 2; d++) init_dir(&results[j].dir[d]);
    hist_init(&results[j].sync_lat);
  }
  /* each file laid out before any job starts, one after another: a job never reads a file
   * another job of the group is still laying out */
  for (unsigned j = 0; j < n; j++) {
    uint64_t size = specs[j].size;
    int laid = layout_job(&specs[j], &size, &results[j], progress, arg);
    if (laid == -2) {
      for (unsigned k = 0; k < n; k++) results[k].interrupted = 1;
      return 0;
    }
    if (laid < 0) return -1;
    results[j].size = size;
  }

  int stop_all = 0, ret = 0;
  unsigned total = 0;
  struct job_shared shared;
  memset(&shared, 0, sizeof(shared));
  shared.abort = &stop_all;
  shared.specs = specs;
  shared.nspecs = n;
  pthread_mutex_init(&shared.lock, NULL);
  struct worker **ws = calloc(n, sizeof(*ws));
  shared.exited = calloc(n, sizeof(*shared.exited));
  shared.ramp_done = calloc(n, sizeof(*shared.ramp_done));
  if (ws == NULL || shared.exited == NULL || shared.ramp_done == NULL || ss_init(&shared) < 0) {
    free(ws);
    free(shared.exited);
    free(shared.ramp_done);
    free(shared.ss);
    pthread_mutex_destroy(&shared.lock);
    return job_errno(&results[0], ENOMEM, "malloc");
  }
  for (unsigned j = 0; j < n; j++) {
    total += specs[j].numjobs;
    if (specs[j].flow == 0) continue;
    unsigned f = 0;
    while (f < shared.nflows && shared.flows[f].id != specs[j].flow_id) f++;
    if (f == MAX_FLOWS) continue;  /* more flow ids than that: the rest run free */
    if (f == shared.nflows) shared.flows[shared.nflows++].id = specs[j].flow_id;
    shared.flows[f].total_weight += (long)specs[j].flow * (long)specs[j].numjobs;
  }
  struct worker **all = calloc(total, sizeof(*all));
  for (unsigned j = 0, k = 0; all != NULL && j < n; j++) {
    ws[j] = calloc(specs[j].numjobs, sizeof(*ws[j]));
    if (ws[j] == NULL || init_workers(&specs[j], &shared, results[j].size, ws[j]) < 0) {
      ret = job_errno(&results[j], ENOMEM, "malloc");
      goto out;
    }
    for (unsigned i = 0; i < specs[j].numjobs; i++) all[k++] = &ws[j][i];
  }
  if (all == NULL) {
    ret = job_errno(&results[0], ENOMEM, "malloc");
    goto out;
  }
  uint64_t start = now_ns();
  for (unsigned k = 0; k < total; k++) {
    int err = pthread_create(&all[k]->thread, NULL, worker_main, all[k]);
    if (err != 0) {
      __atomic_store_n(&stop_all, 1, __ATOMIC_RELAXED);  /* let the started ones end quickly */
      for (unsigned i = 0; i < k; i++) pthread_join(all[i]->thread, NULL);
      ret = job_errno(&results[0], err, "pthread_create");
      goto out;
    }
  }
  poll_progress(&shared, all, total, start, progress, arg);
  for (unsigned j = 0; j < n; j++) {
    merge_workers(&results[j], ws[j], specs[j].numjobs, &shared, (double)specs[j].numjobs / (double)total);
    ss_result(&shared, j, &results[j]);
    for (unsigned f = 0; job_writes(specs[j].rw) && results[j].owned && f < job_nfiles(&specs[j]); f++)
      layout_mark_written(job_nfiles(&specs[j]) > 1 ? specs[j].filenames[f] : specs[j].filename,
                          specs[j].verify && specs[j].verify_pattern_len == 0);
    if (results[j].error.kind != JOB_OK) ret = -1;
  }
out:
  for (unsigned j = 0; j < n; j++) free_workers(ws[j], specs[j].numjobs);
  free(ws);
  free(all);
  free(shared.exited);
  free(shared.ramp_done);
  free(shared.ss);
  pthread_mutex_destroy(&shared.lock);
  return ret;
}
