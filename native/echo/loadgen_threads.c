/* The reference client: one blocking thread per connection, send the message, read the
 * whole echo, compare, again. What iolab's generator is checked against. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "echo.h"
#include "loadgen.h"

struct tclient {
  pthread_t tid;
  const struct echo_load_config *cfg;
  const unsigned char *pattern;
  struct shared *sh;
  uint32_t id;
  int fd;
  struct echo_load_result r;
  struct histogram *hist;
};

static void *tclient_main(void *arg) {
  struct tclient *k = arg;
  const struct echo_load_config *cfg = k->cfg;
  int err = 0;
  k->fd = socket(cfg->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (k->fd < 0) err = errno;
  if (k->fd >= 0) {
    struct timeval tv = { .tv_sec = 2, .tv_usec = 0 };
    setsockopt(k->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(k->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    echo_set_nodelay(k->fd);
    if (connect(k->fd, (const struct sockaddr *)&cfg->addr, cfg->addr_len) < 0) {
      err = errno;
      close(k->fd);
      k->fd = -1;
    }
  }
  if (k->fd < 0) {
    k->r.connect_errors++;
    k->r.connect_errno = err;
  } else {
    k->r.connected++;
  }
  gate_arrive_and_wait(k->sh);
  uint64_t cpu0 = echo_thread_cpu_ns();
  unsigned char *buf = k->fd >= 0 ? malloc(cfg->length) : NULL;
  uint64_t seq = 0, last_response = 0;
  while (buf) {
    uint64_t t0 = echo_now_ns();
    if (t0 >= k->sh->deadline || stop_requested(k->sh)) break;
    uint32_t offset = message_offset(seq++, k->id);
    k->r.requests++;
    uint32_t sent = 0, got = 0;
    int err = 0;
    while (sent < cfg->length && !err) {
      ssize_t n = send(k->fd, k->pattern + offset + sent, cfg->length - sent, MSG_NOSIGNAL);
      if (n < 0 && errno != EINTR) err = errno;
      else if (n > 0) sent += (uint32_t)n;
    }
    while (got < cfg->length && !err) {
      ssize_t n = recv(k->fd, buf + got, cfg->length - got, 0);
      if (n == 0) err = -1;
      else if (n < 0 && errno != EINTR) err = errno;
      else if (n > 0) got += (uint32_t)n;
    }
    if (err) {
      if (err == -1) k->r.short_echoes++;
      else if (err == EAGAIN) k->r.timeouts++;
      else k->r.resets++;
      break;
    }
    if (memcmp(buf, k->pattern + offset, cfg->length) != 0) {
      k->r.mismatches++;
      break;
    }
    k->r.responses++;
    k->r.bytes += cfg->length;
    uint64_t done = echo_now_ns();
    last_response = done;
    hist_add(k->hist, done - t0);
  }
  window_ended(k->sh, echo_now_ns(), last_response);
  k->r.cpu_ns = echo_thread_cpu_ns() - cpu0; /* the window's, without the close */
  free(buf);
  if (k->fd >= 0) close(k->fd);
  return NULL;
}

int run_threads(const struct echo_load_config *cfg, const unsigned char *pattern, struct shared *sh,
                struct histogram *hist, struct echo_load_result *res) {
  struct tclient *ks = calloc(cfg->clients, sizeof(*ks));
  if (!ks) return -ENOMEM;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  uint32_t started = 0;
  int ret = 0;
  for (; started < cfg->clients; started++) {
    struct tclient *k = &ks[started];
    k->cfg = cfg;
    k->pattern = pattern;
    k->sh = sh;
    k->id = started;
    k->hist = calloc(1, sizeof(struct histogram));
    if (k->hist) hist_init(k->hist);
    if (!k->hist || pthread_create(&k->tid, &attr, tclient_main, k) != 0) {
      free(k->hist);
      ret = -EAGAIN;
      res->syscall = "pthread_create";
      break;
    }
  }
  pthread_attr_destroy(&attr);
  /* If not all could start, the ones that did run a zero-length window. */
  gate_open_when(sh, started, started == cfg->clients ? cfg->duration_ns : 0);
  for (uint32_t i = 0; i < started; i++) {
    pthread_join(ks[i].tid, NULL);
    add_result(res, &ks[i].r);
    hist_merge(hist, ks[i].hist);
    free(ks[i].hist);
  }
  free(ks);
  return ret;
}

