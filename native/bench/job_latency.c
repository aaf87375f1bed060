/* fio's latency_target search for one job thread (job_loop.c calls it per I/O and per window). */
#include <errno.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "worker.h"

/* fio's latency_target, as fio's lat_target_* search it: from depth 1, a window that met the
 * target doubles the depth (bisects once a depth failed), a window that did not (or, at
 * latency_percentile=100, one I/O over the target) bisects down; a depth found twice gets one
 * last window, measured alone, and ends the job (latency_run: it searches on). */
void lat_new_window(struct worker *w, uint64_t now) {
  w->lat_window_from = now;
  w->lat_ios_from = w->lat_ios;
  w->lat_failed = 0;
}

/* 1 at depth 1: nothing shallower to try (fio's window goes on; an I/O over a target every I/O
 * must meet fails the job) */
static int lat_ramp_down(struct worker *w, uint64_t now) {
  if (w->lat_qd == 1) return 1;
  w->lat_qd_high = w->lat_qd;
  if (w->lat_qd == w->lat_qd_low) w->lat_qd_low--;
  w->lat_qd = (w->lat_qd + w->lat_qd_low) / 2;
  w->lat_stable = 0;
  lat_new_window(w, now);
  return 0;
}

/* 1: the depth is found, its last window starts (the measurement restarts) */
static int lat_ramp_up(struct worker *w, uint64_t now) {
  const struct job_spec *s = w->spec;
  unsigned qd = w->lat_qd;
  int restart = 0;
  w->lat_qd_low = w->lat_qd;
  /* one below the failing depth three times in a row: try the failing one again */
  if (w->lat_qd + 1 == w->lat_qd_high && ++w->lat_stable >= 3) {
    w->lat_qd_high++;
    w->lat_stable = 0;
  }
  w->lat_qd = w->lat_qd_high != s->iodepth ? (w->lat_qd + w->lat_qd_high) / 2 : w->lat_qd * 2;
  if (w->lat_qd > s->iodepth) w->lat_qd = s->iodepth;
  if (!s->latency_run && w->lat_qd == qd) {
    if (w->lat_end_run) w->lat_done = 1;
    else restart = w->lat_end_run = 1;
  }
  lat_new_window(w, now);
  return restart;
}

int lat_check_io(struct worker *w, const struct io_u *io, uint64_t t) {
  const struct job_spec *s = w->spec;
  w->lat_ios++;
  if (t - io->start_ns <= s->latency_target_ns) return 0;
  if (s->latency_percentile < 100.0) {
    w->lat_failed++;
    return 0;
  }
  if (lat_ramp_down(w, t) == 0 || w->error.kind != JOB_OK) return 0;
  w->error.kind = JOB_USER;
  snprintf(w->error.message, sizeof(w->error.message),
           "latency_target: a %s of %u bytes at offset %llu took %llu ns at depth 1, over the target of %llu ns "
           "(fio fails the job too: \"max latency exceeded\")",
           io->ddir == DDIR_READ ? "read" : "write", io->len, (unsigned long long)io->offset,
           (unsigned long long)(t - io->start_ns), (unsigned long long)s->latency_target_ns);
  return -1;
}

int lat_check_window(struct worker *w, uint64_t now) {
  const struct job_spec *s = w->spec;
  if (s->latency_target_ns == 0 || w->lat_done || now - w->lat_window_from < s->latency_window_ns) return 0;
  uint64_t ios = w->lat_ios - w->lat_ios_from;
  if (ios > 0 && (double)(ios - w->lat_failed) * 100.0 / (double)ios >= s->latency_percentile) return lat_ramp_up(w, now);
  (void)lat_ramp_down(w, now);
  return 0;
}

