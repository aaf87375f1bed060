/* io_uring echo server: one multishot accept (uring_control.c), one multishot recv per
 * connection into a provided-buffer ring, and one send in flight per connection (uring_conn.c,
 * over the stream core native/stream); uring_pool.c sets the ring and the pool up. This file is
 * the loop and the dispatch of each CQE to the file that handles it.
 *
 * `idle_timeout_ns` closes connections that moved no byte for that long. An accept that fails
 * (EMFILE and the like would fail again at once) is re-armed after a pause that grows while it
 * keeps failing (uring_control.c).
 *
 * Where the kernel has them (uring_pool.c probes each, st->features says which were taken),
 * accepted sockets are direct descriptors: slots of the ring's fixed-file table that no fd
 * table entry backs, so an op on one skips the fd lookup and its reference count, and shutdown
 * and close go through the ring too. TCP_NODELAY is the listener's (echo_listen_tcp), which
 * accepted sockets inherit. */
#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "uring_server.h"

static void handle(struct server *s, uint64_t ud, int res, unsigned flags) {
  struct conn *c = (struct conn *)(uintptr_t)(ud & ~OP_MASK);
  switch (ud & OP_MASK) {
    case OP_ACCEPT: us_on_accept(s, res, flags); break;
    case OP_RECV: us_on_recv(s, c, res, flags); break;
    case OP_SEND: us_on_send(s, c, res); break;
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
    s.pool.ops = &us_stream_ops;
    s.pool.owner = &s;
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
    }
    ret = s.failed;
  }
  /* Only after a failure can connections (and ops) remain. Shutting them down ends their recvs;
   * the buffer memory stays allocated then, as the ring's teardown runs on in the kernel after
   * io_uring_queue_exit returns and a recv could still land in it. */
  if (!s.direct)
    for (struct conn *c = s.conns; c; c = c->next) shutdown(c->fd, SHUT_RDWR);
  st->recv_pauses = s.pool.pauses;
  if (s.inflight) s.pool.mem = NULL;
  pool_teardown(&s.ring, &s.pool);
  io_uring_queue_exit(&s.ring);
  for (struct conn *c = s.conns, *next; c; c = next) {
    next = c->next;
    if (s.direct) echo_closed_direct(c->fd); /* the ring's exit closed it */
    else echo_close_conn(c->fd);
    stream_free(&c->st);
    free(c);
  }
  return ret;
}
