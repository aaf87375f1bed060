/* The measured loop of one job thread: depth, batching, reaping, pacing, the ramp, latency
 * recording and the verify of what it reads (each I/O from job_next.c). Drives any engine through
 * engine.h and never looks inside one. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sdt.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include "worker.h"

/* USDT probes (provider iolab), the same for every engine: io_issue(offset, bytes, is_write) as an
 * I/O is handed to the engine, io_complete(offset, bytes, result) as the runner takes its
 * completion (result: bytes moved or -errno). `bpftrace -l 'usdt:<addon>:iolab:*'` lists them. */

/* The last window at the depth found is measured alone, as fio resets the job's figures for it. */
static void restart_measure(struct worker *w, uint64_t now) {
  for (int d = 0; d < 2; d++) {
    struct dir_stats *x = &w->dir[d];
    x->ios = x->bytes = 0;
    hist_init(&x->slat);
    hist_init(&x->clat);
    hist_init(&x->lat);
    samples_init(&x->bw_kib);
    samples_init(&x->iops);
    w->window_ios[d] = w->window_bytes[d] = 0;
  }
  memset(&w->depth, 0, sizeof(w->depth));
  w->window_from = now;
  w->measure_from = now;
  w->issued_bytes = 0;
}

/* fio's ramp_size: the ramp ends once the job, or its group (ramp_group, fio's group_reporting),
 * has completed ramp_bytes; what completes after that is measured. */
static void ramp_bytes_done(struct worker *w, uint32_t len, uint64_t t) {
  const struct job_spec *s = w->spec;
  struct job_shared *sh = w->shared;
  unsigned me = (unsigned)(s - sh->specs);
  __atomic_add_fetch(&sh->ramp_done[me], len, __ATOMIC_RELAXED);
  uint64_t done = 0;
  for (unsigned j = 0; j < sh->nspecs; j++) {
    const struct job_spec *o = &sh->specs[j];
    if (j == me || (s->ramp_group && o->ramp_group && o->groupid == s->groupid))
      done += __atomic_load_n(&sh->ramp_done[j], __ATOMIC_RELAXED);
  }
  if (done >= s->ramp_bytes) w->measure_from = t;
}

static int complete_io(struct worker *w, struct io_u *io, uint64_t t, int async) {
  const struct job_spec *s = w->spec;
  if (s->ramp_bytes != 0 && w->measure_from == UINT64_MAX) ramp_bytes_done(w, io->len, t);
  DTRACE_PROBE3(iolab, io_complete, io->offset, io->len, io->result);
  if (io->result != (int64_t)io->len) {
    const char *call = io->ddir == DDIR_READ ? "read" : "write";
    return worker_fail_errno(w, io->result < 0 ? (int)-io->result : EIO, call, io->offset);  /* short: EIO */
  }
  if (io->ddir == DDIR_WRITE) {
    w->writes_since_sync++;
    w->sync_fd = io->fd;
  }
  if (s->latency_target_ns != 0 && lat_check_io(w, io, t) < 0) return -1;
  if (s->verify) {
    if (io->ddir == DDIR_READ) {
      if (verify_read_io(w, io) < 0) return -1;
    } else {
      uint64_t b = (io->offset - s->offset) / s->bs;
      unsigned char *written = w->files != NULL ? w->files[io->file].written : w->written;
      written[b / 8] |= (unsigned char)(1u << (b % 8));
      if (s->verify_backlog) backlog_note(w, io->file, io->offset);
    }
  }
  if (io->start_ns >= w->measure_from) {
    struct dir_stats *d = &w->dir[io->ddir];
    d->ios++;
    d->bytes += io->len;
    __atomic_store_n(&w->ios_done, w->ios_done + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&w->bytes_done, w->bytes_done + io->len, __ATOMIC_RELAXED);
    if (s->gtod_reduce) return 0;  /* fio's gtod_reduce: counts only, no latencies or samples */
    uint64_t clat = async ? t - io->issue_ns : t - io->start_ns;
    __atomic_store_n(&w->clat_sum_ns, w->clat_sum_ns + clat, __ATOMIC_RELAXED);
    job_logs_io(&w->logs, t, io->ddir, io->len, io->offset, t - io->start_ns, clat, async ? io->issue_ns - io->start_ns : 0, async, io->ioprio);
    hist_add(&d->lat, t - io->start_ns);
    if (async) {
      hist_add(&d->slat, io->issue_ns - io->start_ns);
      hist_add(&d->clat, t - io->issue_ns);
    } else {
      hist_add(&d->clat, t - io->start_ns);
    }
    w->window_ios[io->ddir]++;
    w->window_bytes[io->ddir] += io->len;
    window_tick(w, t);
  }
  return 0;
}

/* Commits what was queued since the last commit and stamps its issue time. */
static int commit_queued(struct worker *w, const struct engine_ops *ops, struct engine_ctx *ctx,
                         struct io_u **queued, unsigned *nqueued, unsigned inflight) {
  unsigned n = *nqueued;
  *nqueued = 0;
  if (ops->commit != NULL && ops->commit(ctx) < 0) return worker_fail_errno(w, ctx->err, ctx->syscall, UINT64_MAX);
  uint64_t t = now_ns();
  for (unsigned i = 0; i < n; i++) queued[i]->issue_ns = t;
  depth_mark_level(&w->depth, inflight, n);
  depth_mark_submit(&w->depth, n);
  w->async = 1;
  return 0;
}

/* How many completions a reap waits for and takes, as fio's wait_for_completions and
 * td_io_getevents count them: at least one, at most what is in flight, max never below min. By
 * default (1 and 1) fio reaps one I/O and refills its slot before reaping the next. */
static unsigned reap_min(const struct job_spec *s, unsigned inflight) {
  unsigned min = s->iodepth_batch_complete_min < inflight ? s->iodepth_batch_complete_min : inflight;
  return min == 0 ? 1 : min;
}

static unsigned reap_max(const struct job_spec *s, unsigned inflight) {
  unsigned max = s->iodepth_batch_complete_max;
  if (max < s->iodepth_batch_complete_min) max = s->iodepth_batch_complete_min;
  if (max > inflight) max = inflight;
  unsigned min = reap_min(s, inflight);
  return max < min ? min : max;
}

/* fio's rate_ddir: a mixed job whose drawn direction is ahead of its rate takes the other
 * direction when that one is due first (one without a cap is always due), so a capped mixed
 * job does not wait out one direction's slot while the other could go. */
static void rate_direction(struct worker *w, struct io_u *io) {
  const struct job_spec *s = w->spec;
  if (s->rw != RW_RANDRW && s->rw != RW_READWRITE) return;
  int d = io->ddir, o = d ^ 1;
  unsigned other_share = o == DDIR_READ ? s->rwmixread : 100 - s->rwmixread;
  if (other_share == 0 || w->rate_next_ns[d] == 0 || w->rate_next_ns[d] <= now_ns()) return;
  if (w->rate_next_ns[o] < w->rate_next_ns[d]) {
    io->ddir = (enum io_ddir)o;
    fill_buffer(w, io);
  }
}

/* The ramp ends: from now on the I/Os count, toward number_ios or size too (a ramp_size's bytes
 * count in the size, as fio's). */
static void ramp_over(struct worker *w, uint64_t now, uint64_t *issued, uint64_t *deadline) {
  if (w->phase != PHASE_RAMP || now < w->measure_from) return;
  w->phase = PHASE_RUN;
  if (w->spec->ramp_bytes == 0) {
    *issued = 0;
    w->issued_bytes = 0;
    return;
  }
  /* the ramp's bytes are done: the runtime and job_start count from here, as fio's */
  if (w->spec->runtime_ns) *deadline = w->measure_from + w->spec->runtime_ns;
  struct timespec at;
  clock_gettime(CLOCK_REALTIME, &at);
  w->start_unix_ms = ((uint64_t)at.tv_sec * 1000000000ull + (uint64_t)at.tv_nsec - (now - w->measure_from)) / 1000000ull;
}

/* The measured loop: keep depth I/Os in flight, commit every iodepth_batch, reap what completed.
 * An engine that answers BUSY gets the same I/O again once the runner has committed and reaped. */
int run_loop(struct worker *w, const struct engine_ops *ops, struct engine_ctx *ctx) {
  const struct job_spec *s = w->spec;
  unsigned depth = s->iodepth, nfree = depth, inflight = 0, nqueued = 0;
  unsigned batch = s->iodepth_batch == 0 ? 1 : s->iodepth_batch;
  struct io_u **free_list = calloc(depth, sizeof(*free_list));
  struct io_u **queued = calloc(depth, sizeof(*queued));
  if (free_list == NULL || queued == NULL) {
    free(free_list);
    free(queued);
    return worker_fail_errno(w, ENOMEM, "calloc", UINT64_MAX);
  }
  /* a stack in fio's order: the highest slot goes first, reaped units are reused last-in first-out
   * (posixaio's wake-up rule depends on which slots are in flight, as fio's does) */
  for (unsigned i = 0; i < depth; i++) free_list[i] = &ctx->io_us[i];
  /* as fio: a time_based job runs for its runtime (number_ios does not end it), any other ends
   * after its size, or after number_ios I/Os when that comes first; both counted after the ramp,
   * which runs for its time whatever the size */
  /* one pass is the size's blocks (io_size's, wrapping, when given); loops passes */
  unsigned nfiles = w->nfiles > 1 ? w->nfiles : 1;
  uint64_t pass = s->io_limit ? s->io_limit / s->bs : w->nblocks * nfiles;  /* size is every file's */
  uint64_t budget = s->time_based ? UINT64_MAX : pass * (s->loops ? s->loops : 1);
  /* with lengths that vary (bsrange, bssplit) the size is a budget of bytes, as fio's io_size:
   * I/Os are issued while less than it was. A pass over the region moves exactly its size (the
   * last I/Os shortened to fit, next_len), so a sequential job or a random one with its map ends
   * on it; one drawn with replacement (norandommap, a distribution) passes it by less than an I/O,
   * as fio's */
  uint64_t byte_budget = UINT64_MAX;
  if (job_varlen(s) && !s->time_based) {
    byte_budget = (s->io_limit ? s->io_limit : w->size * nfiles) * (s->loops ? s->loops : 1);
    budget = UINT64_MAX;
  }
  if (!s->time_based && s->number_ios != 0 && (s->number_ios < budget || s->number_ios_wraps)) budget = s->number_ios;
  uint64_t issued = 0, start = now_ns(), now = start;
  job_logs_init(&w->logs, s->log_mask, s->log_avg_ms, start);
  w->logs.log_prio = s->log_prio;
  w->logs.log_offset = s->log_offset;
  w->measure_from = s->ramp_bytes != 0 ? UINT64_MAX : start + s->ramp_ns;  /* ramp_size: until its bytes are done */
  struct timespec wall;
  clock_gettime(CLOCK_REALTIME, &wall);
  w->start_unix_ms = ((uint64_t)wall.tv_sec * 1000000000ull + (uint64_t)wall.tv_nsec + s->ramp_ns) / 1000000ull;
  uint64_t deadline = s->runtime_ns && s->ramp_bytes == 0 ? w->measure_from + s->runtime_ns : UINT64_MAX;
  uint64_t last = start;
  struct io_u *retry = NULL;  /* refused with BUSY, offered again after a reap */
  int failed = 0, stop = 0, commit_failed = 0;
  w->phase = s->ramp_ns || s->ramp_bytes ? PHASE_RAMP : PHASE_RUN;
  w->lat_qd = s->latency_target_ns ? 1 : depth;
  w->lat_qd_low = 1;
  w->lat_qd_high = depth;
  lat_new_window(w, start);
  for (;;) {
    if (lat_check_window(w, now)) {
      restart_measure(w, now);
      issued = 0;
      if (s->runtime_ns) deadline = now + s->runtime_ns;
    }
    ramp_over(w, now, &issued, &deadline);
    nqueued = 0;
    /* latency_target: no more in flight than the depth being tried */
    while (!stop && !failed && (retry != NULL || (nfree > 0 && depth - nfree < w->lat_qd))) {
      if (job_stopped(w)) {
        w->interrupted = s->stop != NULL && __atomic_load_n(s->stop, __ATOMIC_RELAXED);
        stop = 1;
        break;
      }
      struct io_u *io = retry;
      uint64_t t = now_ns();
      if (io == NULL) {
        /* the clock the I/O is stamped with decides both whether it counts (complete_io) and
         * whether it is one of number_ios: one issued as the ramp ends was counted once and
         * missed by the other (2001 of -number_ios=2000) */
        ramp_over(w, t, &issued, &deadline);
        if (w->lat_done ||
            (w->phase != PHASE_RAMP && (issued >= budget || w->issued_bytes >= byte_budget || now >= deadline || seq_add_done(w)))) {
          stop = 1;
          break;
        }
        /* fio's flow: ahead of its share, the job waits (its I/Os in flight done first, as fio) */
        if (flow_ahead(w)) {
          if (inflight > 0) break;
          if (s->flow_sleep_ns) job_stall(s->flow_sleep_ns);
          else sched_yield();
          now = now_ns();  /* the deadline is checked against it: a waiting job still ends on time */
          continue;
        }
        /* a sync waits for the writes in flight, then runs before the next I/O */
        if (sync_due(w)) {
          if (inflight > 0) break;
          if (sync_if_due(w) < 0) {
            failed = 1;
            break;
          }
        }
        /* fio's verify_backlog: so does the check of the blocks written lately */
        if (backlog_due(w)) {
          if (inflight > 0) break;
          if (backlog_verify(w) < 0) {
            failed = 1;
            break;
          }
        }
        io = free_list[--nfree];
        prepare_io(w, io);
        if (s->thinktime_ns != 0 && issued > 0) job_stall_unless_stopped(w, s->thinktime_ns);  /* fio's thinktime */
        rate_direction(w, io);
        wait_for_rate(w, io);
        if (job_stopped(w)) {  /* stopped while it waited: the I/O is not issued */
          free_list[nfree++] = io;
          continue;
        }
        /* stamped after the waits: the ramp may have ended meanwhile, and the stamp decides */
        t = now_ns();
        ramp_over(w, t, &issued, &deadline);
        issued++;
        w->issued_bytes += io->len;
      }
      retry = NULL;
      io->start_ns = t;
      DTRACE_PROBE3(iolab, io_issue, io->offset, io->len, io->ddir == DDIR_WRITE);
      int r = ops->queue(ctx, io);
      if (r == FIO_Q_COMPLETED) {
        now = now_ns();
        last = now;
        ramp_over(w, now, &issued, &deadline);
        depth_mark_level(&w->depth, 1, 1);
        depth_mark_submit(&w->depth, 1);
        depth_mark_complete(&w->depth, 1);
        if (complete_io(w, io, now, 0) < 0) failed = 1;
        free_list[nfree++] = io;
      } else if (r == FIO_Q_QUEUED) {
        queued[nqueued++] = io;
        inflight++;
        /* fio's iodepth_batch_submit (default 1): hand each I/O to the device as soon as it is
         * queued; a bigger batch saves syscalls but lets the device queue drain meanwhile */
        if (nqueued >= batch && commit_queued(w, ops, ctx, queued, &nqueued, inflight) < 0) {
          failed = commit_failed = 1;
          break;
        }
      } else if (r == FIO_Q_BUSY) {
        retry = io;
        break;
      } else {
        worker_fail_errno(w, ctx->err, ctx->syscall, io->offset);
        free_list[nfree++] = io;
        failed = 1;
      }
    }
    if (!commit_failed && nqueued > 0 && commit_queued(w, ops, ctx, queued, &nqueued, inflight) < 0)
      failed = commit_failed = 1;
    /* after a failed commit, what was queued may or may not be in flight: cleanup() handles it */
    if (commit_failed) break;
    if (inflight == 0) {
      if (retry != NULL && !stop && !failed) {  /* busy with nothing in flight: it never frees up */
        worker_fail_errno(w, EBUSY, "queue", retry->offset);
        failed = 1;
      }
      if (stop || failed) break;
      continue;
    }
    int n = ops->getevents(ctx, reap_min(s, inflight), reap_max(s, inflight));
    if (n < 0) {
      worker_fail_errno(w, ctx->err, ctx->syscall, UINT64_MAX);
      failed = 1;
      break;
    }
    now = now_ns();
    last = now;
    depth_mark_complete(&w->depth, (unsigned)n);
    for (int i = 0; i < n; i++) {
      struct io_u *io = ops->event(ctx, (unsigned)i);
      if (!failed && complete_io(w, io, now, 1) < 0) failed = 1;
      free_list[nfree++] = io;
    }
    inflight -= (unsigned)n;
  }
  w->runtime_ns = last > w->measure_from ? last - w->measure_from : 0;
  /* as fio's flow_exit_job: a job done leaves its flow, so the others are not held to its share */
  if (w->flow != NULL) __atomic_sub_fetch(&w->flow->total_weight, (long)s->flow, __ATOMIC_RELAXED);
  job_logs_finish(&w->logs, last);
  free(free_list);
  free(queued);
  return failed ? -1 : 0;
}
