/* The uring server's control ops (see uring_server.h): the multishot accept and its pause after
 * a failure, the stop poll, the idle tick. Calls the connections' file (uring_conn.c), never the
 * loop's. */
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>

#include "uring_server.h"

void us_queue_accept(struct server *s) {
  struct io_uring_sqe *sqe = us_get_sqe(s);
  if (!sqe) return;
  if (s->direct) io_uring_prep_multishot_accept_direct(sqe, s->cfg->listen_fd, NULL, NULL, 0);
  else io_uring_prep_multishot_accept(sqe, s->cfg->listen_fd, NULL, NULL, SOCK_CLOEXEC);
  io_uring_sqe_set_data64(sqe, OP_ACCEPT);
  s->accept_armed = true;
  s->accept_cancel_sent = false;
  s->inflight++;
}

void us_queue_stop_poll(struct server *s) {
  struct io_uring_sqe *sqe = us_get_sqe(s);
  if (!sqe) return;
  io_uring_prep_poll_add(sqe, s->cfg->stop_fd, POLLIN);
  io_uring_sqe_set_data64(sqe, OP_STOP);
  s->inflight++;
}

static void queue_timeout(struct server *s, struct __kernel_timespec *ts, uint64_t ns, uint64_t ud) {
  struct io_uring_sqe *sqe = us_get_sqe(s);
  if (!sqe) return;
  ts->tv_sec = (long long)(ns / 1000000000u);
  ts->tv_nsec = (long long)(ns % 1000000000u);
  io_uring_prep_timeout(sqe, ts, 0, 0);
  io_uring_sqe_set_data64(sqe, ud);
  s->inflight++;
}

void us_arm_idle_tick(struct server *s) {
  if (!s->cfg->idle_timeout_ns || s->tick_armed || s->stopping) return;
  queue_timeout(s, &s->tick_ts, echo_idle_tick_ns(s->cfg->idle_timeout_ns), OP_IDLE_TICK);
  s->tick_armed = true;
}

void us_on_idle_tick(struct server *s) {
  s->tick_armed = false;
  if (s->stopping) return;
  for (struct conn *c = s->conns, *next; c; c = next) {
    next = c->next;
    if (!conn_dead(c) && s->now - c->last_active >= s->cfg->idle_timeout_ns) {
      s->st->idle_closed++;
      us_kill_conn(s, c);
      us_maybe_finish(s, c);
    }
  }
  us_arm_idle_tick(s);
}

void us_on_accept(struct server *s, int res, unsigned flags) {
  if (!(flags & IORING_CQE_F_MORE)) {
    s->accept_armed = false;
    s->inflight--;
  }
  if (res >= 0) {
    s->accept_pause_ns = 0;
    echo_accepted(res);
    if (s->stopping || (s->cfg->max_conns && s->active >= s->cfg->max_conns)) {
      us_close_fd(s, res); /* refused: a clean close (FIN), nothing was read */
      if (!s->stopping) s->st->refused++;
    } else {
      us_add_conn(s, res);
    }
  } else if (!s->stopping) {
    /* EMFILE, ENFILE, ENOBUFS, ENOMEM would fail again at once: stop accepting for a while. */
    s->accept_failed = true;
    if (s->accept_armed && !s->accept_cancel_sent) {
      s->accept_cancel_sent = true;
      us_queue_cancel(s, NULL, OP_ACCEPT, false);
    }
  }
  if (s->accept_armed || s->stopping || s->resume_armed) return;
  if (!s->accept_failed) return us_queue_accept(s);
  s->accept_failed = false;
  s->accept_pause_ns = echo_next_accept_pause_ns(s->accept_pause_ns);
  s->st->accept_pauses++;
  queue_timeout(s, &s->resume_ts, s->accept_pause_ns, OP_ACCEPT_RESUME);
  s->resume_armed = true;
}

void us_on_stop(struct server *s) {
  s->stopping = true;
  if (s->accept_armed) us_queue_cancel(s, NULL, OP_ACCEPT, false);
  if (s->tick_armed) us_queue_cancel(s, NULL, OP_IDLE_TICK, true);
  if (s->resume_armed) us_queue_cancel(s, NULL, OP_ACCEPT_RESUME, true);
  stream_pool_stop(&s->pool); /* no recv is armed again, no starved one woken */
  /* Each connection's ops then post their last CQE; the loop ends once the in-flight count
   * reaches zero, so no buffer is freed while the kernel may use it. */
  for (struct conn *c = s->conns, *next; c; c = next) {
    next = c->next;
    us_kill_conn(s, c);
    us_maybe_finish(s, c);
  }
}
