/* Internal to the load generator (loadgen*.c). The layering, which no call goes against:
 *   loadgen.c          echo_load_run and the mode table
 *   loadgen_epoll.c, loadgen_uring.c, loadgen_threads.c   one generator each
 *   loadgen_common.c   the records, the start gate, the connect phase, the thread pool
 * The common part calls none of the generators, except through the thread function it is
 * given. */
#pragma once
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "echo.h"
#include "stats/histogram.h"

#define PATTERN_SPAN 251u

struct lconn {
  int fd;
  uint32_t id;
  uint32_t sent, recvd, offset;
  bool busy, want_out;
  uint64_t started;
  unsigned inflight;     /* io_uring mode: ops of this connection in the kernel */
  bool dead;             /* io_uring mode: failed, closed once inflight is 0 */
  unsigned char *rbuf;   /* io_uring mode: where its recv lands */
};

struct shared;

struct lthread {
  pthread_t tid;
  const struct echo_load_config *cfg;
  const unsigned char *pattern;
  struct shared *sh;
  struct lconn *conns;
  uint32_t first, count;
  int ep;
  uint32_t live, busy;
  struct echo_load_result r;
  struct histogram *hist;
  const char *syscall;
  int err;
  bool fatal;               /* err ended the run (not just one connection) */
  uint64_t stopped_sending; /* when this thread started no more messages (0: not yet) */
  uint64_t last_response;   /* when its last whole echo came in */
};

/* Threads connect, report in, and wait at the gate; the main thread opens it once all are
 * in, with the measured window's start and deadline set. Each thread, when done, moves `end`
 * to when its window ended (the run's elapsed time is end - start). */
struct shared {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  uint32_t arrived;
  bool open;
  uint64_t start, deadline, end;
  const int *stop;
  uint32_t running;          /* threads whose window has not ended yet */
  int server_pid;            /* 0: none */
  int64_t server_cpu0, server_cpu_ns; /* its CPU time at the window's start; in the window */
};

void gate_arrive_and_wait(struct shared *sh);
void gate_open_when(struct shared *sh, uint32_t expected, uint64_t duration_ns);
bool stop_requested(const struct shared *sh);
/* A thread's window ends when it stopped sending or its last echo came in, whichever is later
 * (echoes that never come do not stretch it). The last thread to get here reads the server's
 * CPU time, and every thread waits here for it: the window's figures leave out connecting and
 * tearing down, the server's included. */
void window_ended(struct shared *sh, uint64_t stopped_sending, uint64_t last_response);
/* One turn of a generator thread's loop: the time (ns, at most 50 ms) it may wait for events,
 * or 0 when its run is over (all connections gone, or the window and the grace for echoes still
 * in flight have passed). A requested stop moves *deadline to now. Notes when sending stopped. */
uint64_t loop_wait_ns(struct lthread *t, uint64_t *deadline, uint64_t now);
/* Non-blocking connects for the thread's share (registered in t->ep), waits for each. */
void connect_all(struct lthread *t, uint64_t limit);
/* What the thread's epoll set waits for on c: input, and output too when `out`. */
void set_events(struct lthread *t, struct lconn *c, bool out);
/* Ends a connection of the epoll set: closes it and updates the thread's counts. */
void drop_conn(struct lthread *t, struct lconn *c);
void add_result(struct echo_load_result *into, const struct echo_load_result *r);
/* Where message `seq` of connection `id` starts in the pattern. */
static inline uint32_t message_offset(uint64_t seq, uint32_t id) {
  return (uint32_t)((seq * 7u + id) % PATTERN_SPAN);
}

/* What a mode runs: connects, opens the gate, runs the window, sums into res and hist. */
typedef int (*load_mode_fn)(const struct echo_load_config *cfg, const unsigned char *pattern,
                            struct shared *sh, struct histogram *hist, struct echo_load_result *res);
/* The epoll and io_uring modes: `threads` workers, each running thread_main on its share. */
int run_pool(const struct echo_load_config *cfg, const unsigned char *pattern, struct shared *sh,
             struct histogram *hist, struct echo_load_result *res, void *(*thread_main)(void *));

int run_epoll(const struct echo_load_config *cfg, const unsigned char *pattern, struct shared *sh,
              struct histogram *hist, struct echo_load_result *res);
int run_uring(const struct echo_load_config *cfg, const unsigned char *pattern, struct shared *sh,
              struct histogram *hist, struct echo_load_result *res);
int run_threads(const struct echo_load_config *cfg, const unsigned char *pattern, struct shared *sh,
                struct histogram *hist, struct echo_load_result *res);
