/* What the load generators share (see loadgen.h): the start gate, the loop's clock, the connect
 * phase, the sums, and the pool of worker threads the epoll and io_uring modes run on. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
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

/* IOLAB_ECHO_LOAD_HOLD=<file>: the generator waits, every client connected, until that file
 * exists (at most 60 s) before the window opens: the tests' way to act on the server outside
 * the window, and to say when they are done rather than race a fixed delay. */
static void hold_if_asked(void) {
  const char *path = getenv("IOLAB_ECHO_LOAD_HOLD");
  if (path == NULL || *path == '\0') return;
  for (int i = 0; i < 6000 && access(path, F_OK) != 0; i++) {
    struct timespec t = {0, 10 * 1000000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {
    }
  }
}

/* A process's CPU time (every thread), -1 when it cannot be read (gone, or no pid). */
static int64_t process_cpu_ns(int pid) {
  clockid_t clock;
  struct timespec t;
  if (pid <= 0 || clock_getcpuclockid(pid, &clock) != 0 || clock_gettime(clock, &t) != 0) return -1;
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

void gate_open_when(struct shared *sh, uint32_t expected, uint64_t duration_ns) {
  pthread_mutex_lock(&sh->lock);
  while (sh->arrived < expected) pthread_cond_wait(&sh->cond, &sh->lock);
  pthread_mutex_unlock(&sh->lock);
  hold_if_asked();
  pthread_mutex_lock(&sh->lock);
  sh->running = expected;
  sh->server_cpu0 = process_cpu_ns(sh->server_pid);
  sh->start = echo_now_ns();
  sh->deadline = sh->start + duration_ns;
  sh->end = sh->start;
  sh->open = true;
  pthread_cond_broadcast(&sh->cond);
  pthread_mutex_unlock(&sh->lock);
}

bool stop_requested(const struct shared *sh) {
  return sh->stop && __atomic_load_n(sh->stop, __ATOMIC_RELAXED);
}

void window_ended(struct shared *sh, uint64_t stopped_sending, uint64_t last_response) {
  uint64_t end = stopped_sending > last_response ? stopped_sending : last_response;
  pthread_mutex_lock(&sh->lock);
  if (end > sh->end) sh->end = end;
  if (sh->running > 0 && --sh->running == 0) {
    if (sh->server_cpu0 >= 0) {
      int64_t now = process_cpu_ns(sh->server_pid);
      if (now >= sh->server_cpu0) sh->server_cpu_ns = now - sh->server_cpu0;
    }
    pthread_cond_broadcast(&sh->cond);
  }
  /* No thread closes its connections while another's window is open: the server would tear
   * them down inside the window its CPU is read over. */
  while (sh->running > 0) pthread_cond_wait(&sh->cond, &sh->lock);
  pthread_mutex_unlock(&sh->lock);
}

uint64_t loop_wait_ns(struct lthread *t, uint64_t *deadline, uint64_t now) {
  if (stop_requested(t->sh) && *deadline > now) *deadline = now;
  bool sending = now < *deadline && t->live > 0;
  if (!sending && !t->stopped_sending) t->stopped_sending = now;
  if (t->live == 0 || (!sending && t->busy == 0)) return 0;
  uint64_t until = *deadline + (sending ? 0 : t->cfg->grace_ns);
  if (now >= until) return 0;
  uint64_t wait = until - now;
  return wait > 50000000u ? 50000000u : wait;
}

void set_events(struct lthread *t, struct lconn *c, bool out) {
  if (c->want_out == out) return;
  struct epoll_event ev = { .events = EPOLLIN | (out ? EPOLLOUT : 0), .data.ptr = c };
  epoll_ctl(t->ep, EPOLL_CTL_MOD, c->fd, &ev);
  c->want_out = out;
}

void drop_conn(struct lthread *t, struct lconn *c) {
  epoll_ctl(t->ep, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
  c->fd = -1;
  if (c->busy) t->busy--;
  c->busy = false;
  t->live--;
}

static void connect_failed(struct lthread *t, int err) {
  t->r.connect_errors++;
  if (!t->r.connect_errno) t->r.connect_errno = err;
}

void connect_all(struct lthread *t, uint64_t limit) {
  uint32_t pending = 0;
  for (uint32_t i = 0; i < t->count; i++) {
    struct lconn *c = &t->conns[i];
    c->id = t->first + i;
    c->fd = socket(t->cfg->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
      connect_failed(t, errno);
      if (!t->syscall) { t->syscall = "socket"; t->err = errno; }
      continue;
    }
    echo_set_nodelay(c->fd);
    if (connect(c->fd, (const struct sockaddr *)&t->cfg->addr, t->cfg->addr_len) < 0 &&
        errno != EINPROGRESS) {
      connect_failed(t, errno);
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
        connect_failed(t, err);
        drop_conn(t, c);
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
      connect_failed(t, ETIMEDOUT);
      drop_conn(t, c);
      pending--;
    }
  }
}

void add_result(struct echo_load_result *into, const struct echo_load_result *r) {
  into->requests += r->requests;
  into->responses += r->responses;
  into->bytes += r->bytes;
  into->connected += r->connected;
  into->connect_errors += r->connect_errors;
  if (!into->connect_errno) into->connect_errno = r->connect_errno;
  into->resets += r->resets;
  into->short_echoes += r->short_echoes;
  into->mismatches += r->mismatches;
  into->timeouts += r->timeouts;
  into->cpu_ns += r->cpu_ns;
}

int run_pool(const struct echo_load_config *cfg, const unsigned char *pattern, struct shared *sh,
             struct histogram *hist, struct echo_load_result *res, void *(*thread_main)(void *)) {
  uint32_t nt = cfg->threads ? cfg->threads : 1;
  if (nt > cfg->clients) nt = cfg->clients ? cfg->clients : 1;
  struct lthread *ts = calloc(nt, sizeof(*ts));
  struct lconn *conns = calloc(cfg->clients ? cfg->clients : 1, sizeof(*conns));
  if (!ts || !conns) {
    free(ts);
    free(conns);
    res->syscall = "malloc";
    return -ENOMEM;
  }
  for (uint32_t i = 0; i < cfg->clients; i++) conns[i].fd = -1;
  int ret = 0;
  uint32_t first = 0, started = 0;
  for (; started < nt; started++) {
    struct lthread *t = &ts[started];
    t->cfg = cfg;
    t->pattern = pattern;
    t->sh = sh;
    t->first = first;
    t->count = cfg->clients / nt + (started < cfg->clients % nt ? 1 : 0);
    t->conns = conns + first;
    first += t->count;
    t->hist = calloc(1, sizeof(struct histogram));
    if (t->hist) hist_init(t->hist);
    t->ep = epoll_create1(EPOLL_CLOEXEC);
    if (!t->hist || t->ep < 0 || pthread_create(&t->tid, NULL, thread_main, t) != 0) {
      if (t->ep >= 0) close(t->ep);
      free(t->hist);
      ret = -EAGAIN;
      res->syscall = "pthread_create";
      break;
    }
  }
  /* The measured window starts when every thread has connected its share. */
  gate_open_when(sh, started, started == nt ? cfg->duration_ns : 0);
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
  return ret;
}
