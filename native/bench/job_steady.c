/* fio's steady state (steadystate/ss, ss_dur, ss_ramp, ss_interval): every check interval the
 * job's (with group_reporting, its group's) IOPS, bandwidth and mean completion latency over the
 * interval go into a window of ss_dur; once the window is full its criterion (the largest
 * deviation from the window's mean, or its least-squares slope; as a percent of the mean, or
 * absolute) is checked against the limit, and a job that meets it ends, its group's jobs with it.
 * Run by the thread that waits for the jobs (job.c's poll), off the jobs' own threads. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "worker.h"

/* The first job of the unit a job's steady state is judged in: itself, or the first job of its
 * group when group_reporting joins them. */
static unsigned ss_leader(const struct job_shared *sh, unsigned j) {
  const struct job_spec *s = &sh->specs[j];
  if (!s->ss_group) return j;
  for (unsigned i = 0; i < j; i++)
    if (sh->specs[i].ss_group && sh->specs[i].groupid == s->groupid && sh->specs[i].ss_dur_ns != 0) return i;
  return j;
}

static double ss_value(const struct job_spec *s, const struct ss_window *win, unsigned k) {
  return s->ss_kind & SS_IOPS ? (double)win->iops[k] : s->ss_kind & SS_BW ? (double)win->bw[k] : (double)win->lat[k];
}

/* The window's criterion: its slope (least squares over the intervals in order) or its largest
 * deviation from its mean, a percent of the mean with SS_PCT, as fio's steadystate_slope and
 * steadystate_deviation. */
static void ss_judge(const struct job_spec *s, struct ss_window *win) {
  unsigned n = win->n;
  double sum = 0, sum_xy = 0, sum_x = 0, sum_x2 = 0;
  for (unsigned i = 0; i < n; i++) {
    double y = ss_value(s, win, (win->head + i) % n);
    sum += y;
    sum_xy += (double)i * y;
    sum_x += i;
    sum_x2 += (double)i * i;
  }
  double mean = sum / n;
  /* as fio: a slope criterion computes the slope only, a deviation one the deviation only */
  win->slope = win->deviation = 0;
  if (s->ss_kind & SS_SLOPE) {
    win->slope = n > 1 ? (sum_xy - sum_x * sum / n) / (sum_x2 - sum_x * sum_x / n) : 0;
  } else {
    for (unsigned i = 0; i < n; i++) win->deviation = fmax(win->deviation, fabs(ss_value(s, win, i) - mean));
  }
  double raw = s->ss_kind & SS_SLOPE ? win->slope : win->deviation;
  win->criterion = s->ss_kind & SS_PCT ? (mean != 0 ? 100.0 * raw / mean : INFINITY) : raw;
  if (fabs(win->criterion) < s->ss_limit) win->attained = 1;
}

void ss_check(struct job_shared *sh, struct worker *const *all, unsigned nworkers, uint64_t now) {
  for (unsigned j = 0; j < sh->nspecs; j++) {
    const struct job_spec *s = &sh->specs[j];
    struct ss_window *win = &sh->ss[j];
    if (s->ss_dur_ns == 0 || ss_leader(sh, j) != j || win->attained || now < win->next_check) continue;
    /* the unit's measured I/Os, bytes and completion latencies so far */
    uint64_t ios = 0, bytes = 0, lat_sum = 0;
    int running = 0;
    for (unsigned k = 0; k < nworkers; k++) {
      const struct worker *w = all[k];
      unsigned wj = (unsigned)(w->spec - sh->specs);
      if (ss_leader(sh, wj) != j) continue;
      ios += __atomic_load_n(&w->ios_done, __ATOMIC_RELAXED);
      bytes += __atomic_load_n(&w->bytes_done, __ATOMIC_RELAXED);
      lat_sum += __atomic_load_n(&w->clat_sum_ns, __ATOMIC_RELAXED);
      running |= __atomic_load_n(&w->phase, __ATOMIC_RELAXED) == PHASE_RUN;
    }
    if (!running) continue;
    if (win->prev_at == 0) {
      /* the measured time began: data from one interval after ss_ramp on, as fio */
      win->prev_at = now;
      win->record_from = now + s->ss_ramp_ns + s->ss_interval_ns;
      win->next_check = now + s->ss_interval_ns;
      continue;
    }
    uint64_t span = now - win->prev_at;
    win->next_check = now + s->ss_interval_ns;
    if (now >= win->record_from && span > 0) {
      /* one interval's worth, whatever the poll's own timing made this one */
      double scale = (double)s->ss_interval_ns / (double)span;
      unsigned k = (win->head + win->filled) % win->n;
      if (win->filled == win->n) win->head = (win->head + 1) % win->n;
      else win->filled++;
      win->iops[k] = (uint64_t)((double)(ios - win->prev_ios) * scale + 0.5);
      win->bw[k] = (uint64_t)((double)(bytes - win->prev_bytes) * scale + 0.5);
      win->lat[k] = ios > win->prev_ios ? (lat_sum - win->prev_lat) / (ios - win->prev_ios) : 0;
      if (win->filled == win->n) ss_judge(s, win);
      if (win->attained)
        for (unsigned i = 0; i < sh->nspecs; i++)
          if (ss_leader(sh, i) == j) __atomic_store_n(&sh->exited[i], 1, __ATOMIC_RELAXED);
    }
    win->prev_at = now;
    win->prev_ios = ios;
    win->prev_bytes = bytes;
    win->prev_lat = lat_sum;
  }
}

void ss_result(const struct job_shared *sh, unsigned j, struct job_result *res) {
  const struct job_spec *s = &sh->specs[j];
  if (s->ss_dur_ns == 0) return;
  const struct ss_window *win = &sh->ss[ss_leader(sh, j)];
  res->ss.attained = win->attained;
  res->ss.criterion = win->criterion;
  res->ss.deviation = win->deviation;
  res->ss.slope = win->slope;
  res->ss.n = win->n;
  /* the window in time order, oldest first (fio's head), unfilled intervals 0 */
  for (unsigned i = 0; i < win->n; i++) {
    unsigned k = (win->head + i) % win->n;
    int have = i < win->filled;
    res->ss.iops[i] = have ? win->iops[k] : 0;
    res->ss.bw[i] = have ? win->bw[k] : 0;
    res->ss.lat[i] = have ? win->lat[k] : 0;
  }
}

int ss_init(struct job_shared *sh) {
  sh->ss = calloc(sh->nspecs, sizeof(*sh->ss));
  if (sh->ss == NULL) return -1;
  for (unsigned j = 0; j < sh->nspecs; j++) {
    const struct job_spec *s = &sh->specs[j];
    if (s->ss_dur_ns == 0) continue;
    unsigned n = (unsigned)(s->ss_dur_ns / s->ss_interval_ns);
    sh->ss[j].n = n < 1 ? 1 : n > SS_MAX_INTERVALS ? SS_MAX_INTERVALS : n;
  }
  return 0;
}
