/* uring-stream: stream-copy's AF_UNIX SOCK_STREAM socketpair driven through io_uring. The
 * sender queues up to BATCH_BYTES of messages (1..32) as linked SENDs with MSG_WAITALL and
 * submits them with one io_uring_enter; the receiver posts as many linked RECVs with
 * MSG_WAITALL and reaps them with one. Links keep the stream's bytes in message order. In
 * pingpong a SEND and the RECV of its answer go in one submit on each side. */
#include <errno.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "message.h"
#include "transport.h"

#define BATCH_BYTES (1u << 20)
#define MAX_BATCH 32u
#define RECV_TAG (1ull << 32)

struct uring_state {
  struct io_uring ring;
  int ring_ready;
  unsigned batch;
  unsigned char *bufs;  /* batch message buffers (sender: built in; receiver: read into) */
  unsigned char *reply; /* the sender's pingpong answers */
  size_t bufs_len;
  unsigned queued;      /* SQEs prepared since the last submit */
  struct io_uring_sqe *last;
  int results[MAX_BATCH];
  unsigned ready, handed; /* receiver: messages received in bufs, and handed out so far */
  int ended;
  unsigned inflight;    /* submitted, completion not reaped: the kernel may still write bufs */
  int keep_buffers;     /* what was in flight could not be reaped: never unmap bufs */
};

static unsigned batch_of(enum ipc_mode mode, uint64_t bytes) {
  if (mode == IPC_PINGPONG) return 1;
  uint64_t b = BATCH_BYTES / bytes;
  return b < 1 ? 1 : b > MAX_BATCH ? MAX_BATCH : (unsigned)b;
}

static uint64_t uring_footprint(enum ipc_mode mode, uint64_t bytes) {
  return 2 * (uint64_t)batch_of(mode, bytes) * bytes + (mode == IPC_PINGPONG ? bytes : 0) + (1u << 20);
}

int ipc_uring_refused(char *reason, size_t len) {
  struct io_uring r;
  int ret = io_uring_queue_init(4, &r, 0);
  if (ret < 0) {
    snprintf(reason, len, "io_uring_setup refused: %s", strerror(-ret));
    return 1;
  }
  io_uring_queue_exit(&r);
  return 0;
}

static int setup(struct ipc_side *s) {
  struct uring_state *st = calloc(1, sizeof *st);
  if (st == NULL) return ipc_fail_errnum(s->error, ENOMEM, "malloc");
  s->state = st;
  st->batch = batch_of(s->mode, s->bytes);
  int ret = io_uring_queue_init(2 * MAX_BATCH, &st->ring, 0);
  if (ret < 0) return ipc_fail(s->error, IPC_UNAVAILABLE, "io_uring_setup refused: %s", strerror(-ret));
  st->ring_ready = 1;
  st->bufs_len = (size_t)st->batch * s->bytes;
  st->bufs = ipc_buffer(s->error, st->bufs_len);
  if (st->bufs == NULL) return -1;
  if (s->sender) {
    for (unsigned i = 0; i < st->batch; i++) ipc_pattern_fill(st->bufs + (size_t)i * s->bytes, s->bytes);
    if (s->mode == IPC_PINGPONG && (st->reply = ipc_buffer(s->error, s->bytes)) == NULL) return -1;
  }
  return 0;
}

static int uring_create(struct ipc_side *s, int *peer, int *npeer) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return ipc_fail_errno(s, "socketpair");
  s->fds[0] = sv[0];
  peer[0] = sv[1];
  *npeer = 1;
  return setup(s);
}

static int uring_attach(struct ipc_side *s) {
  if (s->fds[0] < 0) return ipc_fail(s->error, IPC_PROTOCOL, "uring-stream: the socket did not arrive");
  return setup(s);
}

static void *uring_build_buffer(struct ipc_side *s, uint64_t seq) {
  struct uring_state *st = s->state;
  return st->bufs + (seq % st->batch) * s->bytes;
}

static void queue(struct ipc_side *s, int recv, void *buf, unsigned index) {
  struct uring_state *st = s->state;
  struct io_uring_sqe *sqe = io_uring_get_sqe(&st->ring); /* room: at most 2 * MAX_BATCH queued */
  if (recv) io_uring_prep_recv(sqe, s->fds[0], buf, s->bytes, MSG_WAITALL);
  else io_uring_prep_send(sqe, s->fds[0], buf, s->bytes, MSG_WAITALL | MSG_NOSIGNAL);
  sqe->flags |= IOSQE_IO_LINK;
  io_uring_sqe_set_data64(sqe, (recv ? RECV_TAG : 0) | index);
  st->last = sqe;
  st->queued++;
}

/* After a failed submit or wait, before anything else happens to the buffers: ends what is
 * still in the kernel (a shutdown completes a RECV or SEND waiting on the socket) and reaps it.
 * When even that fails, the buffers are never unmapped: a RECV might still land in them. */
static void reap_in_flight(struct ipc_side *s) {
  struct uring_state *st = s->state;
  if (st->inflight == 0) return;
  shutdown(s->fds[0], SHUT_RDWR);
  while (st->inflight > 0) {
    struct io_uring_cqe *cqe;
    int ret = io_uring_wait_cqe(&st->ring, &cqe);
    if (ret == -EINTR) continue;
    if (ret < 0) {
      st->keep_buffers = 1;
      return;
    }
    io_uring_cqe_seen(&st->ring, cqe);
    st->inflight--;
  }
}

static int fail_reaping(struct ipc_side *s, int err, const char *syscall) {
  ipc_fail_errnum(s->error, err, syscall);
  reap_in_flight(s);
  return -1;
}

/* Submits what is queued with one io_uring_enter and reaps all of it. */
static int run_queued(struct ipc_side *s) {
  struct uring_state *st = s->state;
  unsigned want = st->queued;
  if (want == 0) return 0;
  st->last->flags &= ~IOSQE_IO_LINK;
  st->queued = 0;
  int ret;
  unsigned pending = io_uring_sq_ready(&st->ring); /* want, and any a failed submit left */
  do ret = io_uring_submit_and_wait(&st->ring, want);
  while (ret == -EINTR && io_uring_sq_ready(&st->ring) > 0);
  /* what the kernel took is in flight, whatever the call returned */
  unsigned submitted = pending - io_uring_sq_ready(&st->ring);
  st->inflight += submitted;
  if (ret < 0 && ret != -EINTR) return fail_reaping(s, -ret, "io_uring_enter");
  int rc = 0;
  for (unsigned got = 0; got < submitted;) {
    struct io_uring_cqe *cqe;
    ret = io_uring_wait_cqe(&st->ring, &cqe);
    if (ret == -EINTR) continue;
    if (ret < 0) return fail_reaping(s, -ret, "io_uring_wait_cqe");
    uint64_t tag = io_uring_cqe_get_data64(cqe);
    int res = cqe->res;
    io_uring_cqe_seen(&st->ring, cqe);
    st->inflight--;
    got++;
    if (tag & RECV_TAG) {
      st->results[tag & 0xffff] = res;
    } else if (res == -ECANCELED) {
      /* an earlier link failed; that failure is the one reported */
    } else if (res < 0) {
      rc = ipc_fail_errnum(s->error, -res, "send");
    } else if ((size_t)res != s->bytes) {
      /* MSG_WAITALL stops short only when the other end stops taking bytes */
      rc = ipc_fail(s->error, IPC_PEER_GONE, "the receiving process stopped taking bytes (%d of %zu sent)", res, s->bytes);
    }
  }
  return rc;
}

static int uring_put(struct ipc_side *s, const void *msg) {
  struct uring_state *st = s->state;
  queue(s, 0, (void *)msg, 0);
  /* pingpong: the answer's RECV goes in the same submit (get); throughput: a full batch */
  if (s->mode == IPC_THROUGHPUT && st->queued >= st->batch) return run_queued(s);
  return 0;
}

/* Receives the next batch (or, in pingpong, one answer) and sorts out how many arrived. */
static int receive(struct ipc_side *s) {
  struct uring_state *st = s->state;
  unsigned n = s->mode == IPC_PINGPONG ? 1 : st->batch;
  unsigned char *into = s->sender ? st->reply : st->bufs;
  for (unsigned i = 0; i < n; i++) {
    st->results[i] = -ECANCELED;
    queue(s, 1, into + (size_t)i * s->bytes, i);
  }
  if (run_queued(s) != 0) return -1;
  st->ready = st->handed = 0;
  for (unsigned i = 0; i < n; i++) {
    int res = st->results[i];
    if ((size_t)res == s->bytes) {
      st->ready++;
      continue;
    }
    if (res == 0) st->ended = 1;
    else if (res > 0)
      return ipc_fail(s->error, IPC_CHECK, "uring-stream delivered a short message: %d of %zu bytes, then end of stream",
                      res, s->bytes);
    else if (res != -ECANCELED) return ipc_fail_errnum(s->error, -res, "recv");
    break;
  }
  return 0;
}

static int uring_get(struct ipc_side *s, const void **msg) {
  struct uring_state *st = s->state;
  if (st->handed == st->ready) {
    if (st->ended) return 0;
    if (receive(s) != 0) return -1;
    if (st->ready == 0) {
      if (s->sender) return ipc_fail(s->error, IPC_PEER_GONE, "the receiving process closed its end during the run");
      return 0;
    }
  }
  unsigned char *from = s->sender ? st->reply : st->bufs;
  *msg = from + (size_t)st->handed * s->bytes;
  return 1;
}

static int uring_release(struct ipc_side *s) {
  ((struct uring_state *)s->state)->handed++;
  return 0;
}

static int uring_finish(struct ipc_side *s) {
  if (run_queued(s) != 0) return -1;
  if (shutdown(s->fds[0], SHUT_WR) != 0) return ipc_fail_errno(s, "shutdown");
  return 0;
}

static void uring_destroy(struct ipc_side *s) {
  struct uring_state *st = s->state;
  if (st != NULL) {
    if (st->ring_ready) {
      reap_in_flight(s); /* before the ring goes: its exit cancels asynchronously */
      io_uring_queue_exit(&st->ring);
    }
    if (!st->keep_buffers) {
      ipc_buffer_free(st->bufs, st->bufs_len);
      ipc_buffer_free(st->reply, s->bytes);
    }
    free(st);
    s->state = NULL;
  }
  ipc_close_fds(s);
}

const struct ipc_transport ipc_uring_stream = {
    .name = "uring-stream", .socket_type = SOCK_STREAM, .footprint = uring_footprint, .create = uring_create,
    .attach = uring_attach, .build_buffer = uring_build_buffer, .put = uring_put, .get = uring_get,
    .release = uring_release, .finish = uring_finish, .destroy = uring_destroy};
