/* Helpers every transport and both common loops use: errors, buffers, whole reads and
 * writes, and the wait that also watches the control socket. */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "transport.h"

#define WAIT_SLICE_MS 50

uint64_t ipc_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

int ipc_fail(struct ipc_error *e, enum ipc_error_kind kind, const char *fmt, ...) {
  if (e->kind != IPC_OK) return -1; /* keep the first error: it is the cause */
  e->kind = kind;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->message, sizeof e->message, fmt, ap);
  va_end(ap);
  return -1;
}

int ipc_fail_errnum(struct ipc_error *e, int err, const char *syscall) {
  if (e->kind != IPC_OK) return -1;
  if (err == EPIPE || err == ECONNRESET || err == ECONNREFUSED) {
    e->kind = IPC_PEER_GONE;
    snprintf(e->message, sizeof e->message, "the other process closed its end (%s: %s)", syscall, strerror(err));
  } else {
    e->kind = IPC_ERRNO;
  }
  e->err = err;
  snprintf(e->syscall, sizeof e->syscall, "%s", syscall);
  return -1;
}

int ipc_fail_errno(struct ipc_side *s, const char *syscall) {
  return ipc_fail_errnum(s->error, errno ? errno : EIO, syscall);
}

void *ipc_buffer(struct ipc_error *e, size_t len) {
  void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED) {
    ipc_fail_errnum(e, errno, "mmap");
    return NULL;
  }
  /* MAP_POPULATE maps the pages; writing one byte per page makes them private now, not in
   * the first measured copy. */
  for (size_t off = 0; off < len; off += 4096) ((volatile char *)p)[off] = 0;
  return p;
}

void ipc_buffer_free(void *buf, size_t len) {
  if (buf != NULL) munmap(buf, len);
}

void ipc_close_fds(struct ipc_side *s) {
  for (int i = 0; i < IPC_MAX_FDS; i++) {
    if (s->fds[i] >= 0) close(s->fds[i]);
    s->fds[i] = -1;
  }
}

int ipc_keep_waiting(struct ipc_side *s) {
  if (__atomic_load_n(s->stop, __ATOMIC_RELAXED)) return ipc_fail(s->error, IPC_STOPPED, "stopped");
  struct pollfd pfd = {s->control_fd, POLLIN | POLLRDHUP, 0};
  int n = poll(&pfd, 1, 0);
  if (n < 0 && errno != EINTR) return ipc_fail_errno(s, "poll");
  if (n <= 0) return 0;
  /* the control socket speaks only after the in-band end (END) or when the peer is gone: the
   * end may have come just after the wait timed out, so look once more before giving up */
  if (!s->peer_event) {
    s->peer_event = 1;
    return 0;
  }
  return ipc_fail(s->error, IPC_PEER_GONE, "the other process stopped during the run");
}

void ipc_socket_timeouts(int fd) {
  struct timeval tv = {0, WAIT_SLICE_MS * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

int ipc_retry(struct ipc_side *s) {
  if (errno == EINTR) return 1;
  if ((errno == EAGAIN || errno == EWOULDBLOCK) && ipc_keep_waiting(s) == 0) return 1;
  return 0;
}

int ipc_write_all(struct ipc_side *s, int fd, const void *buf, size_t len) {
  const char *p = buf;
  while (len > 0) {
    ssize_t n = write(fd, p, len);
    if (n < 0) {
      if (ipc_retry(s)) continue;
      if (s->error->kind != IPC_OK) return -1;
      return ipc_fail_errno(s, "write");
    }
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

int ipc_read_all(struct ipc_side *s, int fd, void *buf, size_t len) {
  char *p = buf;
  size_t want = len;
  while (len > 0) {
    ssize_t n = read(fd, p, len);
    if (n < 0) {
      if (ipc_retry(s)) continue;
      if (s->error->kind != IPC_OK) return -1;
      return ipc_fail_errno(s, "read");
    }
    if (n == 0) {
      if (len == want) return 1;
      return ipc_fail(s->error, IPC_CHECK, "%s delivered a short message: %zu of %zu bytes, then end of stream",
                      s->t->name, want - len, want);
    }
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

int ipc_wait_readable(struct ipc_side *s, int fd) {
  struct pollfd pfd[2] = {{fd, POLLIN, 0}, {s->control_fd, POLLIN | POLLRDHUP, 0}};
  for (;;) {
    if (__atomic_load_n(s->stop, __ATOMIC_RELAXED)) return ipc_fail(s->error, IPC_STOPPED, "stopped");
    int n = poll(pfd, 2, WAIT_SLICE_MS);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ipc_fail_errno(s, "poll");
    }
    if (pfd[0].revents) return 0;
    if (pfd[1].revents) return ipc_fail(s->error, IPC_PEER_GONE, "the other process stopped during the run");
  }
}

long ipc_test_pause_ms(const char *variable) {
  const char *v = getenv(variable);
  long ms = v != NULL ? strtol(v, NULL, 10) : 0;
  return ms > 0 ? ms : 0;
}

void ipc_sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  while (ms > 0 && nanosleep(&t, &t) != 0 && errno == EINTR) {
  }
}
