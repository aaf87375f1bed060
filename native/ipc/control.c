#include "control.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "scm.h"
#include "transport.h"

#define WIRE_MAGIC 0x49504331u /* "IPC1" */

int ipc_wire_send(int control, uint32_t kind, struct ipc_wire *w, const int *fds, int nfds, struct ipc_error *e) {
  w->magic = WIRE_MAGIC;
  w->kind = kind;
  ssize_t n = ipc_send_fds(control, w, sizeof *w, fds, nfds);
  if (n < 0) return ipc_fail_errnum(e, errno, "sendmsg");
  if ((size_t)n != sizeof *w) return ipc_fail(e, IPC_PROTOCOL, "control socket took %zd of %zu bytes", n, sizeof *w);
  return 0;
}

int ipc_wire_recv(int control, struct ipc_wire *w, int *fds, int maxfds, int *nfds, struct ipc_error *e) {
  int none[IPC_SCM_MAX_FDS], count = 0;
  ssize_t n = ipc_recv_fds(control, w, sizeof *w, fds ? fds : none, fds ? maxfds : IPC_SCM_MAX_FDS, &count);
  if (n < 0) {
    if (errno == ECONNRESET) return 0;
    return ipc_fail_errnum(e, errno, "recvmsg");
  }
  if (fds == NULL)
    for (int i = 0; i < count; i++) close(none[i]);
  if (nfds != NULL) *nfds = count;
  if (n == 0) return 0;
  if ((size_t)n != sizeof *w || w->magic != WIRE_MAGIC) {
    for (int i = 0; fds != NULL && i < count; i++) close(fds[i]);
    return ipc_fail(e, IPC_PROTOCOL, "the control socket carried a message iolab did not send (%zd bytes)", n);
  }
  w->syscall[sizeof w->syscall - 1] = 0;
  w->message[sizeof w->message - 1] = 0;
  return 1;
}

void ipc_wire_put_error(struct ipc_wire *w, const struct ipc_error *e) {
  w->error_kind = (int32_t)e->kind;
  w->err = e->err;
  snprintf(w->syscall, sizeof w->syscall, "%s", e->syscall);
  snprintf(w->message, sizeof w->message, "%s", e->message);
}

void ipc_wire_get_error(const struct ipc_wire *w, struct ipc_error *e) {
  e->kind = (enum ipc_error_kind)w->error_kind;
  e->err = w->err;
  snprintf(e->syscall, sizeof e->syscall, "%s", w->syscall);
  snprintf(e->message, sizeof e->message, "%s", w->message);
}
