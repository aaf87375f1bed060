/* Internal to the load generator (loadgen*.c): the connection and thread records, the gate
 * that starts every thread's measured window at once, and the connect phase they share. */
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

struct lthread {
  pthread_t tid;
  const struct echo_load_config *cfg;
  const unsigned char *pattern;
  struct lconn *conns;
  uint32_t first, count;
  int ep;
  uint32_t live, busy;
  struct echo_load_result r;
  struct histogram *hist;
  const char *syscall;
  int err;
  bool fatal; /* err ended the run (not just one connection) */
};

/* Threads connect, report in, and wait at the gate; the main thread opens it once all are
 * in, with the measured window's start and deadline set. */
struct shared {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  uint32_t arrived;
  bool open;
  uint64_t start, deadline;
  const int *stop;
};

void gate_arrive_and_wait(struct shared *sh);
void gate_open_when(struct shared *sh, uint32_t expected, uint64_t duration_ns);
bool stop_requested(const struct shared *sh);
/* One turn of a generator thread's loop: the time (ns, at most 50 ms) it may wait for events,
 * or 0 when its run is over (all connections gone, or the window and the grace for echoes still
 * in flight have passed). A requested stop moves *deadline to now. */
uint64_t loop_wait_ns(const struct lthread *t, const struct shared *sh, uint64_t *deadline, uint64_t now);
/* Non-blocking connects for the thread's share (registered in t->ep), waits for each. */
void connect_all(struct lthread *t, uint64_t limit);
void add_result(struct echo_load_result *into, const struct echo_load_result *r);
/* Where message `seq` of connection `id` starts in the pattern. */
static inline uint32_t message_offset(uint64_t seq, uint32_t id) {
  return (uint32_t)((seq * 7u + id) % PATTERN_SPAN);
}

struct run_ctx {
  struct lthread *t;
  struct shared *sh;
};
void *uring_thread_main(void *arg);
int run_threads(const struct echo_load_config *cfg, const unsigned char *pattern,
                struct shared *sh, struct histogram *hist, struct echo_load_result *res);
