/* The load generator, rust_echo_bench's protocol: every connection sends one message of
 * `length` bytes and waits for the whole echo before the next. A few threads, each with its
 * own epoll set and share of the connections. Every echoed byte is compared with what was
 * sent (each message starts at a different offset of a pattern, so a reordered or stale
 * echo shows up as a mismatch). After the duration no new message starts; echoes still in
 * flight get `grace_ns`, then count as timeouts. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "echo.h"
#include "loadgen.h"

void gate_arrive_and_wait(struct shared *sh) {
  pthread_mutex_lock(&sh->lock);
  sh->arrived++;
  pthread_cond_broadcast(&sh->cond);
  while (!sh->open) pthread_cond_wait(&sh->cond, &sh->lock);
  pthread_mutex_unlock(&sh->lock);
}

void gate_open_when(struct shared *sh, uint32_t expected, uint64_t duration_ns) {
  pthread_mutex_lock(&sh->lock);
  while (sh->arrived < expected) pthread_cond_wait(&sh->cond, &sh->lock);
  sh->start = echo_now_ns();
  sh->deadline = sh->start + duration_ns;
  sh->open = true;
  pthread_cond_broadcast(&sh->cond);
  pthread_mutex_unlock(&sh->lock);
}

bool stop_requested(const struct shared *sh) {
  return sh->stop && __atomic_load_n(sh->stop, __ATOMIC_RELAXED);
}

uint64_t loop_wait_ns(const struct lthread *t, const struct shared *sh, uint64_t *deadline, uint64_t now) {
  if (stop_requested(sh) && *deadline > now) *deadline = now;
  bool sending = now < *deadline;
  if (t->live == 0 || (!sending && t->busy == 0)) return 0;
  uint64_t until = *deadline + (sending ? 0 : t->cfg->grace_ns);
  if (now >= until) return 0;
  uint64_t wait = until - now;
  return wait > 50000000u ? 50000000u : wait;
}

static void set_events(struct lthread *t, struct lconn *c, bool out) {
  if (c->want_out == out) return;
  struct epoll_event ev = { .events = EPOLLIN | (out ? EPOLLOUT : 0), .data.ptr = c };
  epoll_ctl(t->ep, EPOLL_CTL_MOD, c->fd, &ev);
  c->want_out = out;
}

static void drop(struct lthread *t, struct lconn *c) {
  epoll_ctl(t->ep, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
  c->fd = -1;
  if (c->busy) t->busy--;
  c->busy = false;
  t->live--;
}

static void fail(struct lthread *t, struct lconn *c, int err) {
  if (err == 0) t->r.short_echoes++; /* EOF before the whole echo */
  else t->r.resets++;
  drop(t, c);
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
      drop(t, c);
      return false;
    }
    c->recvd += (uint32_t)n;
    if (c->recvd == len) return true;
  }
}

/* Non-blocking connects for this thread's share, then waits until each is done. */
void connect_all(struct lthread *t, uint64_t limit) {
  uint32_t pending = 0;
  for (uint32_t i = 0; i < t->count; i++) {
    struct lconn *c = &t->conns[i];
    c->id = t->first + i;
    c->fd = socket(t->cfg->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
      t->r.connect_errors++;
      if (!t->syscall) { t->syscall = "socket"; t->err = errno; }
      continue;
    }
    echo_set_nodelay(c->fd);
    if (connect(c->fd, (const struct sockaddr *)&t->cfg->addr, t->cfg->addr_len) < 0 &&
        errno != EINPROGRESS) {
      t->r.connect_errors++;
      close(c->fd);
      c->fd = -1;
      continue;
    }
    struct epoll_event ev = { .events = EPOLLOUT, .data.ptr = c };
    epoll_ctl(t->ep, EPOLL_CTL_ADD, c->fd, &ev);
    c->want_out = true;
    pending++;
    t->live++;
  }
  struct epoll_event evs[256];
  while (pending > 0) {
    uint64_t now = echo_now_ns();
    if (now >= limit) break;
    int n = epoll_wait(t->ep, evs, 256, (int)((limit - now) / 1000000u) + 1);
    for (int i = 0; i < n; i++) {
      struct lconn *c = evs[i].data.ptr;
      if (c->want_out == false) continue;
      int err = 0;
      socklen_t el = sizeof(err);
      getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el);
      pending--;
      if (err) {
        t->r.connect_errors++;
        drop(t, c);
      } else {
        t->r.connected++;
        set_events(t, c, false);
      }
    }
  }
  /* Still connecting when the time ran out: count and close. */
  for (uint32_t i = 0; i < t->count && pending; i++) {
    struct lconn *c = &t->conns[i];
    if (c->fd >= 0 && c->want_out) {
      t->r.connect_errors++;
      drop(t, c);
      pending--;
    }
  }
}

static void *thread_main(void *arg) {
  struct run_ctx *ctx = arg;
  struct lthread *t = ctx->t;
  struct shared *sh = ctx->sh;
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
    uint64_t wait = loop_wait_ns(t, sh, &deadline, echo_now_ns());
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
          hist_add(t->hist, done - c->started);
          c->busy = false;
          t->busy--;
          if (done < deadline) start_message(t, c, done, seq++);
        }
      }
    }
  }
  for (uint32_t i = 0; i < t->count; i++) {
    struct lconn *c = &t->conns[i];
    if (c->fd < 0) continue;
    if (c->busy) t->r.timeouts++;
    drop(t, c);
  }
  free(scratch);
  t->r.cpu_ns = echo_thread_cpu_ns() - cpu0;
  return NULL;
}

void add_result(struct echo_load_result *into, const struct echo_load_result *r) {
  into->requests += r->requests;
  into->responses += r->responses;
  into->bytes += r->bytes;
  into->connected += r->connected;
  into->connect_errors += r->connect_errors;
  into->resets += r->resets;
  into->short_echoes += r->short_echoes;
  into->mismatches += r->mismatches;
  into->timeouts += r->timeouts;
  into->cpu_ns += r->cpu_ns;
}

int echo_load_run(const struct echo_load_config *cfg, struct echo_load_result *res) {
  memset(res, 0, sizeof(*res));
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
  int ret = 0;
  if (cfg->mode == ECHO_LOAD_THREADS) {
    ret = run_threads(cfg, pattern, &sh, hist, res);
  } else {
    uint32_t nt = cfg->threads ? cfg->threads : 1;
    if (nt > cfg->clients) nt = cfg->clients ? cfg->clients : 1;
    void *(*main_fn)(void *) = cfg->mode == ECHO_LOAD_URING ? uring_thread_main : thread_main;
    struct lthread *ts = calloc(nt, sizeof(*ts));
    struct lconn *conns = calloc(cfg->clients ? cfg->clients : 1, sizeof(*conns));
    struct run_ctx *ctx = calloc(nt, sizeof(*ctx));
    if (!ts || !conns || !ctx) {
      free(ts); free(conns); free(ctx); free(pattern); free(hist);
      res->syscall = "malloc";
      return -ENOMEM;
    }
    for (uint32_t i = 0; i < cfg->clients; i++) conns[i].fd = -1;
    uint32_t first = 0, started = 0;
    for (; started < nt; started++) {
      struct lthread *t = &ts[started];
      t->cfg = cfg;
      t->pattern = pattern;
      t->first = first;
      t->count = cfg->clients / nt + (started < cfg->clients % nt ? 1 : 0);
      t->conns = conns + first;
      first += t->count;
      t->hist = calloc(1, sizeof(struct histogram));
      if (t->hist) hist_init(t->hist);
      t->ep = epoll_create1(EPOLL_CLOEXEC);
      ctx[started].t = t;
      ctx[started].sh = &sh;
      if (!t->hist || t->ep < 0 || pthread_create(&t->tid, NULL, main_fn, &ctx[started]) != 0) {
        if (t->ep >= 0) close(t->ep);
        free(t->hist);
        ret = -EAGAIN;
        res->syscall = "pthread_create";
        break;
      }
    }
    /* The measured window starts when every thread has connected its share. */
    gate_open_when(&sh, started, started == nt ? cfg->duration_ns : 0);
    for (uint32_t i = 0; i < started; i++) {
      pthread_join(ts[i].tid, NULL);
      add_result(res, &ts[i].r);
      hist_merge(hist, ts[i].hist);
      if (ts[i].fatal && ret == 0) {
        ret = -ts[i].err;
        res->syscall = ts[i].syscall;
      }
      close(ts[i].ep);
      free(ts[i].hist);
    }
    free(ts);
    free(conns);
    free(ctx);
  }
  pthread_mutex_destroy(&sh.lock);
  pthread_cond_destroy(&sh.cond);
  res->elapsed_ns = sh.deadline > sh.start ? sh.deadline - sh.start : 0;
  res->p50_ns = hist_percentile(hist, 50);
  res->p99_ns = hist_percentile(hist, 99);
  res->p999_ns = hist_percentile(hist, 99.9);
  res->max_ns = hist->max;
  free(pattern);
  free(hist);
  return ret;
}
