/* The kernel's floor for fd-carrying messages: what `iolab bench api`'s JS loops do per
 * message (sendmsg of one byte with one fd over SCM_RIGHTS, recvmsg with MSG_CMSG_CLOEXEC,
 * close of the received fd), as a plain C loop with no JS in it. */
#ifndef IOLAB_IPC_FDMSG_H
#define IOLAB_IPC_FDMSG_H
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Runs the loop over a fresh stream socketpair for about duration_ns, passing passed_fd in
 * every message. Returns 0 and fills *messages and *elapsed_ns, or a positive errno with the
 * failed call's name in *syscall. */
int fdmsg_loop(int passed_fd, uint64_t duration_ns, uint64_t *messages, uint64_t *elapsed_ns,
               const char **syscall);

#ifdef __cplusplus
}
#endif
#endif
