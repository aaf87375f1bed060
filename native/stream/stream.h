/* The stream core: a socket read by one multishot recv into a provided-buffer ring, its recv's
 * lifecycle (armed, cancelled, ended), its ordered sends, pausing while too much waits to be
 * sent, and starvation: the streams whose recv ended ENOBUFS, and which of them a buffer coming
 * back wakes. Plain C, no Node headers; used by the C echo server (native/echo/uring_conn.c) and
 * the Ring's streams (native/ring/stream.cc). It never submits and never calls its owner's JS: it
 * decides, and its owner's stream_ops queue the SQEs (stream_prep_recv and stream_prep_send fill
 * them).
 *
 * The send policy (send.c). One send per stream is in flight at a time, so bytes leave in the
 * order they were given. Bytes given while nothing is queued or in flight are first offered to
 * the socket at once where the owner can (`try_send`): what it takes is in the kernel when the
 * call returns, as with net's write, and only the rest is queued. A provided buffer given to send while nothing waits goes straight out
 * with MSG_DONTWAIT, and back to the ring when that send completes; a full socket answers
 * EAGAIN at once instead of parking the buffer until the peer reads. Whatever the socket did not
 * take, and every buffer or byte given while a send is ahead of it, is copied into the stream's
 * own byte queue (byte_queue.h) and its buffer goes back to the ring at once: a peer that never
 * reads pins no provided buffer, only the queued bytes, past `pause_at` of which the recv is
 * cancelled until they drain to `resume_at`. The queue's sends may wait for the peer (no
 * MSG_DONTWAIT). A send that fails (or an EAGAIN from a send that may wait) stops the send side:
 * the queue is dropped, later sends are refused, and the owner is told once.
 *
 * The wake-up policy. A buffer that comes back (a release, a send done) wakes every starved
 * stream that is not paused or held. A recv takes a buffer only when its socket has data (on an
 * empty socket the kernel gives the buffer back to the ring with no CQE and waits in poll), so a
 * stream woken alone could keep the wake while another waited with bytes there; woken all, the
 * streams with data compete, and those that lose end ENOBUFS again (a CQE: nothing is lost) and
 * wait their turn. An ENOBUFS reaped while the pool has a buffer again (one came back in the same
 * batch) arms the recv at once. Recvs do not poll first (IORING_RECVSEND_POLL_FIRST): on 6.18 a
 * multishot recv armed that way that found data and an EOF queued together delivered the data
 * and never the EOF. A paused or held stream is not woken: it takes a buffer when it resumes
 * (or is released). */
#pragma once
#include <liburing.h>
#include <stdbool.h>
#include <stddef.h>

#include "stream/byte_queue.h"

#ifdef __cplusplus
extern "C" {
#endif

struct stream;

/* The owner's side, which the core calls (each stream's owner is the pool's). */
struct stream_ops {
  /* Queue s's multishot recv (an SQE that stream_prep_recv fills). */
  void (*arm)(struct stream *s);
  /* Cancel s's armed recv (its last CQE then comes with -ECANCELED). */
  void (*cancel)(struct stream *s);
  /* Queue s's send (an SQE that stream_prep_send fills); its CQE goes to stream_send_done. */
  void (*send)(struct stream *s);
  /* Optional: offers len bytes to the socket at once (a non-blocking send); the bytes it took,
   * or -errno. NULL: every byte goes through `send`. */
  long (*try_send)(struct stream *s, const void *data, uint32_t len);
};

/* A provided-buffer ring: `count` buffers (a power of two, <= 32768) of `size` bytes in `mem`,
 * which the owner allocates and frees. */
struct stream_pool {
  struct io_uring_buf_ring *br;
  size_t br_bytes;
  unsigned char *mem;
  unsigned count, size, bgid;
  unsigned in_kernel; /* buffers in the ring, as far as the CQEs handled so far tell */
  const struct stream_ops *ops;
  void *owner;
  bool stopped;       /* nothing is armed again (the owner is closing) */
  unsigned long long pauses; /* recvs cancelled because too much waited to be sent */
  unsigned long long copied; /* buffers given to a send copied into a stream's queue */
  struct stream *starved_head, *starved_tail; /* waiting for a buffer, oldest first */
};

struct stream {
  struct stream_pool *pool;
  void *owner;
  bool armed;        /* a recv is queued or in the kernel */
  bool cancel_sent;  /* ... and its cancel asked for */
  bool ended;        /* EOF, an error or the owner's end: receiving is over for good */
  bool paused;       /* too much waits to be sent: recv cancelled until it drains */
  bool held;         /* the owner paused receiving (a reader that wants no more): until released */
  bool starved;      /* its recv ended ENOBUFS and is not armed again yet */
  bool closing;      /* the owner closes it: nothing is armed again */
  size_t pause_at, resume_at;
  struct stream *starved_prev, *starved_next;
  /* The send side (send.c). */
  struct byte_queue queue; /* bytes waiting behind the send in flight */
  bool send_busy;          /* a send is queued or in the kernel */
  int send_bid;            /* ... reading this provided buffer, or -1: the queue's front */
  uint32_t send_len;       /* ... for this many bytes */
  bool sends_stopped;      /* a send failed or the owner stopped them: nothing more goes out */
  int send_error;          /* the first error of the send side (0: none) */
  int stop_error;          /* what stream_send_stop gave, for bytes dropped after it */
  bool failure_told;       /* stream_send_done returned STREAM_SEND_FAILED */
};

/* What the end of a recv (its last CQE) means for the owner. */
enum stream_recv_end {
  STREAM_GOES_ON, /* armed again, or waiting (a buffer, a drain): nothing to tell */
  STREAM_ENDED,   /* EOF (res 0), an error, or a cancel not for a pause: receiving is over */
};

/* Maps the ring, registers it with `flags` (io_uring_buf_reg's), puts every buffer in it.
 * 0 or -errno; *syscall names the call that failed. */
int stream_pool_register(struct io_uring *ring, struct stream_pool *p, unsigned char *mem, unsigned count,
                         unsigned size, unsigned bgid, unsigned flags, const char **syscall);
void stream_pool_unregister(struct io_uring *ring, struct stream_pool *p);
static inline unsigned char *stream_pool_addr(const struct stream_pool *p, unsigned id) {
  return p->mem + (size_t)id * p->size;
}
/* A CQE handed buffer id out of the ring. */
static inline void stream_pool_taken(struct stream_pool *p) { p->in_kernel--; }
/* Buffer id goes back into the ring; wakes per the policy above. */
void stream_pool_return(struct stream_pool *p, unsigned id);
/* Nothing is armed or woken from here on (the owner is closing); the starved list empties. */
void stream_pool_stop(struct stream_pool *p);

/* A new stream of pool p, its recv armed. */
void stream_open(struct stream *s, struct stream_pool *p, void *owner, size_t pause_at, size_t resume_at);
/* The recv's fields of an SQE: multishot, the pool's buffers. The owner sets the
 * fd (a fixed file's flag too) and user_data. */
void stream_prep_recv(struct io_uring_sqe *sqe, const struct stream *s, int fd);
/* The recv's last CQE (no IORING_CQE_F_MORE). */
enum stream_recv_end stream_recv_end(struct stream *s, int res);
/* The owner pauses (on) or resumes (off) receiving: the recv is cancelled, armed again after. */
void stream_hold(struct stream *s, bool on);
/* Receiving is over (an error on the send side): the recv is cancelled, never armed again. */
void stream_end(struct stream *s);
/* The owner closes it: nothing is armed again, the recv is cancelled. */
void stream_close(struct stream *s);
/* Arms the recv if nothing holds it back (closing, ended, paused, held, starved, armed, stopped). */
void stream_maybe_arm(struct stream *s);
/* Bytes given to send and not yet sent (the send in flight's whole length among them) changed:
 * pauses or resumes the recv. The send side calls it after each change. */
void stream_queued_changed(struct stream *s);

/* ---- the send side (the policy above) ---- */

/* What a send's CQE means for the owner. */
enum stream_send_end {
  STREAM_SEND_GOES_ON, /* sent, or waiting behind nothing: nothing to tell */
  STREAM_SEND_FAILED,  /* the send side stopped on an error (s->send_error): told once */
};

/* Sends the first len bytes of provided buffer id, after everything given before; the buffer is
 * the core's from here on (back to the pool once sent or copied). 0 or -ENOMEM (the buffer went
 * back, nothing queued). After the send side stopped, the buffer goes back and nothing is sent. */
int stream_send_buffer(struct stream *s, unsigned id, uint32_t len);
/* Sends len bytes after everything given before: offered to the socket at once when nothing is
 * ahead (try_send), the rest copied into the queue; copy NULL is memcpy. 0, -ENOMEM or the
 * copy's -errno (nothing more queued: what the socket took at once has gone). */
int stream_send_bytes(struct stream *s, const void *data, uint32_t len, byte_queue_copy_fn copy);
/* The send's fields of an SQE; the owner sets the fd's fixed-file flag and user_data. */
void stream_prep_send(struct io_uring_sqe *sqe, const struct stream *s, int fd);
/* The send's CQE. */
enum stream_send_end stream_send_done(struct stream *s, int res);
/* Nothing more goes out (the owner kills or closes it): the queue behind the send in flight is
 * dropped (err is the send side's error if bytes were dropped and none came before), and later
 * sends are refused. */
void stream_send_stop(struct stream *s, int err);
/* Bytes given to send and not yet sent; 0 means nothing of the send side is in flight. Inline
 * here, not in send.c, so that stream.c (which pauses on it) calls nothing of send.c: send.c is
 * above stream.c, which it calls (stream_pool_return, stream_queued_changed), never the reverse. */
static inline size_t stream_unsent(const struct stream *s) {
  return (size_t)s->queue.bytes + (s->send_busy && s->send_bid >= 0 ? s->send_len : 0);
}
/* Frees the queue; call once nothing of the stream is in flight. */
void stream_free(struct stream *s);

#ifdef __cplusplus
}
#endif
