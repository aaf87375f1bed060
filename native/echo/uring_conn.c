/* The uring server's connections (uring_server.h): each one is a stream of the core
 * (native/stream/stream.h: its recv armed, paused, starved, woken when a buffer comes back; its
 * sends in order, by the core's send policy), echoing each chunk it receives by giving the
 * buffer to the core's send side, and closed once nothing of it is in flight. Calls nothing of
 * the server's other files.
 *
 * Who owns a provided buffer: the kernel while it sits in the ring; the connection from its
 * recv CQE on, which gives it to the core's send side at once. That sends it straight back
 * (MSG_DONTWAIT), or copies it into the connection's queue when a send is ahead of it or the
 * socket is full, and returns it to the ring: a peer that never reads holds no provided buffer,
 * only up to SEND_PAUSE bytes of the connection's memory, past which its recv is cancelled until
 * the queue drains to SEND_RESUME. */
#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <sys/socket.h>

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

/* ---- the stream core's ops ---- */

static void arm_recv(struct stream *st) {
  struct conn *c = st->owner;
  struct server *s = c->server;
  struct io_uring_sqe *sqe = us_get_sqe(s);
  if (!sqe) return;
  stream_prep_recv(sqe, st, c->fd);
  set_conn_fd(s, sqe);
  io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)c | OP_RECV);
  c->inflight++;
  s->inflight++;
}

static void cancel_recv(struct stream *st) {
  struct conn *c = st->owner;
  us_queue_cancel(c->server, c, (uint64_t)(uintptr_t)c | OP_RECV, false);
}

static void queue_send(struct stream *st) {
  struct conn *c = st->owner;
  struct server *s = c->server;
  struct io_uring_sqe *sqe = us_get_sqe(s);
  if (!sqe) return; /* s->failed: the loop ends */
  stream_prep_send(sqe, st, c->fd);
  set_conn_fd(s, sqe);
  io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)c | OP_SEND);
  c->inflight++;
  s->inflight++;
}

const struct stream_ops us_stream_ops = { arm_recv, cancel_recv, queue_send };

/* ---- a connection's life ---- */

/* Marks the connection for closing and makes its ops end: the shutdown fails a send that waits
 * for the peer and ends the recv. It is closed once its last CQE is in (maybe_finish). */
void us_kill_conn(struct server *s, struct conn *c) {
  if (conn_dead(c)) return;
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
  stream_send_stop(&c->st, -ECONNABORTED);
  stream_close(&c->st);
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
  if (c->eof && stream_unsent(&c->st) == 0) us_kill_conn(s, c);
  if (!conn_dead(c) || c->inflight) return;
  us_close_fd(s, c->fd);
  if (c->prev) c->prev->next = c->next; else s->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  stream_free(&c->st);
  free(c);
  s->active--;
}

void us_add_conn(struct server *s, int fd) {
  struct conn *c = calloc(1, sizeof(*c));
  if (!c) {
    us_close_fd(s, fd);
    return;
  }
  c->server = s;
  c->fd = fd;
  c->last_active = s->now;
  c->next = s->conns;
  if (s->conns) s->conns->prev = c;
  s->conns = c;
  s->active++;
  if (s->active > s->st->peak_conns) s->st->peak_conns = s->active;
  s->st->connections++;
  stream_open(&c->st, &s->pool, c, SEND_PAUSE - 1, SEND_RESUME);
}

void us_on_recv(struct server *s, struct conn *c, int res, unsigned flags) {
  if (res > 0 && (flags & IORING_CQE_F_BUFFER)) {
    unsigned bid = flags >> IORING_CQE_BUFFER_SHIFT;
    stream_pool_taken(&s->pool);
    c->last_active = s->now;
    if (conn_dead(c)) stream_pool_return(&s->pool, bid);
    else if (stream_send_buffer(&c->st, bid, (uint32_t)res) < 0) us_kill_conn(s, c);
  }
  if (!(flags & IORING_CQE_F_MORE)) {
    c->inflight--;
    s->inflight--;
    if (res == -ENOBUFS) s->st->buffer_waits++;
    if (stream_recv_end(&c->st, res) == STREAM_ENDED) {
      if (res == 0) c->eof = true;
      else us_kill_conn(s, c); /* ECONNRESET and friends */
    }
  }
  us_maybe_finish(s, c);
}

void us_on_send(struct server *s, struct conn *c, int res) {
  c->inflight--;
  s->inflight--;
  if (res > 0) {
    s->st->bytes += (uint32_t)res;
    c->last_active = s->now;
  }
  if (stream_send_done(&c->st, res) == STREAM_SEND_FAILED) us_kill_conn(s, c);
  us_maybe_finish(s, c);
}
