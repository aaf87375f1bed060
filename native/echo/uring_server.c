/* io_uring echo server: one multishot accept, one multishot recv per connection into a
 * provided-buffer ring (set up by hand: mmap + io_uring_buf_ring_init + register), one send
 * in flight per connection of exactly what a recv brought, and the buffer goes back to the
 * ring only after its send completed. Order is kept because a connection's buffers queue up
 * and are sent one after another; a connection whose queue grows (the peer reads slowly)
 * cancels its recv and re-arms it once drained, so it stops eating the shared buffers. */
#include <errno.h>
#include <liburing.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "echo.h"

enum { OP_ACCEPT = 1, OP_RECV, OP_SEND, OP_STOP, OP_CANCEL };
#define OP_MASK 7ull

#define DEFAULT_BUF_COUNT 4096u /* power of two, <= 32768 */
#define BUF_SIZE 4096u
#define BGID 0
#define PAUSE_AT 8u  /* queued buffers that make a connection stop receiving */
#define RESUME_AT 2u /* ... and the level at which it receives again */

struct conn {
  int fd;
  unsigned inflight;  /* ops of this connection whose last CQE has not come */
  bool recv_armed, send_busy, cancel_sent, eof, dead, paused, starved;
  uint16_t *q_bid;    /* buffers waiting to be sent, in arrival order */
  uint32_t *q_len;
  unsigned q_head, q_count, q_cap;
  uint32_t q_off;     /* bytes of the head buffer already sent */
  struct conn *next_starved;
  struct conn *prev, *next; /* every open connection, so stop can reach them all */
} __attribute__((aligned(16)));

struct server {
  struct io_uring ring;
  struct io_uring_buf_ring *br;
  size_t br_bytes;
  unsigned char *bufs;
  unsigned buf_count;
  unsigned held;      /* buffers sitting in connections' send queues */
  const struct echo_server_config *cfg;
  struct echo_server_stats *st;
  uint64_t inflight;  /* every op of the ring whose last CQE has not come */
  uint64_t active;
  bool stopping, accept_armed;
  struct conn *starved;
  struct conn *conns;
};

static struct io_uring_sqe *get_sqe(struct server *s) {
  struct io_uring_sqe *sqe = io_uring_get_sqe(&s->ring);
  while (!sqe) {
    io_uring_submit(&s->ring);
    sqe = io_uring_get_sqe(&s->ring);
  }
  return sqe;
}

static void *buf_addr(struct server *s, unsigned bid) { return s->bufs + (size_t)bid * BUF_SIZE; }

static void return_buffer(struct server *s, unsigned bid) {
  io_uring_buf_ring_add(s->br, buf_addr(s, bid), BUF_SIZE, (unsigned short)bid,
                        io_uring_buf_ring_mask(s->buf_count), 0);
  io_uring_buf_ring_advance(s->br, 1);
}

static void queue_accept(struct server *s) {
  struct io_uring_sqe *sqe = get_sqe(s);
  io_uring_prep_multishot_accept(sqe, s->cfg->listen_fd, NULL, NULL, SOCK_CLOEXEC);
  io_uring_sqe_set_data64(sqe, OP_ACCEPT);
  s->accept_armed = true;
  s->inflight++;
}

static void queue_stop_poll(struct server *s) {
  struct io_uring_sqe *sqe = get_sqe(s);
  io_uring_prep_poll_add(sqe, s->cfg->stop_fd, POLLIN);
  io_uring_sqe_set_data64(sqe, OP_STOP);
  s->inflight++;
}

static void queue_recv(struct server *s, struct conn *c) {
  struct io_uring_sqe *sqe = get_sqe(s);
  io_uring_prep_recv_multishot(sqe, c->fd, NULL, 0, 0);
  sqe->flags |= IOSQE_BUFFER_SELECT;
  sqe->buf_group = BGID;
  io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)c | OP_RECV);
  c->recv_armed = true;
  c->cancel_sent = false;
  c->inflight++;
  s->inflight++;
}

static void queue_cancel_recv(struct server *s, struct conn *c) {
  if (!c->recv_armed || c->cancel_sent) return;
  struct io_uring_sqe *sqe = get_sqe(s);
  io_uring_prep_cancel64(sqe, (uint64_t)(uintptr_t)c | OP_RECV, 0);
  io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)c | OP_CANCEL);
  c->cancel_sent = true;
  c->inflight++;
  s->inflight++;
}

static void queue_send(struct server *s, struct conn *c) {
  if (c->send_busy || c->dead || c->q_count == 0) return;
  unsigned bid = c->q_bid[c->q_head];
  struct io_uring_sqe *sqe = get_sqe(s);
  io_uring_prep_send(sqe, c->fd, (char *)buf_addr(s, bid) + c->q_off, c->q_len[c->q_head] - c->q_off,
                     MSG_NOSIGNAL);
  io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)c | OP_SEND);
  c->send_busy = true;
  c->inflight++;
  s->inflight++;
}

static int enqueue(struct conn *c, unsigned bid, uint32_t len) {
  if (c->q_count == c->q_cap) {
    unsigned cap = c->q_cap ? c->q_cap * 2 : 16;
    uint16_t *nb = malloc(cap * sizeof(*nb));
    uint32_t *nl = malloc(cap * sizeof(*nl));
    if (!nb || !nl) {
      free(nb);
      free(nl);
      return -ENOMEM;
    }
    for (unsigned i = 0; i < c->q_count; i++) {
      nb[i] = c->q_bid[(c->q_head + i) % c->q_cap];
      nl[i] = c->q_len[(c->q_head + i) % c->q_cap];
    }
    free(c->q_bid);
    free(c->q_len);
    c->q_bid = nb;
    c->q_len = nl;
    c->q_head = 0;
    c->q_cap = cap;
  }
  unsigned tail = (c->q_head + c->q_count) % c->q_cap;
  c->q_bid[tail] = (uint16_t)bid;
  c->q_len[tail] = len;
  c->q_count++;
  return 0;
}

static void pop(struct server *s, struct conn *c) {
  return_buffer(s, c->q_bid[c->q_head]);
  s->held--;
  c->q_head = (c->q_head + 1) % c->q_cap;
  c->q_count--;
  c->q_off = 0;
}

static void maybe_rearm(struct server *s, struct conn *c) {
  if (c->dead || c->eof || c->recv_armed || c->paused || c->starved || s->stopping) return;
  queue_recv(s, c);
}

/* Closes the connection once nothing of it is in flight: after an error, after stop, or
 * after the peer's EOF once everything it sent has been echoed. */
static void maybe_finish(struct server *s, struct conn *c) {
  if (c->eof && c->q_count == 0 && !c->send_busy) c->dead = true;
  if (!c->dead) return;
  while (c->q_count) pop(s, c);
  queue_cancel_recv(s, c);
  if (c->inflight || c->starved) return;
  close(c->fd);
  if (c->prev) c->prev->next = c->next; else s->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  free(c->q_bid);
  free(c->q_len);
  free(c);
  s->active--;
}

static void wake_starved(struct server *s) {
  while (s->starved) {
    struct conn *c = s->starved;
    s->starved = c->next_starved;
    c->starved = false;
    c->next_starved = NULL;
    maybe_rearm(s, c);
    maybe_finish(s, c);
  }
}

static void on_accept(struct server *s, struct io_uring_cqe *cqe) {
  if (!(cqe->flags & IORING_CQE_F_MORE)) {
    s->accept_armed = false;
    s->inflight--;
  }
  int fd = cqe->res;
  if (fd >= 0) {
    if (s->stopping || (s->cfg->max_conns && s->active >= s->cfg->max_conns)) {
      close(fd); /* refused: a clean close (FIN), nothing was read */
      if (!s->stopping) s->st->refused++;
    } else {
      struct conn *c = calloc(1, sizeof(*c));
      if (!c) {
        close(fd);
      } else {
        echo_set_nodelay(fd);
        c->fd = fd;
        c->next = s->conns;
        if (s->conns) s->conns->prev = c;
        s->conns = c;
        s->active++;
        if (s->active > s->st->peak_conns) s->st->peak_conns = s->active;
        s->st->connections++;
        queue_recv(s, c);
      }
    }
  }
  if (!s->accept_armed && !s->stopping) queue_accept(s);
}

static void on_recv(struct server *s, struct conn *c, struct io_uring_cqe *cqe) {
  bool more = cqe->flags & IORING_CQE_F_MORE;
  if (cqe->res > 0 && (cqe->flags & IORING_CQE_F_BUFFER)) {
    unsigned bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
    if (c->dead || enqueue(c, bid, (uint32_t)cqe->res) < 0) {
      return_buffer(s, bid);
      c->dead = true;
    } else {
      s->held++;
      queue_send(s, c);
      if (c->q_count >= PAUSE_AT && !c->paused) {
        c->paused = true;
        s->st->recv_pauses++;
        queue_cancel_recv(s, c);
      }
    }
  }
  if (!more) {
    c->recv_armed = false;
    c->inflight--;
    s->inflight--;
    if (cqe->res == 0) {
      c->eof = true;
    } else if (cqe->res == -ENOBUFS) {
      s->st->buffer_waits++;
      if (!c->starved && !c->dead) {
        c->starved = true;
        c->next_starved = s->starved;
        s->starved = c;
      }
    } else if (cqe->res == -ECANCELED) {
      if (s->stopping) c->dead = true;
    } else if (cqe->res < 0) {
      c->dead = true; /* ECONNRESET and friends */
    }
    maybe_rearm(s, c);
  }
  maybe_finish(s, c);
}

static void on_send(struct server *s, struct conn *c, struct io_uring_cqe *cqe) {
  c->send_busy = false;
  c->inflight--;
  s->inflight--;
  bool returned = false;
  if (cqe->res < 0) {
    c->dead = true;
  } else {
    s->st->bytes += (uint64_t)cqe->res;
    c->q_off += (uint32_t)cqe->res;
    if (c->q_off >= c->q_len[c->q_head]) {
      pop(s, c);
      returned = true;
    }
    if (c->paused && c->q_count <= RESUME_AT) {
      c->paused = false;
      maybe_rearm(s, c);
    }
    queue_send(s, c); /* the rest of a short send, or the next buffer */
  }
  maybe_finish(s, c);
  if (returned) wake_starved(s);
}

static void on_stop(struct server *s) {
  s->stopping = true;
  /* Cancel everything still armed; each op then posts its last CQE and the loop ends once
   * the in-flight count reaches zero, so no buffer is freed while the kernel may use it. */
  struct io_uring_sqe *sqe = get_sqe(s);
  io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY);
  io_uring_sqe_set_data64(sqe, OP_CANCEL);
  s->inflight++;
  while (s->starved) {
    struct conn *c = s->starved;
    s->starved = c->next_starved;
    c->starved = false;
  }
  for (struct conn *c = s->conns, *next; c; c = next) {
    next = c->next;
    c->dead = true;
    maybe_finish(s, c);
  }
}

static void handle(struct server *s, struct io_uring_cqe *cqe) {
  uint64_t ud = io_uring_cqe_get_data64(cqe);
  struct conn *c = (struct conn *)(uintptr_t)(ud & ~OP_MASK);
  switch (ud & OP_MASK) {
    case OP_ACCEPT: on_accept(s, cqe); break;
    case OP_RECV: on_recv(s, c, cqe); break;
    case OP_SEND: on_send(s, c, cqe); break;
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
  }
}

/* Tries the cheapest setup first: one thread submits (SINGLE_ISSUER) and completions run
 * only when it waits (DEFER_TASKRUN); older kernels refuse those flags with EINVAL. */
static int setup_ring(struct server *s) {
  static const struct { unsigned flags; const char *name; } tries[] = {
    { IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN, "SINGLE_ISSUER|DEFER_TASKRUN" },
    { IORING_SETUP_COOP_TASKRUN, "COOP_TASKRUN" },
    { 0, "plain" },
  };
  int ret = -EINVAL;
  for (unsigned i = 0; i < sizeof(tries) / sizeof(tries[0]); i++) {
    struct io_uring_params p;
    memset(&p, 0, sizeof(p));
    p.flags = tries[i].flags | IORING_SETUP_CQSIZE;
    p.cq_entries = 16384;
    ret = io_uring_queue_init_params(2048, &s->ring, &p);
    if (ret == 0) {
      snprintf(s->st->setup, sizeof(s->st->setup), "%s, %u x %u B provided buffers", tries[i].name,
               s->buf_count, BUF_SIZE);
      return 0;
    }
    if (ret != -EINVAL) return ret;
  }
  return ret;
}

static int setup_buffers(struct server *s) {
  s->br_bytes = s->buf_count * sizeof(struct io_uring_buf);
  void *mem = mmap(NULL, s->br_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    s->st->syscall = "mmap";
    return -errno;
  }
  s->br = mem;
  io_uring_buf_ring_init(s->br);
  struct io_uring_buf_reg reg;
  memset(&reg, 0, sizeof(reg));
  reg.ring_addr = (uint64_t)(uintptr_t)s->br;
  reg.ring_entries = s->buf_count;
  reg.bgid = BGID;
  int ret = io_uring_register_buf_ring(&s->ring, &reg, 0);
  if (ret < 0) {
    s->st->syscall = "io_uring_register_buf_ring";
    munmap(s->br, s->br_bytes);
    s->br = NULL;
    return ret;
  }
  s->bufs = malloc((size_t)s->buf_count * BUF_SIZE);
  if (!s->bufs) {
    s->st->syscall = "malloc";
    return -ENOMEM;
  }
  for (unsigned i = 0; i < s->buf_count; i++)
    io_uring_buf_ring_add(s->br, buf_addr(s, i), BUF_SIZE, (unsigned short)i,
                          io_uring_buf_ring_mask(s->buf_count), (int)i);
  io_uring_buf_ring_advance(s->br, (int)s->buf_count);
  return 0;
}

int echo_uring_serve(const struct echo_server_config *cfg, struct echo_server_stats *st) {
  struct server s;
  memset(&s, 0, sizeof(s));
  s.cfg = cfg;
  s.st = st;
  s.buf_count = cfg->buffers ? cfg->buffers : DEFAULT_BUF_COUNT;
  if (s.buf_count > 32768 || (s.buf_count & (s.buf_count - 1))) {
    st->syscall = "io_uring_register_buf_ring";
    return -EINVAL;
  }
  int ret = setup_ring(&s);
  if (ret < 0) {
    st->syscall = "io_uring_queue_init";
    return ret;
  }
  ret = setup_buffers(&s);
  if (ret == 0) {
    queue_accept(&s);
    queue_stop_poll(&s);
    while (!(s.stopping && s.inflight == 0)) {
      ret = io_uring_submit_and_wait(&s.ring, 1);
      if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY) {
        st->syscall = "io_uring_enter";
        break;
      }
      ret = 0;
      struct io_uring_cqe *cqe;
      unsigned head, seen = 0;
      io_uring_for_each_cqe(&s.ring, head, cqe) {
        handle(&s, cqe);
        seen++;
      }
      io_uring_cq_advance(&s.ring, seen);
      /* A recv may have hit ENOBUFS after the buffers it needed came back in the same batch
       * (or were freed by a closing connection): re-arm the starved while any are free. */
      if (s.starved && s.held < s.buf_count) wake_starved(&s);
    }
  }
  if (s.br) io_uring_unregister_buf_ring(&s.ring, BGID);
  io_uring_queue_exit(&s.ring);
  /* Only after a failed io_uring_enter can connections remain; the ring is gone, close them. */
  for (struct conn *c = s.conns, *next; c; c = next) {
    next = c->next;
    close(c->fd);
    free(c->q_bid);
    free(c->q_len);
    free(c);
  }
  if (s.br) munmap(s.br, s.br_bytes);
  free(s.bufs);
  return ret;
}
