/* The copying transports: the kernel copies every message in on write and out on read.
 *   stream-copy     AF_UNIX SOCK_STREAM socketpair, write/read loops (a message may take
 *                   several calls each way)
 *   seqpacket-copy  AF_UNIX SOCK_SEQPACKET socketpair, one send/recv per message
 *   dgram-copy      AF_UNIX SOCK_DGRAM socketpair, one send/recv per message; a zero-length
 *                   datagram ends the run (sent as reliably as a message)
 *   pipe            pipe(2) (two in pingpong, one each way), write/read loops
 * Socket and pipe buffers are left at the system's defaults, as an application gets them. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transport.h"

struct copy_state {
  void *in_buf;  /* where messages are read into: the receiver's, and the sender's replies */
};

static int out_fd(const struct ipc_side *s) {
  if (s->fds[1] < 0) return s->fds[0];
  return s->sender ? s->fds[0] : s->fds[1];
}

static int in_fd(const struct ipc_side *s) {
  if (s->fds[1] < 0) return s->fds[0];
  return s->sender ? s->fds[1] : s->fds[0];
}

static int is_socket(const struct ipc_side *s) { return s->t->socket_type != 0; }
static int keeps_boundaries(const struct ipc_side *s) {
  return s->t->socket_type == SOCK_DGRAM || s->t->socket_type == SOCK_SEQPACKET;
}

static uint64_t copy_footprint(enum ipc_mode mode, uint64_t bytes) {
  /* the receiver's buffer, the sender's reply buffer in pingpong, and the kernel's queues */
  return bytes + (mode == IPC_PINGPONG ? bytes : 0) + (1u << 20);
}

static int alloc_state(struct ipc_side *s) {
  if (is_socket(s)) ipc_socket_timeouts(s->fds[0]);
  struct copy_state *st = calloc(1, sizeof *st);
  if (st == NULL) return ipc_fail_errnum(s->error, ENOMEM, "malloc");
  s->state = st;
  if (!s->sender || s->mode == IPC_PINGPONG) {
    st->in_buf = ipc_buffer(s->error, s->bytes);
    if (st->in_buf == NULL) return -1;
  }
  return 0;
}

static int copy_create(struct ipc_side *s, int *peer, int *npeer) {
  if (is_socket(s)) {
    int sv[2];
    if (socketpair(AF_UNIX, s->t->socket_type | SOCK_CLOEXEC, 0, sv) != 0) return ipc_fail_errno(s, "socketpair");
    s->fds[0] = sv[0];
    peer[0] = sv[1];
    *npeer = 1;
  } else {
    int req[2], rep[2] = {-1, -1};
    if (pipe2(req, O_CLOEXEC) != 0) return ipc_fail_errno(s, "pipe2");
    if (s->mode == IPC_PINGPONG && pipe2(rep, O_CLOEXEC) != 0) {
      int err = errno;
      close(req[0]);
      close(req[1]);
      return ipc_fail_errnum(s->error, err, "pipe2");
    }
    s->fds[0] = req[1];
    s->fds[1] = rep[0];
    peer[0] = req[0];
    peer[1] = rep[1];
    *npeer = s->mode == IPC_PINGPONG ? 2 : 1;
  }
  return alloc_state(s);
}

static int copy_attach(struct ipc_side *s) {
  if (s->fds[0] < 0) return ipc_fail(s->error, IPC_PROTOCOL, "%s: the endpoint did not arrive", s->t->name);
  return alloc_state(s);
}

static int copy_put(struct ipc_side *s, const void *msg) {
  int fd = out_fd(s);
  if (!is_socket(s)) return ipc_write_all(s, fd, msg, s->bytes);
  const char *p = msg;
  size_t left = s->bytes;
  while (left > 0) {
    ssize_t n = send(fd, p, left, MSG_NOSIGNAL);
    if (n < 0) {
      if (ipc_retry(s)) continue;
      if (s->error->kind != IPC_OK) return -1;
      return ipc_fail_errno(s, "send");
    }
    if (keeps_boundaries(s) && (size_t)n != left)
      return ipc_fail(s->error, IPC_PROTOCOL, "%s sent %zd of %zu bytes as one message", s->t->name, n, left);
    p += n;
    left -= (size_t)n;
  }
  return 0;
}

static int copy_get(struct ipc_side *s, const void **msg) {
  struct copy_state *st = s->state;
  int fd = in_fd(s);
  if (!keeps_boundaries(s)) {
    int r = ipc_read_all(s, fd, st->in_buf, s->bytes);
    if (r < 0) return -1;
    if (r == 1) return 0;
  } else {
    ssize_t n;
    do n = recv(fd, st->in_buf, s->bytes, MSG_TRUNC);
    while (n < 0 && ipc_retry(s));
    if (n < 0) return s->error->kind != IPC_OK ? -1 : ipc_fail_errno(s, "recv");
    if (n == 0) return 0; /* the end marker (dgram) or the peer's shutdown (seqpacket) */
    if ((size_t)n != s->bytes)
      return ipc_fail(s->error, IPC_CHECK, "%s delivered a message of %zd bytes; %zu were sent", s->t->name, n, s->bytes);
  }
  *msg = st->in_buf;
  return 1;
}

static int copy_release(struct ipc_side *s) {
  (void)s;
  return 0;
}

static int copy_finish(struct ipc_side *s) {
  if (s->t->socket_type == SOCK_DGRAM) {
    /* a datagram socket has no end of stream: an empty datagram says "no more". The queue
     * is usually full at the end of a throughput cell, so a receiver that is late waits
     * here as any message would, until it takes the marker, goes away, or a stop is asked. */
    while (send(s->fds[0], "", 0, MSG_NOSIGNAL) != 0) {
      if (ipc_retry(s)) continue;
      if (s->error->kind != IPC_OK) return -1;
      return ipc_fail_errno(s, "send");
    }
    return 0;
  }
  if (is_socket(s)) {
    if (shutdown(s->fds[0], SHUT_WR) != 0) return ipc_fail_errno(s, "shutdown");
    return 0;
  }
  close(s->fds[0]); /* the request pipe's write end: the receiver reads end of file */
  s->fds[0] = -1;
  return 0;
}

static void copy_destroy(struct ipc_side *s) {
  struct copy_state *st = s->state;
  if (st != NULL) {
    ipc_buffer_free(st->in_buf, s->bytes);
    free(st);
    s->state = NULL;
  }
  ipc_close_fds(s);
}

#define COPY_TRANSPORT(var, label, type)                                                      \
  const struct ipc_transport var = {                                                          \
      .name = label, .socket_type = type, .footprint = copy_footprint, .create = copy_create, \
      .attach = copy_attach, .put = copy_put, .get = copy_get, .release = copy_release,       \
      .finish = copy_finish, .destroy = copy_destroy}

COPY_TRANSPORT(ipc_stream_copy, "stream-copy", SOCK_STREAM);
COPY_TRANSPORT(ipc_seqpacket_copy, "seqpacket-copy", SOCK_SEQPACKET);
COPY_TRANSPORT(ipc_dgram_copy, "dgram-copy", SOCK_DGRAM);
COPY_TRANSPORT(ipc_pipe, "pipe", 0);
