#include "fdmsg.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* One message: sendmsg(byte + fd), recvmsg, close the fd that arrived. 0 or an errno. */
static int pass_one(int tx, int rx, int passed_fd, const char **syscall) {
  union {
    struct cmsghdr align;
    char buf[CMSG_SPACE(sizeof(int))];
  } control;
  char byte = 'm';
  struct iovec iov = {&byte, 1};
  struct msghdr msg = {0};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.buf;
  msg.msg_controllen = sizeof(control.buf);
  struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
  cm->cmsg_level = SOL_SOCKET;
  cm->cmsg_type = SCM_RIGHTS;
  cm->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(cm), &passed_fd, sizeof(int));
  if (sendmsg(tx, &msg, MSG_NOSIGNAL) != 1) {
    *syscall = "sendmsg";
    return errno ? errno : EIO;
  }
  msg.msg_controllen = sizeof(control.buf);
  if (recvmsg(rx, &msg, MSG_CMSG_CLOEXEC) != 1) {
    *syscall = "recvmsg";
    return errno ? errno : EIO;
  }
  cm = CMSG_FIRSTHDR(&msg);
  if (cm == NULL || cm->cmsg_type != SCM_RIGHTS || (msg.msg_flags & MSG_CTRUNC)) {
    *syscall = "recvmsg";
    return EPROTO;
  }
  int got;
  memcpy(&got, CMSG_DATA(cm), sizeof(int));
  close(got);
  return 0;
}

int fdmsg_loop(int passed_fd, uint64_t duration_ns, uint64_t *messages, uint64_t *elapsed_ns,
               const char **syscall) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    *syscall = "socketpair";
    return errno;
  }
  uint64_t start = now_ns(), n = 0;
  int err = 0;
  do {
    for (int k = 0; k < 256 && err == 0; k++, n++) err = pass_one(sv[0], sv[1], passed_fd, syscall);
  } while (err == 0 && now_ns() - start < duration_ns);
  *messages = n;
  *elapsed_ns = now_ns() - start;
  close(sv[0]);
  close(sv[1]);
  return err;
}
