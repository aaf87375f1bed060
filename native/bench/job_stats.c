/* Statistics the runner keeps beside the latency histograms, as fio reports them: queue depth
 * levels, I/Os per submit and per reap, bw/iops samples every 500 ms, and the process CPU over
 * the I/O loops; and the job's first error. */
#include <string.h>

#include "worker.h"

#define SAMPLE_WINDOW_NS 500000000ull  /* fio's bwavgtime / iopsavgtime */

void depth_mark_level(struct depth_stats *d, unsigned inflight, unsigned n) {
  unsigned i = inflight >= 64 ? 6 : inflight >= 32 ? 5 : inflight >= 16 ? 4 : inflight >= 8 ? 3 :
               inflight >= 4 ? 2 : inflight >= 2 ? 1 : 0;
  d->level[i] += n;
}

static unsigned count_bucket(unsigned n) {
  return n == 0 ? 0 : n <= 4 ? 1 : n <= 8 ? 2 : n <= 16 ? 3 : n <= 32 ? 4 : n <= 64 ? 5 : 6;
}

void depth_mark_submit(struct depth_stats *d, unsigned n) { d->submit[count_bucket(n)]++; }
void depth_mark_complete(struct depth_stats *d, unsigned n) { d->complete[count_bucket(n)]++; }

void depth_merge(struct depth_stats *into, const struct depth_stats *from) {
  for (int i = 0; i < DEPTH_BUCKETS; i++) {
    into->level[i] += from->level[i];
    into->submit[i] += from->submit[i];
    into->complete[i] += from->complete[i];
  }
}

void samples_init(struct sample_stats *s) { memset(s, 0, sizeof(*s)); }

void samples_add(struct sample_stats *s, double v) {
  if (s->n == 0 || v < s->min) s->min = v;
  if (s->n == 0 || v > s->max) s->max = v;
  s->n++;
  double delta = v - s->mean;
  s->mean += delta / (double)s->n;
  s->m2 += delta * (v - s->mean);
}

void samples_sum(struct sample_stats *into, const struct sample_stats *from) {
  if (from->n == 0) return;
  into->min += from->min;
  into->max += from->max;
  into->mean += from->mean;
  into->m2 += from->m2;
  into->n += from->n;
}

void window_tick(struct worker *w, uint64_t now) {
  if (w->window_from == 0) w->window_from = w->measure_from;
  if (now < w->window_from + SAMPLE_WINDOW_NS) return;
  double secs = (double)(now - w->window_from) / 1e9;
  for (int d = 0; d < 2; d++) {
    if (d == DDIR_READ ? !job_reads(w->spec->rw) : !job_writes(w->spec->rw)) continue;
    samples_add(&w->dir[d].bw_kib, (double)w->window_bytes[d] / 1024.0 / secs);
    samples_add(&w->dir[d].iops, (double)w->window_ios[d] / secs);
    w->window_ios[d] = w->window_bytes[d] = 0;
  }
  w->window_from = now;
}

void cpu_enter(struct job_shared *s) {
  pthread_mutex_lock(&s->lock);
  if (s->in_loop++ == 0 && !s->cpu_started) {
    getrusage(RUSAGE_SELF, &s->cpu_from);
    s->cpu_started = 1;
    s->started_ns = now_ns();
  }
  pthread_mutex_unlock(&s->lock);
}

void cpu_leave(struct job_shared *s) {
  pthread_mutex_lock(&s->lock);
  if (--s->in_loop == 0) {
    getrusage(RUSAGE_SELF, &s->cpu_to);
    s->ended_ns = now_ns();
  }
  pthread_mutex_unlock(&s->lock);
}

/* The job's first error (later ones are its consequences); -1, for `return worker_fail_errno(...)`. */
int worker_fail_errno(struct worker *w, int err, const char *syscall, uint64_t offset) {
  if (w->error.kind == JOB_OK) {
    w->error.kind = JOB_ERRNO;
    w->error.err = err;
    w->error.syscall = syscall;
    w->error.offset = offset;
  }
  return -1;
}
