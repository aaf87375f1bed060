/* The load generator on io_uring: the same protocol and checks as the epoll threads
 * (loadgen.c), but each thread queues every connection's send and recv on its own ring and
 * reaps them in batches, one io_uring_enter per turn instead of a syscall per operation.
 * A message is complete once its send CQE and the last byte of its echo are both in, so a
 * late send CQE is never taken for the next message's. */
#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "echo.h"
#include "loadgen.h"

#define OP_SEND 0u
#define OP_RECV 1u
#define UD_CANCEL UINT64_MAX
#define RECV_CAP 16384u

struct ugen {
  struct io_uring ring;
  struct lthread *t;
  uint64_t inflight;
  uint32_t rcap;
  uint64_t seq;
};

static struct io_uring_sqe *get_sqe(struct ugen *u) {
  struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
  while (!sqe) {
    io_uring_submit(&u->ring);
    sqe = io_uring_get_sqe(&u->ring);
  }
  return sqe;
}

static void queue_send(struct ugen *u, struct lconn *c) {
  uint32_t len = u->t->cfg->length;
  struct io_uring_sqe *sqe = get_sqe(u);
  io_uring_prep_send(sqe, c->fd, u->t->pattern + c->offset + c->sent, len - c->sent, MSG_NOSIGNAL);
  io_uring_sqe_set_data64(sqe, ((uint64_t)(c - u->t->conns) << 1) | OP_SEND);
  c->inflight++;
  u->inflight++;
}

static void queue_recv(struct ugen *u, struct lconn *c) {
  uint32_t want = u->t->cfg->length - c->recvd;
  if (want > u->rcap) want = u->rcap;
  struct io_uring_sqe *sqe = get_sqe(u);
  io_uring_prep_recv(sqe, c->fd, c->rbuf, want, 0);
  io_uring_sqe_set_data64(sqe, ((uint64_t)(c - u->t->conns) << 1) | OP_RECV);
  c->inflight++;
  u->inflight++;
}

static void start(struct ugen *u, struct lconn *c, uint64_t now) {
  struct lthread *t = u->t;
  c->busy = true;
  t->busy++;
  c->sent = c->recvd = 0;
  c->want_out = true; /* here: the send's CQE has not come yet */
  c->offset = message_offset(u->seq++, c->id);
  c->started = now;
  t->r.requests++;
  queue_send(u, c);
  queue_recv(u, c);
}

static void maybe_close(struct lconn *c) {
  if (c->dead && c->inflight == 0 && c->fd >= 0) {
    close(c->fd);
    c->fd = -1;
  }
}

/* Ends a connection: its ops still in the kernel finish quickly after the shutdown. */
static void kill_conn(struct ugen *u, struct lconn *c) {
  if (c->dead) return;
  c->dead = true;
  if (c->busy) u->t->busy--;
  c->busy = false;
  u->t->live--;
  shutdown(c->fd, SHUT_RDWR);
  maybe_close(c);
}

static void fail(struct ugen *u, struct lconn *c, int err) {
  if (err == 0) u->t->r.short_echoes++;
  else u->t->r.resets++;
  kill_conn(u, c);
}

static void maybe_complete(struct ugen *u, struct lconn *c, uint64_t deadline) {
  const struct echo_load_config *cfg = u->t->cfg;
  if (!c->busy || c->want_out || c->recvd < cfg->length) return;
  uint64_t done = echo_now_ns();
  u->t->r.responses++;
  u->t->r.bytes += cfg->length;
  u->t->last_response = done;
  hist_add(u->t->hist, done - c->started);
  c->busy = false;
  u->t->busy--;
  if (done < deadline) start(u, c, done);
}

static void handle(struct ugen *u, struct io_uring_cqe *cqe, uint64_t deadline) {
  uint64_t ud = io_uring_cqe_get_data64(cqe);
  u->inflight--;
  if (ud == UD_CANCEL) return;
  struct lconn *c = &u->t->conns[ud >> 1];
  c->inflight--;
  int res = cqe->res;
  if (c->dead) return maybe_close(c);
  uint32_t len = u->t->cfg->length;
  if ((ud & 1u) == OP_SEND) {
    if (res < 0) return fail(u, c, -res);
    c->sent += (uint32_t)res;
    if (c->sent < len) return queue_send(u, c);
    c->want_out = false;
  } else {
    if (res <= 0) return fail(u, c, -res);
    if (!c->busy || c->recvd + (uint32_t)res > len ||
        memcmp(c->rbuf, u->t->pattern + c->offset + c->recvd, (size_t)res) != 0) {
      u->t->r.mismatches++;
      return kill_conn(u, c);
    }
    c->recvd += (uint32_t)res;
    if (c->recvd < len) return queue_recv(u, c);
  }
  maybe_complete(u, c, deadline);
}

static void reap(struct ugen *u, uint64_t wait_ns, uint64_t deadline) {
  struct __kernel_timespec ts = { .tv_sec = (long long)(wait_ns / 1000000000u), .tv_nsec = (long long)(wait_ns % 1000000000u) };
  struct io_uring_cqe *cqe;
  io_uring_submit_and_wait_timeout(&u->ring, &cqe, 1, &ts, NULL);
  unsigned head, seen = 0;
  io_uring_for_each_cqe(&u->ring, head, cqe) {
    handle(u, cqe, deadline);
    seen++;
  }
  io_uring_cq_advance(&u->ring, seen);
}

static int setup(struct ugen *u, unsigned entries) {
  struct io_uring_params p;
  memset(&p, 0, sizeof(p));
  p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
  int ret = io_uring_queue_init_params(entries, &u->ring, &p);
  if (ret == -EINVAL) {
    memset(&p, 0, sizeof(p));
    ret = io_uring_queue_init_params(entries, &u->ring, &p);
  }
  return ret;
}

static void *uring_thread_main(void *arg) {
  struct lthread *t = arg;
  struct shared *sh = t->sh;
  const struct echo_load_config *cfg = t->cfg;
  struct ugen u;
  memset(&u, 0, sizeof(u));
  u.t = t;
  u.rcap = cfg->length < RECV_CAP ? cfg->length : RECV_CAP;
  connect_all(t, echo_now_ns() + 5000000000ull);
  unsigned entries = 64;
  while (entries < 2 * t->count && entries < 16384) entries *= 2;
  int ret = setup(&u, entries);
  unsigned char *rbufs = ret == 0 ? malloc((size_t)u.rcap * (t->count ? t->count : 1)) : NULL;
  if (ret < 0 || !rbufs) {
    t->err = ret < 0 ? -ret : ENOMEM;
    t->syscall = ret < 0 ? "io_uring_queue_init" : "malloc";
    t->fatal = true;
  }
  gate_arrive_and_wait(sh);
  uint64_t cpu0 = echo_thread_cpu_ns();
  uint64_t deadline = sh->deadline, now = echo_now_ns();
  for (uint32_t i = 0; i < t->count && rbufs; i++) {
    struct lconn *c = &t->conns[i];
    c->rbuf = rbufs + (size_t)i * u.rcap;
    if (c->fd >= 0) start(&u, c, now);
  }
  while (rbufs) {
    uint64_t wait = loop_wait_ns(t, &deadline, echo_now_ns());
    if (wait == 0) break;
    reap(&u, wait, deadline);
  }
  window_ended(sh, t->stopped_sending ? t->stopped_sending : echo_now_ns(), t->last_response);
  t->r.cpu_ns = echo_thread_cpu_ns() - cpu0; /* the window's, without cancelling and closing */
  if (rbufs) {
    /* Whatever is still in flight: echoes that never came count as timeouts; then cancel
     * every op and wait for all of them before the buffers go. */
    for (uint32_t i = 0; i < t->count; i++) {
      struct lconn *c = &t->conns[i];
      if (c->fd < 0 || c->dead) continue;
      if (c->busy) t->r.timeouts++;
      kill_conn(&u, c);
    }
    struct io_uring_sqe *sqe = get_sqe(&u);
    io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY);
    io_uring_sqe_set_data64(sqe, UD_CANCEL);
    u.inflight++;
    uint64_t give_up = echo_now_ns() + 5000000000ull;
    while (u.inflight > 0 && echo_now_ns() < give_up) reap(&u, 50000000u, 0);
  }
  for (uint32_t i = 0; i < t->count; i++) {
    struct lconn *c = &t->conns[i];
    if (c->fd >= 0) {
      close(c->fd);
      c->fd = -1;
    }
  }
  if (ret == 0) io_uring_queue_exit(&u.ring);
  free(rbufs);
  return NULL;
}

int run_uring(const struct echo_load_config *cfg, const unsigned char *pattern, struct shared *sh,
              struct histogram *hist, struct echo_load_result *res) {
  return run_pool(cfg, pattern, sh, hist, res, uring_thread_main);
}
