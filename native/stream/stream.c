/* The stream core (stream.h): the provided-buffer ring, the starved streams and the wake-up
 * policy, and a stream's recv lifecycle; its sends are send.c. */
#include "stream/stream.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

/* ---- the pool ---- */

int stream_pool_register(struct io_uring *ring, struct stream_pool *p, unsigned char *mem, unsigned count,
                         unsigned size, unsigned bgid, unsigned flags, const char **syscall) {
  memset(p, 0, sizeof(*p));
  p->br_bytes = count * sizeof(struct io_uring_buf);
  void *br = mmap(NULL, p->br_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (br == MAP_FAILED) {
    *syscall = "mmap";
    return -errno;
  }
  p->br = br;
  p->mem = mem;
  p->count = count;
  p->size = size;
  p->bgid = bgid;
  io_uring_buf_ring_init(p->br);
  /* liburing 2.3 calls the flags field of struct io_uring_buf_reg `pad`. */
  struct io_uring_buf_reg reg;
  memset(&reg, 0, sizeof(reg));
  reg.ring_addr = (unsigned long long)(uintptr_t)p->br;
  reg.ring_entries = count;
  reg.bgid = (unsigned short)bgid;
  reg.pad = (unsigned short)flags;
  int ret = io_uring_register_buf_ring(ring, &reg, 0);
  if (ret < 0) {
    *syscall = "io_uring_register_buf_ring";
    munmap(p->br, p->br_bytes);
    p->br = NULL;
    return ret;
  }
  const int mask = io_uring_buf_ring_mask(count);
  for (unsigned i = 0; i < count; i++)
    io_uring_buf_ring_add(p->br, stream_pool_addr(p, i), size, (unsigned short)i, mask, (int)i);
  io_uring_buf_ring_advance(p->br, (int)count);
  p->in_kernel = count;
  return 0;
}

void stream_pool_unregister(struct io_uring *ring, struct stream_pool *p) {
  if (!p->br) return;
  if (ring) io_uring_unregister_buf_ring(ring, (int)p->bgid);
  munmap(p->br, p->br_bytes);
  p->br = NULL;
}

static void unlist(struct stream *s) {
  struct stream_pool *p = s->pool;
  if (s->starved_prev) s->starved_prev->starved_next = s->starved_next;
  else if (p->starved_head == s) p->starved_head = s->starved_next;
  else return; /* not listed */
  if (s->starved_next) s->starved_next->starved_prev = s->starved_prev;
  else p->starved_tail = s->starved_prev;
  s->starved_prev = s->starved_next = NULL;
}

static void list(struct stream *s) {
  struct stream_pool *p = s->pool;
  s->starved_next = NULL;
  s->starved_prev = p->starved_tail;
  if (p->starved_tail) p->starved_tail->starved_next = s;
  else p->starved_head = s;
  p->starved_tail = s;
}

/* Waiting for a buffer no more: armed if nothing else holds it back. */
static void wake(struct stream *s) {
  unlist(s);
  s->starved = false;
  stream_maybe_arm(s);
}

void stream_pool_return(struct stream_pool *p, unsigned id) {
  io_uring_buf_ring_add(p->br, stream_pool_addr(p, id), p->size, (unsigned short)id,
                        io_uring_buf_ring_mask(p->count), 0);
  io_uring_buf_ring_advance(p->br, 1);
  p->in_kernel++;
  if (p->stopped) return;
  /* Every waiting stream: one woken alone may find its socket empty and give the buffer back to
   * the ring with no CQE, while another waits with bytes there (a recv takes a buffer only when
   * it has data); those that lose the buffer to another end ENOBUFS and wait again. */
  while (p->starved_head) wake(p->starved_head);
}

void stream_pool_stop(struct stream_pool *p) {
  p->stopped = true;
  while (p->starved_head) {
    struct stream *s = p->starved_head;
    unlist(s);
    s->starved = false;
  }
}

/* ---- a stream ---- */

void stream_open(struct stream *s, struct stream_pool *p, void *owner, size_t pause_at, size_t resume_at) {
  memset(s, 0, sizeof(*s));
  s->pool = p;
  s->owner = owner;
  s->pause_at = pause_at;
  s->resume_at = resume_at;
  s->send_bid = -1;
  stream_maybe_arm(s);
}

void stream_prep_recv(struct io_uring_sqe *sqe, const struct stream *s, int fd) {
  io_uring_prep_recv_multishot(sqe, fd, NULL, 0, 0);
  sqe->flags |= IOSQE_BUFFER_SELECT;
  sqe->buf_group = (unsigned short)s->pool->bgid;
}

void stream_maybe_arm(struct stream *s) {
  if (s->armed || s->closing || s->ended || s->paused || s->held || s->starved || s->pool->stopped) return;
  s->armed = true;
  s->cancel_sent = false;
  s->pool->ops->arm(s);
}

static void cancel(struct stream *s) {
  if (!s->armed || s->cancel_sent) return;
  s->cancel_sent = true;
  s->pool->ops->cancel(s);
}

enum stream_recv_end stream_recv_end(struct stream *s, int res) {
  bool by_us = s->cancel_sent;
  s->armed = false;
  s->cancel_sent = false;
  if (res > 0 || s->ended || s->closing) {
    /* The kernel ended the multishot after data (or after an end already told): go on. */
  } else if (res == -ENOBUFS) {
    /* A buffer that came back before this CQE was handled woke nobody for this stream. */
    if (s->pool->in_kernel == 0 || s->pool->stopped) {
      s->starved = true;
      if (!s->paused && !s->held && !s->pool->stopped) list(s);
    }
  } else if (res == -ECANCELED && by_us) {
    /* Cancelled for a pause or a hold: armed again once it is over (now, if it already is). */
  } else {
    s->ended = true;
    return STREAM_ENDED;
  }
  stream_maybe_arm(s);
  return STREAM_GOES_ON;
}

/* Neither paused nor held any more: a stream that waited for a buffer takes one now if the pool
 * has one, or waits its turn. */
static void unblocked(struct stream *s) {
  if (s->paused || s->held) return;
  if (s->starved && (s->pool->in_kernel > 0 || s->pool->stopped)) s->starved = false;
  else if (s->starved) list(s);
  stream_maybe_arm(s);
}

void stream_queued_changed(struct stream *s) {
  size_t queued = stream_unsent(s);
  /* Armed or not: a stream starved for a buffer (or held) when its queue passes pause_at must
   * not be woken by the next buffer that comes back. */
  if (!s->paused && queued > s->pause_at && !s->ended && !s->closing) {
    s->paused = true;
    unlist(s); /* still starved: it waits its turn again when it resumes */
    s->pool->pauses++;
    cancel(s);
  } else if (s->paused && queued <= s->resume_at) {
    s->paused = false;
    unblocked(s);
  }
}

void stream_hold(struct stream *s, bool on) {
  if (s->held == on) return;
  s->held = on;
  if (!on) return unblocked(s);
  unlist(s); /* still starved: it waits its turn again when released */
  cancel(s);
}

void stream_end(struct stream *s) {
  s->ended = true;
  unlist(s);
  s->starved = false;
  cancel(s);
}

void stream_close(struct stream *s) {
  s->closing = true;
  unlist(s);
  s->starved = false;
  cancel(s);
}
