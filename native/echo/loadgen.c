/* The load generator's entry (echo_load_run): the pattern every message is cut from, the
 * shared gate, the mode table, and the figures of the whole run. The modes live in
 * loadgen_epoll.c, loadgen_uring.c and loadgen_threads.c (see loadgen.h for the layering). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "echo.h"
#include "loadgen.h"

static const load_mode_fn modes[] = {
  [ECHO_LOAD_EPOLL] = run_epoll,
  [ECHO_LOAD_THREADS] = run_threads,
  [ECHO_LOAD_URING] = run_uring,
};

int echo_load_run(const struct echo_load_config *cfg, struct echo_load_result *res) {
  memset(res, 0, sizeof(*res));
  if (cfg->mode < 0 || (size_t)cfg->mode >= sizeof(modes) / sizeof(modes[0])) {
    res->syscall = "echo_load_run";
    return -EINVAL;
  }
  unsigned char *pattern = malloc((size_t)cfg->length + PATTERN_SPAN);
  struct histogram *hist = calloc(1, sizeof(*hist));
  if (hist) hist_init(hist);
  if (!pattern || !hist) {
    free(pattern);
    free(hist);
    res->syscall = "malloc";
    return -ENOMEM;
  }
  for (size_t i = 0; i < (size_t)cfg->length + PATTERN_SPAN; i++)
    pattern[i] = (unsigned char)(i * 131u + (i >> 8) * 7u + 1u);
  struct shared sh;
  memset(&sh, 0, sizeof(sh));
  pthread_mutex_init(&sh.lock, NULL);
  pthread_cond_init(&sh.cond, NULL);
  sh.stop = cfg->stop;
  sh.server_pid = cfg->cpu_pid;
  sh.server_cpu0 = sh.server_cpu_ns = -1;
  int ret = modes[cfg->mode](cfg, pattern, &sh, hist, res);
  pthread_mutex_destroy(&sh.lock);
  pthread_cond_destroy(&sh.cond);
  res->elapsed_ns = sh.end > sh.start ? sh.end - sh.start : 0;
  res->server_cpu_ns = sh.server_cpu_ns;
  res->stopped_early = stop_requested(&sh) && sh.end < sh.deadline;
  res->p50_ns = hist_percentile(hist, 50);
  res->p99_ns = hist_percentile(hist, 99);
  res->p999_ns = hist_percentile(hist, 99.9);
  res->max_ns = hist->max;
  free(pattern);
  free(hist);
  return ret;
}
