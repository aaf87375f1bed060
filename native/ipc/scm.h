/* sendmsg/recvmsg with fds as SCM_RIGHTS, for the control socket and fd-per-message. */
#ifndef IOLAB_IPC_SCM_H
#define IOLAB_IPC_SCM_H

#include <stddef.h>
#include <sys/types.h>

#define IPC_SCM_MAX_FDS 4

/* Sends len bytes with nfds (0..IPC_SCM_MAX_FDS) fds; MSG_NOSIGNAL. Bytes sent, or -1 (errno). */
ssize_t ipc_send_fds(int sock, const void *buf, size_t len, const int *fds, int nfds);
/* Receives up to len bytes and up to maxfds fds (CLOEXEC) into fds, their count in *nfds.
 * Bytes received, or -1 (errno; EPROTO when more fds came than there was room for: those
 * that came are closed). */
ssize_t ipc_recv_fds(int sock, void *buf, size_t len, int *fds, int maxfds, int *nfds);

#endif
