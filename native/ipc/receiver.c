/* The receiving process's loop: takes one cell at a time from the control socket, checks
 * every message that arrives (and in pingpong sends it back), reports. A receiver that finds
 * wrong bytes closes its end at once, so a sender blocked on a full transport wakes up, and
 * reports without waiting for END. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "control.h"
#include "message.h"
#include "transport.h"

/* IOLAB_IPC_RECEIVER_PAUSE=<ms>: the receiver waits this long before each message it reads:
 * a receiver that falls behind (descheduled, stopped) made deterministic for the tests. */
static int receive_messages(struct ipc_side *s, int check_full, uint64_t *count) {
  const struct ipc_transport *t = s->t;
  long pause = ipc_test_pause_ms("IOLAB_IPC_RECEIVER_PAUSE");
  for (uint64_t seq = 0;; seq++) {
    const void *msg;
    ipc_sleep_ms(pause);
    int got = t->get(s, &msg);
    if (got < 0) return -1;
    if (got == 0) {
      *count = seq;
      return 0;
    }
    if (ipc_check(msg, s->bytes, seq, check_full, t->name, s->error) != 0) return -1;
    if (s->mode == IPC_PINGPONG && t->put(s, msg) != 0) return -1;
    if (t->release(s) != 0) return -1;
  }
}

static int serve_cell(int control, const struct ipc_wire *cell, int *fds, int nfds, const int *stop) {
  struct ipc_error e = {0};
  struct ipc_wire w;
  const struct ipc_transport *t = ipc_transport_at(cell->transport);
  struct ipc_side s = {.t = t, .sender = 0, .mode = (enum ipc_mode)cell->mode, .bytes = (size_t)cell->message_bytes,
                       .control_fd = control, .stop = stop, .error = &e};
  for (int i = 0; i < IPC_MAX_FDS; i++) s.fds[i] = i < nfds ? fds[i] : -1;
  if (t == NULL || cell->message_bytes < IPC_MIN_MESSAGE || cell->mode > IPC_PINGPONG) {
    ipc_close_fds(&s);
    ipc_fail(&e, IPC_PROTOCOL, "the receiving process got a cell it cannot run");
    memset(&w, 0, sizeof w);
    ipc_wire_put_error(&w, &e);
    return ipc_wire_send(control, IPC_WIRE_READY, &w, NULL, 0, &e);
  }
  int ok = t->attach(&s) == 0;
  memset(&w, 0, sizeof w);
  ipc_wire_put_error(&w, &e);
  if (ipc_wire_send(control, IPC_WIRE_READY, &w, NULL, 0, &e) != 0) ok = 0;
  uint64_t count = 0;
  if (ok && receive_messages(&s, cell->check_full, &count) == 0) {
    /* the in-band end came; END on the control socket follows with the count sent */
    t->destroy(&s);
    int got = ipc_wire_recv(control, &w, NULL, 0, NULL, &e);
    if (got <= 0) return got == 0 ? 1 : -1;
    if (w.kind != IPC_WIRE_END) ipc_fail(&e, IPC_PROTOCOL, "the sending process sent %u, not END", w.kind);
  } else {
    t->destroy(&s); /* wakes a sender blocked on a full transport */
  }
  memset(&w, 0, sizeof w);
  w.messages = count;
  ipc_wire_put_error(&w, &e);
  return ipc_wire_send(control, IPC_WIRE_REPORT, &w, NULL, 0, &e);
}

int ipc_serve(int control, const int *stop, struct ipc_error *error) {
  memset(error, 0, sizeof *error);
  int type = 0;
  socklen_t len = sizeof type;
  if (getsockopt(control, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_SEQPACKET)
    return ipc_fail(error, IPC_PROTOCOL, "fd %d is not the control socket bench ipc passes (a seqpacket socket)", control);
  /* the sending process is the one that started this one: end with it, whatever kills it */
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  for (;;) {
    struct ipc_wire w;
    int fds[IPC_MAX_FDS], nfds = 0;
    int got = ipc_wire_recv(control, &w, fds, IPC_MAX_FDS, &nfds, error);
    if (got <= 0) return got;
    if (w.kind == IPC_WIRE_END) { /* the end of a cell this side already reported as failed */
      for (int i = 0; i < nfds; i++) close(fds[i]);
      continue;
    }
    if (w.kind != IPC_WIRE_CELL) {
      for (int i = 0; i < nfds; i++) close(fds[i]);
      return ipc_fail(error, IPC_PROTOCOL, "the sending process sent %u, not a cell", w.kind);
    }
    /* a control socket that closes or fails mid-cell: the sending process is gone, and
     * there is no one left to report to */
    if (serve_cell(control, &w, fds, nfds, stop) != 0) return 0;
  }
}
