/* The load generator on epoll, rust_echo_bench's protocol: every connection sends one message
 * of `length` bytes and waits for the whole echo before the next. Each worker thread has its own
 * epoll set and share of the connections. Every echoed byte is compared with what was sent
 * (each message starts at a different offset of a pattern, so a reordered or stale echo shows
 * up as a mismatch). After the duration no new message starts; echoes still in flight get
 * `grace_ns`, then count as timeouts. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "echo.h"
#include "loadgen.h"

static void fail(struct lthread *t, struct lconn *c, int err) {
  if (err == 0) t->r.short_echoes++; /* EOF before the whole echo */
  else t->r.resets++;
  drop_conn(t, c);
}

static void push(struct lthread *t, struct lconn *c) {
  uint32_t len = t->cfg->length;
  while (c->sent < len) {
    ssize_t n = send(c->fd, t->pattern + c->offset + c->sent, len - c->sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) break;
      return fail(t, c, errno);
    }
    c->sent += (uint32_t)n;
  }
  set_events(t, c, c->sent < len);
}

static void start_message(struct lthread *t, struct lconn *c, uint64_t now, uint64_t seq) {
  c->busy = true;
  t->busy++;
  c->sent = c->recvd = 0;
  c->offset = message_offset(seq, c->id);
  c->started = now;
  t->r.requests++;
  push(t, c);
}

/* Reads what is there; returns true when the message's echo is complete. */
static bool pull(struct lthread *t, struct lconn *c, unsigned char *scratch, size_t scratch_len) {
  uint32_t len = t->cfg->length;
  for (;;) {
    ssize_t n = recv(c->fd, scratch, scratch_len, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return false;
      fail(t, c, errno);
      return false;
    }
    if (n == 0) {
      fail(t, c, 0);
      return false;
    }
    if (!c->busy || c->recvd + (uint64_t)n > len ||
        memcmp(scratch, t->pattern + c->offset + c->recvd, (size_t)n) != 0) {
      t->r.mismatches++;
      drop_conn(t, c);
      return false;
    }
    c->recvd += (uint32_t)n;
    if (c->recvd == len) return true;
  }
}

static void *epoll_thread_main(void *arg) {
  struct lthread *t = arg;
  struct shared *sh = t->sh;
  const struct echo_load_config *cfg = t->cfg;
  connect_all(t, echo_now_ns() + 5000000000ull);
  gate_arrive_and_wait(sh);
  uint64_t cpu0 = echo_thread_cpu_ns();
  uint64_t deadline = sh->deadline;
  size_t scratch_len = cfg->length > 65536 ? cfg->length : 65536;
  unsigned char *scratch = malloc(scratch_len);
  if (!scratch) { t->err = ENOMEM; t->syscall = "malloc"; t->fatal = true; }
  uint64_t seq = 0, now = echo_now_ns();
  for (uint32_t i = 0; i < t->count && scratch; i++) {
    struct lconn *c = &t->conns[i];
    if (c->fd >= 0) start_message(t, c, now, seq++);
  }
  struct epoll_event evs[256];
  while (scratch) {
    uint64_t wait = loop_wait_ns(t, &deadline, echo_now_ns());
    if (wait == 0) break;
    int n = epoll_wait(t->ep, evs, 256, (int)(wait / 1000000u) + 1);
    for (int i = 0; i < n; i++) {
      struct lconn *c = evs[i].data.ptr;
      if (c->fd < 0) continue;
      if ((evs[i].events & EPOLLOUT) && c->busy && c->sent < cfg->length) push(t, c);
      if (c->fd < 0) continue;
      if (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
        if (pull(t, c, scratch, scratch_len)) {
          uint64_t done = echo_now_ns();
          t->r.responses++;
          t->r.bytes += cfg->length;
          t->last_response = done;
          hist_add(t->hist, done - c->started);
          c->busy = false;
          t->busy--;
          if (done < deadline) start_message(t, c, done, seq++);
        }
      }
    }
  }
  window_ended(sh, t->stopped_sending ? t->stopped_sending : echo_now_ns(), t->last_response);
  t->r.cpu_ns = echo_thread_cpu_ns() - cpu0; /* the window's, without closing the connections */
  for (uint32_t i = 0; i < t->count; i++) {
    struct lconn *c = &t->conns[i];
    if (c->fd < 0) continue;
    if (c->busy) t->r.timeouts++;
    drop_conn(t, c);
  }
  free(scratch);
  return NULL;
}

int run_epoll(const struct echo_load_config *cfg, const unsigned char *pattern, struct shared *sh,
              struct histogram *hist, struct echo_load_result *res) {
  return run_pool(cfg, pattern, sh, hist, res, epoll_thread_main);
}
