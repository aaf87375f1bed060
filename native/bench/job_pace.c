/* The pacing of one job thread's loop: fio's rate and rate_iops, thinktime's sleep, fsync=N and
 * flow. job_loop.c calls these between I/Os. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "worker.h"

void job_stall(uint64_t ns) {
  struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull), .tv_nsec = (long)(ns % 1000000000ull)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

/* Sleeps ns, waking early once the job is stopped: an exitall or Ctrl-C does not wait out a
 * long rate slot (fio's, too, ends a job waiting for its rate). */
void job_stall_unless_stopped(const struct worker *w, uint64_t ns) {
  const uint64_t slice = 10000000ull;
  for (uint64_t until = now_ns() + ns, now; (now = now_ns()) < until && !job_stopped(w);)
    job_stall(until - now < slice ? until - now : slice);
}

/* fio's rate and rate_iops: an I/O of a capped direction waits for its slot (1/rate_iops s, or
 * its bytes at rate bytes/s, after the previous one's), as fio's rate thread paces the job; with
 * rate_process=poisson the gaps are drawn from an exponential of that mean, as fio's. */
void wait_for_rate(struct worker *w, const struct io_u *io) {
  const struct job_spec *s = w->spec;
  uint64_t iops = s->rate_iops[io->ddir], bytes = s->rate_bytes[io->ddir];
  if (iops == 0 && bytes == 0) return;
  uint64_t step = iops ? 1000000000ull / iops : (uint64_t)io->len * 1000000000ull / bytes;
  if (s->rate_poisson) {
    double u = (double)((next_random(&w->fill_state) >> 11) + 1) * 0x1.0p-53;  /* (0, 1] */
    step = (uint64_t)((double)step * -log(u));
  }
  uint64_t now = now_ns();
  uint64_t *next = &w->rate_next_ns[io->ddir];
  if (*next == 0) *next = now;
  if (*next > now) job_stall_unless_stopped(w, *next - now);
  *next += step;
}

/* fio's fsync=N / fdatasync=N: after N writes, with nothing in flight, the file is synced; each
 * sync counted and timed (fio's "sync" figures). 0, or -1 when it failed. */
int sync_if_due(struct worker *w) {
  const struct job_spec *s = w->spec;
  if (s->fsync_every == 0 || w->writes_since_sync < s->fsync_every) return 0;
  uint64_t t = now_ns();
  int r = s->sync_is_fdatasync ? fdatasync(w->sync_fd) : fsync(w->sync_fd);
  if (r < 0) return worker_fail_errno(w, errno, s->sync_is_fdatasync ? "fdatasync" : "fsync", UINT64_MAX);
  w->writes_since_sync = 0;
  if (t >= w->measure_from) {
    w->syncs++;
    hist_add(&w->sync_lat, now_ns() - t);
  }
  return 0;
}

int sync_due(const struct worker *w) {
  return w->spec->fsync_every != 0 && w->writes_since_sync >= w->spec->fsync_every;
}

/* fio's flow (flow_threshold_exceeded): a job whose share of its flow's I/Os is above its share
 * of the weights waits; otherwise its I/O counts toward both. A job whose weight or whose flow's
 * total is not above 0 runs free (fio 3.33 runs its butterfly example's flow=2 and flow=-2 so). */
int flow_ahead(struct worker *w) {
  const struct job_spec *s = w->spec;
  struct job_flow *f = w->flow;
  if (f == NULL || s->flow <= 0 || __atomic_load_n(&f->total_weight, __ATOMIC_RELAXED) <= 0) return 0;
  uint64_t all = __atomic_load_n(&f->counter, __ATOMIC_RELAXED);
  long total = __atomic_load_n(&f->total_weight, __ATOMIC_RELAXED);
  if (all != 0 && (double)w->flow_counter / (double)all > (double)s->flow / (double)total) return 1;
  __atomic_add_fetch(&f->counter, 1, __ATOMIC_RELAXED);
  w->flow_counter++;
  return 0;
}

