#include "scm.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

union scm_space {
  struct cmsghdr align;
  char buf[CMSG_SPACE(sizeof(int) * IPC_SCM_MAX_FDS)];
};

ssize_t ipc_send_fds(int sock, const void *buf, size_t len, const int *fds, int nfds) {
  union scm_space control;
  struct iovec iov = {(void *)buf, len};
  struct msghdr msg = {0};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (nfds > 0) {
    if (nfds > IPC_SCM_MAX_FDS) {
      errno = EINVAL;
      return -1;
    }
    memset(&control, 0, sizeof control);
    msg.msg_control = control.buf;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
    struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
    memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
  }
  ssize_t n;
  do n = sendmsg(sock, &msg, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  return n;
}

ssize_t ipc_recv_fds(int sock, void *buf, size_t len, int *fds, int maxfds, int *nfds) {
  union scm_space control;
  struct iovec iov = {buf, len};
  struct msghdr msg = {0};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.buf;
  msg.msg_controllen = sizeof control.buf;
  *nfds = 0;
  ssize_t n;
  do n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  if (n < 0) return -1;
  int got = 0, room = maxfds < IPC_SCM_MAX_FDS ? maxfds : IPC_SCM_MAX_FDS;
  int overflow = (msg.msg_flags & MSG_CTRUNC) != 0;
  for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm != NULL; cm = CMSG_NXTHDR(&msg, cm)) {
    if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
    int count = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    for (int i = 0; i < count; i++) {
      int fd;
      memcpy(&fd, CMSG_DATA(cm) + sizeof(int) * (size_t)i, sizeof fd);
      if (got < room) fds[got++] = fd;
      else {
        close(fd);
        overflow = 1;
      }
    }
  }
  if (overflow) {
    for (int i = 0; i < got; i++) close(fds[i]);
    errno = EPROTO;
    return -1;
  }
  *nfds = got;
  return n;
}
