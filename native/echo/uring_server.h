/* The uring server's state, shared by its three files, each calling only the ones below it:
 *   uring_server.c   the loop and the dispatch of each CQE (top);
 *   uring_control.c  accept, stop, the idle tick;
 *   uring_conn.c     connections: recv and sends through the stream core (native/stream), close.
 * Not a public header. */
#pragma once
#include <liburing.h>
#include <stdbool.h>
#include <stdint.h>

#include "echo.h"
#include "stream/stream.h"
#include "uring_pool.h"

/* OP_AUX: an op of a connection whose CQE only ends it (a cancel, a direct shutdown);
 * OP_CLOSE: a direct close. */
enum { OP_ACCEPT = 1, OP_RECV, OP_SEND, OP_STOP, OP_AUX, OP_IDLE_TICK, OP_ACCEPT_RESUME };
#define OP_CLOSE (((uint64_t)1 << 63) | OP_AUX)
#define OP_MASK 7ull

#define DEFAULT_BUF_COUNT 4096u /* power of two, <= 32768 */
#define SEND_PAUSE (64u * 1024u)  /* bytes waiting to be sent that stop a connection's recv */
#define SEND_RESUME (16u * 1024u) /* ... and the level at which it receives again */
#define REAP_BATCH 256u

/* A connection: its stream (the core's: recv armed, paused, starved, its sends; closing =
 * shutting down). */
struct conn {
  struct stream st;
  struct server *server;
  int fd;
  unsigned inflight;  /* ops of this connection whose last CQE has not come */
  bool eof;
  uint64_t last_active;
  struct conn *prev, *next; /* every open connection, so stop can reach them all */
} __attribute__((aligned(16)));

struct server {
  struct io_uring ring;
  struct stream_pool pool;
  const struct echo_server_config *cfg;
  struct echo_server_stats *st;
  uint64_t inflight;  /* every op of the ring whose last CQE has not come */
  uint64_t active;
  uint64_t now;       /* clock at the start of the CQE batch being handled */
  bool stopping, accept_armed, accept_cancel_sent, accept_failed, tick_armed, resume_armed;
  uint64_t accept_pause_ns;
  struct __kernel_timespec tick_ts, resume_ts; /* read by the kernel when the timeout is submitted */
  int failed;         /* a submit the kernel kept refusing: the loop ends with this error */
  struct conn *conns;
  bool direct;        /* connections' fds are fixed-file slots */
};

static inline bool conn_dead(const struct conn *c) { return c->st.closing; }

/* uring_conn.c */
struct io_uring_sqe *us_get_sqe(struct server *s);
/* Cancels the op with user_data `target` (a timeout with TIMEOUT_REMOVE); c: its connection. */
void us_queue_cancel(struct server *s, struct conn *c, uint64_t target, bool timeout);
void us_add_conn(struct server *s, int fd);
void us_kill_conn(struct server *s, struct conn *c);
void us_maybe_finish(struct server *s, struct conn *c);
void us_close_fd(struct server *s, int fd);
void us_on_recv(struct server *s, struct conn *c, int res, unsigned flags);
void us_on_send(struct server *s, struct conn *c, int res);
/* The stream core's ops for the server's pool. */
extern const struct stream_ops us_stream_ops;

/* uring_control.c */
void us_queue_accept(struct server *s);
void us_queue_stop_poll(struct server *s);
void us_arm_idle_tick(struct server *s);
void us_on_idle_tick(struct server *s);
void us_on_accept(struct server *s, int res, unsigned flags);
void us_on_stop(struct server *s);
