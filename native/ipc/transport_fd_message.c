/* fd-per-message: every message is a fresh memfd, written once by the sender (the one copy),
 * sealed (F_SEAL_SHRINK, F_SEAL_GROW, F_SEAL_WRITE) and passed with SCM_RIGHTS over a
 * stream socketpair; the receiver checks the seals and the size, maps it read-only, reads
 * it in place, unmaps and closes it: `fdpass send --memfd` and `fdpass recv`'s pattern.
 * In pingpong the receiver answers with a memfd of its own holding the same bytes.
 * Throughput keeps at most WINDOW_BYTES (2..32 messages) in flight: the receiver writes one
 * acknowledgement byte per message it is done with, on the same socket. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scm.h"
#include "transport.h"

#define WINDOW_BYTES (128ull << 20)
#define SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL)

struct fd_state {
  uint64_t window, in_flight;
  void *map;   /* the message get() returned */
  int map_fd;
};

static uint64_t window_of(uint64_t bytes) {
  uint64_t w = WINDOW_BYTES / bytes;
  return w < 2 ? 2 : w > 32 ? 32 : w;
}

static uint64_t fd_footprint(enum ipc_mode mode, uint64_t bytes) {
  return (mode == IPC_PINGPONG ? 2 : window_of(bytes)) * bytes + (1u << 20);
}

static int alloc_state(struct ipc_side *s) {
  ipc_socket_timeouts(s->fds[0]);
  struct fd_state *st = calloc(1, sizeof *st);
  if (st == NULL) return ipc_fail_errnum(s->error, ENOMEM, "malloc");
  st->window = window_of(s->bytes);
  st->map_fd = -1;
  s->state = st;
  return 0;
}

static int fd_create(struct ipc_side *s, int *peer, int *npeer) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return ipc_fail_errno(s, "socketpair");
  s->fds[0] = sv[0];
  peer[0] = sv[1];
  *npeer = 1;
  return alloc_state(s);
}

static int fd_attach(struct ipc_side *s) {
  if (s->fds[0] < 0) return ipc_fail(s->error, IPC_PROTOCOL, "fd-per-message: the socket did not arrive");
  return alloc_state(s);
}

/* Waits for acknowledgements until fewer than the window are in flight. */
static int await_acks(struct ipc_side *s, struct fd_state *st) {
  while (st->in_flight >= st->window) {
    char acks[64];
    ssize_t n = recv(s->fds[0], acks, sizeof acks, 0);
    if (n < 0 && ipc_retry(s)) continue;
    if (n < 0) return s->error->kind != IPC_OK ? -1 : ipc_fail_errno(s, "recv");
    if (n == 0) return ipc_fail(s->error, IPC_PEER_GONE, "the receiving process closed its end during the run");
    st->in_flight -= (uint64_t)n < st->in_flight ? (uint64_t)n : st->in_flight;
  }
  return 0;
}

static int fd_put(struct ipc_side *s, const void *msg) {
  struct fd_state *st = s->state;
  if (s->sender && s->mode == IPC_THROUGHPUT && await_acks(s, st) != 0) return -1;
  int fd = memfd_create("iolab-ipc-message", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return ipc_fail_errno(s, "memfd_create");
  int rc = ipc_write_all(s, fd, msg, s->bytes);
  if (rc == 0 && fcntl(fd, F_ADD_SEALS, SEALS) != 0) rc = ipc_fail_errno(s, "fcntl");
  uint64_t length = s->bytes;
  if (rc == 0) {
    ssize_t n;
    do n = ipc_send_fds(s->fds[0], &length, sizeof length, &fd, 1);
    while (n < 0 && ipc_retry(s));
    if (n < 0) rc = s->error->kind != IPC_OK ? -1 : ipc_fail_errno(s, "sendmsg");
    else if ((size_t)n != sizeof length) rc = ipc_fail(s->error, IPC_PROTOCOL, "fd-per-message: a short sendmsg");
  }
  close(fd);
  st->in_flight++;
  return rc;
}

static int fd_get(struct ipc_side *s, const void **msg) {
  struct fd_state *st = s->state;
  uint64_t length = 0;
  int fd = -1, nfds = 0;
  ssize_t n;
  do n = ipc_recv_fds(s->fds[0], &length, sizeof length, &fd, 1, &nfds);
  while (n < 0 && ipc_retry(s));
  if (n < 0) return s->error->kind != IPC_OK ? -1 : ipc_fail_errno(s, "recvmsg");
  if (n == 0 && nfds == 0) return 0;
  if ((size_t)n != sizeof length || nfds != 1 || length != s->bytes) {
    if (nfds == 1) close(fd);
    return ipc_fail(s->error, IPC_CHECK, "fd-per-message delivered %zd header bytes with %d fds for a %llu-byte message",
                    n, nfds, (unsigned long long)length);
  }
  struct stat sb;
  int seals = fcntl(fd, F_GET_SEALS);
  if (fstat(fd, &sb) != 0 || seals < 0) {
    int rc = ipc_fail_errno(s, seals < 0 ? "fcntl" : "fstat");
    close(fd);
    return rc;
  }
  /* only an object sealed against shrinking is safe to map: it cannot SIGBUS the reader */
  if (!(seals & F_SEAL_SHRINK) || (uint64_t)sb.st_size != s->bytes) {
    close(fd);
    return ipc_fail(s->error, IPC_CHECK, "fd-per-message delivered an fd that is not a sealed %zu-byte memfd", s->bytes);
  }
  void *p = mmap(NULL, s->bytes, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (p == MAP_FAILED) {
    int rc = ipc_fail_errno(s, "mmap");
    close(fd);
    return rc;
  }
  st->map = p;
  st->map_fd = fd;
  *msg = p;
  return 1;
}

static int fd_release(struct ipc_side *s) {
  struct fd_state *st = s->state;
  munmap(st->map, s->bytes);
  close(st->map_fd);
  st->map = NULL;
  st->map_fd = -1;
  if (!s->sender && s->mode == IPC_THROUGHPUT) {
    ssize_t n;
    do n = send(s->fds[0], "a", 1, MSG_NOSIGNAL);
    while (n < 0 && ipc_retry(s));
    if (n != 1) return s->error->kind != IPC_OK ? -1 : ipc_fail_errno(s, "send");
  }
  return 0;
}

static int fd_finish(struct ipc_side *s) {
  if (shutdown(s->fds[0], SHUT_WR) != 0) return ipc_fail_errno(s, "shutdown");
  return 0;
}

static void fd_destroy(struct ipc_side *s) {
  struct fd_state *st = s->state;
  if (st != NULL) {
    if (st->map != NULL) munmap(st->map, s->bytes);
    if (st->map_fd >= 0) close(st->map_fd);
    free(st);
    s->state = NULL;
  }
  ipc_close_fds(s);
}

const struct ipc_transport ipc_fd_per_message = {
    .name = "fd-per-message", .socket_type = 0, .footprint = fd_footprint, .create = fd_create,
    .attach = fd_attach, .put = fd_put, .get = fd_get, .release = fd_release, .finish = fd_finish,
    .destroy = fd_destroy};
