/* The control socket between the two processes (a SOCK_SEQPACKET pair): the sender sends
 * CELL with the receiver's transport fds, the receiver answers READY, the sender sends END
 * with the count it sent, the receiver answers REPORT. An error on either side travels in
 * READY or REPORT. Nothing measured passes through here. */
#ifndef IOLAB_IPC_CONTROL_H
#define IOLAB_IPC_CONTROL_H

#include <stdint.h>

#include "ipc.h"

enum ipc_wire_kind { IPC_WIRE_CELL = 1, IPC_WIRE_READY, IPC_WIRE_END, IPC_WIRE_REPORT };

struct ipc_wire {
  uint32_t magic;
  uint32_t kind;
  uint32_t transport;
  uint32_t mode;
  uint64_t message_bytes;
  uint64_t messages;   /* END: sent; REPORT: received and checked */
  int32_t check_full;
  int32_t error_kind;  /* READY/REPORT: enum ipc_error_kind */
  int32_t err;
  char syscall[24];
  char message[240];
};

/* 0, or -1 with *e filled. */
int ipc_wire_send(int control, uint32_t kind, struct ipc_wire *w, const int *fds, int nfds, struct ipc_error *e);
/* 1: *w holds a message; 0: the other end closed; -1 with *e filled. */
int ipc_wire_recv(int control, struct ipc_wire *w, int *fds, int maxfds, int *nfds, struct ipc_error *e);
/* Copies an error into / out of a wire message. */
void ipc_wire_put_error(struct ipc_wire *w, const struct ipc_error *e);
void ipc_wire_get_error(const struct ipc_wire *w, struct ipc_error *e);

#endif
