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
 * after a pause that grows while it keeps failing (uring_control.c).
 *
 * Where the kernel has them (uring_pool.c probes each, st->features says which were taken),
 * accepted sockets are direct descriptors: slots of the ring's fixed-file table that no fd
 * table entry backs, so an op on one skips the fd lookup and its reference count, and shutdown
 * and close go through the ring too. TCP_NODELAY is the listener's (echo_listen_tcp), which
 * accepted sockets inherit. */
#include <errno.h>
#include <liburing.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "uring_server.h"

/* A free SQE. When the SQ is full its entries are submitted first; that is safe here because the
 * CQEs being handled were copied out and the CQ head advanced before (reap). NULL only when the
 * kernel keeps refusing the submit: then s->failed ends the loop. */
struct io_uring_sqe *us_get_sqe(struct server *s) {
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

/* The connection's socket for an SQE: a fixed-file slot or a plain fd. */
static void set_conn_fd(struct server *s, struct io_uring_sqe *sqe) {
  if (s->direct) sqe->flags |= IOSQE_FIXED_FILE;
}

static void *buf_addr(struct server *s, unsigned bid) { return pool_addr(&s->pool, bid); }

static void return_buffer(struct server *s, unsigned bid) {
  pool_return(&s->pool, bid);
  s->returned = true;
}

/* Cancels the op with user_data `target` (a timeout with TIMEOUT_REMOVE); c: its connection. */
void us_queue_cancel(struct server *s, struct conn *c, uint64_t target, bool timeout) {
  struct io_uring_sqe *sqe = us_get_sqe(s);
  if (!sqe) return;
  if (timeout) io_uring_prep_timeout_remove(sqe, target, 0);
  else io_uring_prep_cancel64(sqe, target, 0);
  io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)c | OP_AUX);
  if (c) c->inflight++;
  s->inflight++;
}

static void queue_recv(struct server *s, struct conn *c) {
  struct io_uring_sqe *sqe = us_get_sqe(s);
  if (!sqe) return;
  io_uring_prep_recv_multishot(sqe, c->fd, NULL, 0, 0);
  sqe->flags |= IOSQE_BUFFER_SELECT;
  set_conn_fd(s, sqe);
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
  us_queue_cancel(s, c, (uint64_t)(uintptr_t)c | OP_RECV, false);
}

/* A provided buffer goes straight back out; MSG_DONTWAIT, so a full socket answers EAGAIN
 * instead of parking the buffer until the peer reads. */
static void send_buffer(struct server *s, struct conn *c, unsigned bid, uint32_t len) {
  struct io_uring_sqe *sqe = us_get_sqe(s);
  if (!sqe) return return_buffer(s, bid);
  io_uring_prep_send(sqe, c->fd, buf_addr(s, bid), len, MSG_NOSIGNAL | MSG_DONTWAIT);
  set_conn_fd(s, sqe);
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
  struct io_uring_sqe *sqe = us_get_sqe(s);
  if (!sqe) return;
  io_uring_prep_send(sqe, c->fd, p, len, MSG_NOSIGNAL);
  set_conn_fd(s, sqe);
  io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)c | OP_SEND);
  c->send_bid = -1;
  c->send_len = len;
  c->send_busy = true;
  c->inflight++;
  s->inflight++;
}

/* Marks the connection for closing and makes its ops end: the shutdown fails a send that waits
 * for the peer and ends the recv. It is closed once its last CQE is in (maybe_finish). */
void us_kill_conn(struct server *s, struct conn *c) {
  if (c->dead) return;
  c->dead = true;
  if (!s->direct) {
    shutdown(c->fd, SHUT_RDWR);
  } else {
    struct io_uring_sqe *sqe = us_get_sqe(s);
    if (sqe) {
      io_uring_prep_shutdown(sqe, c->fd, SHUT_RDWR);
      set_conn_fd(s, sqe);
      io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)c | OP_AUX);
      c->inflight++;
      s->inflight++;
    }
  }
  cancel_recv(s, c);
}

void us_unlink_starved(struct server *s, struct conn *c) {
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

/* A direct descriptor is closed through the ring (its slot is free for an accept after). */
void us_close_fd(struct server *s, int fd) {
  if (!s->direct) return echo_close_conn(fd);
  echo_closed_direct(fd);
  struct io_uring_sqe *sqe = us_get_sqe(s);
  if (!sqe) return; /* the ring's teardown closes it */
  io_uring_prep_close_direct(sqe, (unsigned)fd);
  io_uring_sqe_set_data64(sqe, OP_CLOSE);
  s->inflight++;
}

/* Closes the connection once nothing of it is in flight: after an error, after stop, or after
 * the peer's EOF once everything it sent has been echoed. */
void us_maybe_finish(struct server *s, struct conn *c) {
  if (c->eof && !c->send_busy && c->backlog.bytes == 0) us_kill_conn(s, c);
  if (!c->dead || c->inflight) return;
  us_unlink_starved(s, c);
  us_close_fd(s, c->fd);
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
    us_maybe_finish(s, c);
  }
}

void us_add_conn(struct server *s, int fd) {
  struct conn *c = calloc(1, sizeof(*c));
  if (!c) {
    us_close_fd(s, fd);
    return;
  }
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

static void on_recv(struct server *s, struct conn *c, int res, unsigned flags) {
  if (res > 0 && (flags & IORING_CQE_F_BUFFER)) {
    unsigned bid = flags >> IORING_CQE_BUFFER_SHIFT;
    c->last_active = s->now;
    if (c->dead) {
      return_buffer(s, bid);
    } else if (!c->send_busy && c->backlog.bytes == 0) {
      send_buffer(s, c, bid, (uint32_t)res);
    } else {
      if (backlog_append(&c->backlog, buf_addr(s, bid), (uint32_t)res) < 0) us_kill_conn(s, c);
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
      us_kill_conn(s, c); /* ECONNRESET and friends */
    }
    maybe_rearm(s, c);
  }
  us_maybe_finish(s, c);
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
  if (res < 0 && res != -EAGAIN) us_kill_conn(s, c);
  if (c->send_bid >= 0) {
    unsigned bid = (unsigned)c->send_bid;
    c->send_bid = -1;
    s->held--;
    /* The socket took only part: the rest goes in front of what arrived meanwhile. */
    if (!c->dead && sent < c->send_len &&
        backlog_prepend(&c->backlog, (unsigned char *)buf_addr(s, bid) + sent, c->send_len - sent) < 0)
      us_kill_conn(s, c);
    return_buffer(s, bid);
  } else if (sent) {
    backlog_consume(&c->backlog, sent);
  }
  if (c->paused && c->backlog.bytes <= BACKLOG_RESUME) {
    c->paused = false;
    maybe_rearm(s, c);
  }
  send_backlog(s, c);
  us_maybe_finish(s, c);
}

static void handle(struct server *s, uint64_t ud, int res, unsigned flags) {
  struct conn *c = (struct conn *)(uintptr_t)(ud & ~OP_MASK);
  switch (ud & OP_MASK) {
    case OP_ACCEPT: us_on_accept(s, res, flags); break;
    case OP_RECV: on_recv(s, c, res, flags); break;
    case OP_SEND: on_send(s, c, res); break;
    case OP_STOP:
      s->inflight--;
      us_on_stop(s);
      break;
    case OP_AUX:
      s->inflight--;
      if (ud == OP_CLOSE) break;
      if (c) {
        c->inflight--;
        us_maybe_finish(s, c);
      }
      break;
    case OP_IDLE_TICK:
      s->inflight--;
      us_on_idle_tick(s);
      break;
    case OP_ACCEPT_RESUME:
      s->inflight--;
      s->resume_armed = false;
      if (!s->stopping && !s->accept_armed) us_queue_accept(s);
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
  unsigned slots = 0;
  int ret = pool_setup_ring(&s.ring, buffers, cfg->uring_off, st, &slots);
  if (ret < 0) {
    st->syscall = "io_uring_queue_init";
    return ret;
  }
  s.direct = slots != 0;
  ret = pool_setup(&s.ring, &s.pool, buffers, cfg->uring_off, st);
  if (ret == 0) {
    s.now = echo_now_ns();
    us_queue_accept(&s);
    us_queue_stop_poll(&s);
    us_arm_idle_tick(&s);
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
  if (!s.direct)
    for (struct conn *c = s.conns; c; c = c->next) shutdown(c->fd, SHUT_RDWR);
  if (s.inflight) s.pool.bufs = NULL;
  pool_teardown(&s.ring, &s.pool);
  io_uring_queue_exit(&s.ring);
  for (struct conn *c = s.conns, *next; c; c = next) {
    next = c->next;
    if (s.direct) echo_closed_direct(c->fd); /* the ring's exit closed it */
    else echo_close_conn(c->fd);
    backlog_free(&c->backlog);
    free(c);
  }
  return ret;
}
