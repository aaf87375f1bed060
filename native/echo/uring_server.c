/* io_uring echo server: one multishot accept, one multishot recv per connection into a
 * provided-buffer ring (uring_pool.c sets both up), and one
 * send in flight per connection.
 *
 * Who owns a provided buffer: the kernel while it sits in the ring; the connection from its
 * recv CQE on. A connection sends the buffer straight back with MSG_DONTWAIT, and returns it to
 * the ring when that send completes. Whatever the socket did not take at once (a peer reading
 * slowly), and whatever arrives while a send is in flight, is copied into the connection's own
 * backlog (backlog.c) and its buffer goes back at once: a peer that never reads holds no
 * provided buffer, only up to BACKLOG_PAUSE bytes of its own memory, after which its recv is
 * cancelled until the backlog drains. `idle_timeout_ns` closes connections that moved no byte
 * for that long. An accept that fails (EMFILE and the like would fail again at once) is re-armed
 * after a pause that grows while it keeps failing. */
#include <errno.h>
#include <liburing.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backlog.h"
#include "echo.h"
#include "uring_pool.h"

enum { OP_ACCEPT = 1, OP_RECV, OP_SEND, OP_STOP, OP_CANCEL, OP_IDLE_TICK, OP_ACCEPT_RESUME };
#define OP_MASK 7ull

#define DEFAULT_BUF_COUNT 4096u /* power of two, <= 32768 */
#define BACKLOG_PAUSE (64u * 1024u)  /* backlog bytes that stop a connection's recv */
#define BACKLOG_RESUME (16u * 1024u) /* ... and the level at which it receives again */
#define REAP_BATCH 256u

struct conn {
  int fd;
  unsigned inflight;  /* ops of this connection whose last CQE has not come */
  bool recv_armed, send_busy, cancel_sent, eof, dead, paused, starved;
  int send_bid;       /* the provided buffer the send in flight reads, or -1: the backlog */
  uint32_t send_len;  /* bytes that send asked for */
  struct backlog backlog;
  uint64_t last_active;
  struct conn *next_starved;
  struct conn *prev, *next; /* every open connection, so stop can reach them all */
} __attribute__((aligned(16)));

struct server {
  struct io_uring ring;
  struct buf_pool pool;
  unsigned held;      /* provided buffers in connections' hands (a send reads them) */
  bool returned;      /* a buffer went back since the starved were last woken */
  const struct echo_server_config *cfg;
  struct echo_server_stats *st;
  uint64_t inflight;  /* every op of the ring whose last CQE has not come */
  uint64_t active;
  uint64_t now;       /* clock at the start of the CQE batch being handled */
  bool stopping, accept_armed, accept_cancel_sent, accept_failed, tick_armed, resume_armed;
  uint64_t accept_pause_ns;
  struct __kernel_timespec tick_ts, resume_ts; /* read by the kernel when the timeout is submitted */
  int failed;         /* a submit the kernel kept refusing: the loop ends with this error */
  struct conn *starved;
  struct conn *conns;
};

/* A free SQE. When the SQ is full its entries are submitted first; that is safe here because the
 * CQEs being handled were copied out and the CQ head advanced before (reap). NULL only when the
 * kernel keeps refusing the submit: then s->failed ends the loop. */
static struct io_uring_sqe *get_sqe(struct server *s) {
  for (unsigned tries = 0; !s->failed; tries++) {
    struct io_uring_sqe *sqe = io_uring_get_sqe(&s->ring);
    if (sqe) return sqe;
    int ret = io_uring_submit(&s->ring);
    if (ret >= 0 || ret == -EINTR) continue;
    if ((ret == -EAGAIN || ret == -EBUSY) && tries < 1000) {
      io_uring_get_events(&s->ring); /* flushes overflowed CQEs into the CQ; handled later */
      continue;
    }
    s->failed = ret;
    s->st->syscall = "io_uring_submit";
  }
  return NULL;
}

static void *buf_addr(struct server *s, unsigned bid) { return pool_addr(&s->pool, bid); }

static void return_buffer(struct server *s, unsigned bid) {
  pool_return(&s->pool, bid);
  s->returned = true;
}

static void queue_accept(struct server *s) {
  struct io_uring_sqe *sqe = get_sqe(s);
  if (!sqe) return;
  io_uring_prep_multishot_accept(sqe, s->cfg->listen_fd, NULL, NULL, SOCK_CLOEXEC);
  io_uring_sqe_set_data64(sqe, OP_ACCEPT);
  s->accept_armed = true;
  s->accept_cancel_sent = false;
  s->inflight++;
}

static void queue_stop_poll(struct server *s) {
  struct io_uring_sqe *sqe = get_sqe(s);
  if (!sqe) return;
  io_uring_prep_poll_add(sqe, s->cfg->stop_fd, POLLIN);
  io_uring_sqe_set_data64(sqe, OP_STOP);
  s->inflight++;
}

static void queue_timeout(struct server *s, struct __kernel_timespec *ts, uint64_t ns, uint64_t ud) {
  struct io_uring_sqe *sqe = get_sqe(s);
  if (!sqe) return;
  ts->tv_sec = (long long)(ns / 1000000000u);
  ts->tv_nsec = (long long)(ns % 1000000000u);
  io_uring_prep_timeout(sqe, ts, 0, 0);
  io_uring_sqe_set_data64(sqe, ud);
  s->inflight++;
}

/* Cancels the op with user_data `target` (a timeout with TIMEOUT_REMOVE); c: its connection. */
static void queue_cancel(struct server *s, struct conn *c, uint64_t target, bool timeout) {
  struct io_uring_sqe *sqe = get_sqe(s);
  if (!sqe) return;
  if (timeout) io_uring_prep_timeout_remove(sqe, target, 0);
  else io_uring_prep_cancel64(sqe, target, 0);
  io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)c | OP_CANCEL);
  if (c) c->inflight++;
  s->inflight++;
}

static void queue_recv(struct server *s, struct conn *c) {
  struct io_uring_sqe *sqe = get_sqe(s);
  if (!sqe) return;
  io_uring_prep_recv_multishot(sqe, c->fd, NULL, 0, 0);
  sqe->flags |= IOSQE_BUFFER_SELECT;
  sqe->buf_group = POOL_GROUP;
  io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)c | OP_RECV);
  c->recv_armed = true;
  c->cancel_sent = false;
  c->inflight++;
  s->inflight++;
}

static void cancel_recv(struct server *s, struct conn *c) {
  if (!c->recv_armed || c->cancel_sent) return;
  c->cancel_sent = true;
  queue_cancel(s, c, (uint64_t)(uintptr_t)c | OP_RECV, false);
}

/* A provided buffer goes straight back out; MSG_DONTWAIT, so a full socket answers EAGAIN
 * instead of parking the buffer until the peer reads. */
static void send_buffer(struct server *s, struct conn *c, unsigned bid, uint32_t len) {
  struct io_uring_sqe *sqe = get_sqe(s);
  if (!sqe) return return_buffer(s, bid);
  io_uring_prep_send(sqe, c->fd, buf_addr(s, bid), len, MSG_NOSIGNAL | MSG_DONTWAIT);
  io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)c | OP_SEND);
  c->send_bid = (int)bid;
  c->send_len = len;
  c->send_busy = true;
  c->inflight++;
  s->inflight++;
  s->held++;
}

/* The backlog's front: the connection's own memory, so this send may wait for the peer. */
static void send_backlog(struct server *s, struct conn *c) {
  uint32_t len;
  const unsigned char *p = backlog_front(&c->backlog, &len);
  if (c->send_busy || c->dead || len == 0) return;
  struct io_uring_sqe *sqe = get_sqe(s);
  if (!sqe) return;
  io_uring_prep_send(sqe, c->fd, p, len, MSG_NOSIGNAL);
  io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)c | OP_SEND);
  c->send_bid = -1;
  c->send_len = len;
  c->send_busy = true;
  c->inflight++;
  s->inflight++;
}

/* Marks the connection for closing and makes its ops end: the shutdown fails a send that waits
 * for the peer and ends the recv. It is closed once its last CQE is in (maybe_finish). */
static void kill_conn(struct server *s, struct conn *c) {
  if (c->dead) return;
  c->dead = true;
  shutdown(c->fd, SHUT_RDWR);
  cancel_recv(s, c);
}

static void unlink_starved(struct server *s, struct conn *c) {
  if (!c->starved) return;
  for (struct conn **p = &s->starved; *p; p = &(*p)->next_starved) {
    if (*p == c) {
      *p = c->next_starved;
      break;
    }
  }
  c->starved = false;
  c->next_starved = NULL;
}

static void maybe_rearm(struct server *s, struct conn *c) {
  if (c->dead || c->eof || c->recv_armed || c->paused || c->starved || s->stopping) return;
  queue_recv(s, c);
}

/* Closes the connection once nothing of it is in flight: after an error, after stop, or after
 * the peer's EOF once everything it sent has been echoed. */
static void maybe_finish(struct server *s, struct conn *c) {
  if (c->eof && !c->send_busy && c->backlog.bytes == 0) kill_conn(s, c);
  if (!c->dead || c->inflight) return;
  unlink_starved(s, c);
  echo_close_conn(c->fd);
  if (c->prev) c->prev->next = c->next; else s->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  backlog_free(&c->backlog);
  free(c);
  s->active--;
}

static void wake_starved(struct server *s) {
  s->returned = false;
  while (s->starved) {
    struct conn *c = s->starved;
    s->starved = c->next_starved;
    c->starved = false;
    c->next_starved = NULL;
    maybe_rearm(s, c);
    maybe_finish(s, c);
  }
}

static void arm_idle_tick(struct server *s) {
  if (!s->cfg->idle_timeout_ns || s->tick_armed || s->stopping) return;
  queue_timeout(s, &s->tick_ts, echo_idle_tick_ns(s->cfg->idle_timeout_ns), OP_IDLE_TICK);
  s->tick_armed = true;
}

static void on_idle_tick(struct server *s) {
  s->tick_armed = false;
  if (s->stopping) return;
  for (struct conn *c = s->conns, *next; c; c = next) {
    next = c->next;
    if (!c->dead && s->now - c->last_active >= s->cfg->idle_timeout_ns) {
      s->st->idle_closed++;
      kill_conn(s, c);
      maybe_finish(s, c);
    }
  }
  arm_idle_tick(s);
}

static void add_conn(struct server *s, int fd) {
  struct conn *c = calloc(1, sizeof(*c));
  if (!c) {
    echo_close_conn(fd);
    return;
  }
  echo_set_nodelay(fd);
  c->fd = fd;
  c->send_bid = -1;
  c->last_active = s->now;
  c->next = s->conns;
  if (s->conns) s->conns->prev = c;
  s->conns = c;
  s->active++;
  if (s->active > s->st->peak_conns) s->st->peak_conns = s->active;
  s->st->connections++;
  queue_recv(s, c);
}

static void on_accept(struct server *s, int res, unsigned flags) {
  if (!(flags & IORING_CQE_F_MORE)) {
    s->accept_armed = false;
    s->inflight--;
  }
  if (res >= 0) {
    s->accept_pause_ns = 0;
    echo_accepted(res);
    if (s->stopping || (s->cfg->max_conns && s->active >= s->cfg->max_conns)) {
      echo_close_conn(res); /* refused: a clean close (FIN), nothing was read */
      if (!s->stopping) s->st->refused++;
    } else {
      add_conn(s, res);
    }
  } else if (!s->stopping) {
    /* EMFILE, ENFILE, ENOBUFS, ENOMEM would fail again at once: stop accepting for a while. */
    s->accept_failed = true;
    if (s->accept_armed && !s->accept_cancel_sent) {
      s->accept_cancel_sent = true;
      queue_cancel(s, NULL, OP_ACCEPT, false);
    }
  }
  if (s->accept_armed || s->stopping || s->resume_armed) return;
  if (!s->accept_failed) return queue_accept(s);
  s->accept_failed = false;
  s->accept_pause_ns = echo_next_accept_pause_ns(s->accept_pause_ns);
  s->st->accept_pauses++;
  queue_timeout(s, &s->resume_ts, s->accept_pause_ns, OP_ACCEPT_RESUME);
  s->resume_armed = true;
}

static void on_recv(struct server *s, struct conn *c, int res, unsigned flags) {
  if (res > 0 && (flags & IORING_CQE_F_BUFFER)) {
    unsigned bid = flags >> IORING_CQE_BUFFER_SHIFT;
    c->last_active = s->now;
    if (c->dead) {
      return_buffer(s, bid);
    } else if (!c->send_busy && c->backlog.bytes == 0) {
      send_buffer(s, c, bid, (uint32_t)res);
    } else {
      if (backlog_append(&c->backlog, buf_addr(s, bid), (uint32_t)res) < 0) kill_conn(s, c);
      return_buffer(s, bid);
      if (c->backlog.bytes >= BACKLOG_PAUSE && !c->paused) {
        c->paused = true;
        s->st->recv_pauses++;
        cancel_recv(s, c);
      }
    }
  }
  if (!(flags & IORING_CQE_F_MORE)) {
    c->recv_armed = false;
    c->inflight--;
    s->inflight--;
    if (res == 0) {
      c->eof = true;
    } else if (res == -ENOBUFS) {
      s->st->buffer_waits++;
      if (!c->starved && !c->dead) {
        c->starved = true;
        c->next_starved = s->starved;
        s->starved = c;
      }
    } else if (res < 0 && res != -ECANCELED) {
      kill_conn(s, c); /* ECONNRESET and friends */
    }
    maybe_rearm(s, c);
  }
  maybe_finish(s, c);
}

static void on_send(struct server *s, struct conn *c, int res) {
  c->send_busy = false;
  c->inflight--;
  s->inflight--;
  uint32_t sent = res > 0 ? (uint32_t)res : 0;
  if (sent) {
    s->st->bytes += sent;
    c->last_active = s->now;
  }
  if (res < 0 && res != -EAGAIN) kill_conn(s, c);
  if (c->send_bid >= 0) {
    unsigned bid = (unsigned)c->send_bid;
    c->send_bid = -1;
    s->held--;
    /* The socket took only part: the rest goes in front of what arrived meanwhile. */
    if (!c->dead && sent < c->send_len &&
        backlog_prepend(&c->backlog, (unsigned char *)buf_addr(s, bid) + sent, c->send_len - sent) < 0)
      kill_conn(s, c);
    return_buffer(s, bid);
  } else if (sent) {
    backlog_consume(&c->backlog, sent);
  }
  if (c->paused && c->backlog.bytes <= BACKLOG_RESUME) {
    c->paused = false;
    maybe_rearm(s, c);
  }
  send_backlog(s, c);
  maybe_finish(s, c);
}

static void on_stop(struct server *s) {
  s->stopping = true;
  if (s->accept_armed) queue_cancel(s, NULL, OP_ACCEPT, false);
  if (s->tick_armed) queue_cancel(s, NULL, OP_IDLE_TICK, true);
  if (s->resume_armed) queue_cancel(s, NULL, OP_ACCEPT_RESUME, true);
  while (s->starved) unlink_starved(s, s->starved);
  /* Each connection's ops then post their last CQE; the loop ends once the in-flight count
   * reaches zero, so no buffer is freed while the kernel may use it. */
  for (struct conn *c = s->conns, *next; c; c = next) {
    next = c->next;
    kill_conn(s, c);
    maybe_finish(s, c);
  }
}

static void handle(struct server *s, uint64_t ud, int res, unsigned flags) {
  struct conn *c = (struct conn *)(uintptr_t)(ud & ~OP_MASK);
  switch (ud & OP_MASK) {
    case OP_ACCEPT: on_accept(s, res, flags); break;
    case OP_RECV: on_recv(s, c, res, flags); break;
    case OP_SEND: on_send(s, c, res); break;
    case OP_STOP:
      s->inflight--;
      on_stop(s);
      break;
    case OP_CANCEL:
      s->inflight--;
      if (c) {
        c->inflight--;
        maybe_finish(s, c);
      }
      break;
    case OP_IDLE_TICK:
      s->inflight--;
      on_idle_tick(s);
      break;
    case OP_ACCEPT_RESUME:
      s->inflight--;
      s->resume_armed = false;
      if (!s->stopping && !s->accept_armed) queue_accept(s);
      break;
  }
}

/* Copies a batch of CQEs out and advances the CQ head before handling any, so the handlers may
 * submit (get_sqe) without the kernel finding the CQ still full of entries already seen. */
static void reap(struct server *s) {
  struct io_uring_cqe *cqes[REAP_BATCH];
  struct { uint64_t ud; int res; unsigned flags; } batch[REAP_BATCH];
  while (!s->failed) {
    unsigned n = io_uring_peek_batch_cqe(&s->ring, cqes, REAP_BATCH);
    if (n == 0) break;
    for (unsigned i = 0; i < n; i++) {
      batch[i].ud = io_uring_cqe_get_data64(cqes[i]);
      batch[i].res = cqes[i]->res;
      batch[i].flags = cqes[i]->flags;
    }
    io_uring_cq_advance(&s->ring, n);
    s->now = echo_now_ns();
    for (unsigned i = 0; i < n; i++) handle(s, batch[i].ud, batch[i].res, batch[i].flags);
  }
}

int echo_uring_serve(const struct echo_server_config *cfg, struct echo_server_stats *st) {
  struct server s;
  memset(&s, 0, sizeof(s));
  s.cfg = cfg;
  s.st = st;
  unsigned buffers = cfg->buffers ? cfg->buffers : DEFAULT_BUF_COUNT;
  if (buffers > 32768 || (buffers & (buffers - 1))) {
    st->syscall = "io_uring_register_buf_ring";
    return -EINVAL;
  }
  int ret = pool_setup_ring(&s.ring, buffers, st->setup, sizeof(st->setup));
  if (ret < 0) {
    st->syscall = "io_uring_queue_init";
    return ret;
  }
  ret = pool_setup(&s.ring, &s.pool, buffers, &st->syscall);
  if (ret == 0) {
    s.now = echo_now_ns();
    queue_accept(&s);
    queue_stop_poll(&s);
    arm_idle_tick(&s);
    while (!(s.stopping && s.inflight == 0) && !s.failed) {
      ret = io_uring_submit_and_wait(&s.ring, 1);
      if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY) {
        s.failed = ret;
        st->syscall = "io_uring_enter";
        break;
      }
      reap(&s);
      /* A recv may have hit ENOBUFS after the buffers it needed came back in the same batch
       * (or were freed by a closing connection): re-arm the starved once any came back. */
      if (s.starved && s.returned) wake_starved(&s);
    }
    ret = s.failed;
  }
  /* Only after a failure can connections (and ops) remain. Shutting them down ends their recvs;
   * the buffer memory stays allocated then, as the ring's teardown runs on in the kernel after
   * io_uring_queue_exit returns and a recv could still land in it. */
  for (struct conn *c = s.conns; c; c = c->next) shutdown(c->fd, SHUT_RDWR);
  if (s.inflight) s.pool.bufs = NULL;
  pool_teardown(&s.ring, &s.pool);
  io_uring_queue_exit(&s.ring);
  for (struct conn *c = s.conns, *next; c; c = next) {
    next = c->next;
    echo_close_conn(c->fd);
    backlog_free(&c->backlog);
    free(c);
  }
  return ret;
}
