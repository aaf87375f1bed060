#include "pingpong.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { ECHO_BUFFER = 64 * 1024 };

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Sends or reads exactly len bytes (a stream socket may move part of them at a time). 0, an
 * errno, or EPIPE when a read finds the other side closed first. */
static int move_all(int fd, unsigned char *buf, size_t len, int sending) {
  while (len > 0) {
    ssize_t n = sending ? send(fd, buf, len, MSG_NOSIGNAL) : read(fd, buf, len);
    if (n == 0 && !sending) return EPIPE;
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    buf += n;
    len -= (size_t)n;
  }
  return 0;
}

int pingpong_echo(int fd, const char **syscall) {
  unsigned char *buf = malloc(ECHO_BUFFER);
  if (buf == NULL) {
    *syscall = "malloc";
    return ENOMEM;
  }
  int err = 0;
  for (;;) {
    ssize_t n = read(fd, buf, ECHO_BUFFER);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      err = errno;
      *syscall = "read";
      break;
    }
    err = move_all(fd, buf, (size_t)n, 1);
    if (err != 0) {
      *syscall = "send";
      break;
    }
  }
  free(buf);
  return err;
}

int pingpong_loop(int fd, uint64_t bytes, uint64_t round_trips, uint64_t duration_ns, struct histogram *h,
                  uint64_t *done, uint64_t *elapsed_ns, const char **syscall) {
  unsigned char *message = malloc(bytes), *reply = malloc(bytes);
  if (message == NULL || reply == NULL) {
    free(message);
    free(reply);
    *syscall = "malloc";
    return ENOMEM;
  }
  for (uint64_t i = 0; i < bytes; i++) message[i] = (unsigned char)(i * 131 + 7);
  uint64_t start = now_ns(), n = 0;
  int err = 0;
  while (round_trips > 0 ? n < round_trips : now_ns() - start < duration_ns) {
    /* the round trip's number in its first bytes: a stale or repeated echo differs */
    memcpy(message, &n, bytes < sizeof n ? bytes : sizeof n);
    uint64_t t0 = now_ns();
    err = move_all(fd, message, bytes, 1);
    if (err != 0) {
      *syscall = "send";
      break;
    }
    err = move_all(fd, reply, bytes, 0);
    if (err != 0) {
      *syscall = "read";
      break;
    }
    hist_add(h, now_ns() - t0);
    n++;
    if (memcmp(message, reply, bytes) != 0) {
      *syscall = "pingpong check";
      err = EBADMSG;
      break;
    }
  }
  *done = n;
  *elapsed_ns = now_ns() - start;
  free(message);
  free(reply);
  return err;
}
