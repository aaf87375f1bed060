/* bench ipc: a sender and a receiver, in two processes joined by a control socket, move
 * messages over one transport at a time. The sender times them; the receiver checks every
 * message (message.h says what is checked). Plain C: native/ipc_binding.cc is the only file
 * that turns these structs into JS values. */
#ifndef IOLAB_IPC_IPC_H
#define IOLAB_IPC_IPC_H

#include <stddef.h>
#include <stdint.h>

#include "stats/histogram.h"

#ifdef __cplusplus
extern "C" {
#endif

enum ipc_mode { IPC_THROUGHPUT, IPC_PINGPONG };

enum ipc_error_kind {
  IPC_OK,
  IPC_ERRNO,        /* a syscall failed: err, syscall */
  IPC_CHECK,        /* a message arrived with the wrong bytes: message */
  IPC_PEER_GONE,    /* the other process closed its end or died */
  IPC_UNAVAILABLE,  /* the transport cannot run here (io_uring refused): message */
  IPC_PROTOCOL,     /* the control socket carried something unexpected: message */
  IPC_STOPPED,      /* told to stop (an interrupted run) */
};

struct ipc_error {
  enum ipc_error_kind kind;
  int err;              /* positive errno for IPC_ERRNO */
  char syscall[24];
  char message[240];
};

/* One measurement: one transport, one mode, one message size. */
struct ipc_cell {
  unsigned transport;       /* index of ipc_transport_name */
  enum ipc_mode mode;
  uint64_t message_bytes;   /* >= IPC_MIN_MESSAGE */
  uint64_t duration_ns;
  uint64_t min_messages;    /* run at least this many even past duration_ns */
  int64_t fault_message;    /* test knob: the sender spoils this message (-1: none) ... */
  int fault_stale;          /* ... by sending the previous message's stamps in it (as a ring that
                             * hands out a slot before it is written would); else it changes one
                             * byte inside what the receiver compares */
  int check_full;           /* the receiver compares every byte, not the sampled set */
};

struct ipc_result {
  uint64_t messages;        /* throughput: messages delivered and checked; pingpong: round trips */
  uint64_t elapsed_ns;
  struct histogram *round_trips;  /* pingpong: filled when not NULL (ns per round trip) */
  uint64_t check_ns;        /* pingpong: the sender's checks of the replies, all together (not
                             * in the round trips) */
  struct ipc_error error;
};

#define IPC_MIN_MESSAGE 8   /* a message carries its sequence number */

/* The name of the transport with this index, in the order the table shows them; NULL past the
 * last (transports.c: the one table, each transport's name in its own file). */
const char *ipc_transport_name(unsigned index);
int ipc_transport_find(const char *name); /* index or -1 */

/* Sender side of one cell: makes the transport, hands the receiver its end over control_fd,
 * runs, collects the receiver's report. 0 on success, -1 with r->error filled. *stop != 0
 * ends the cell early with IPC_STOPPED. */
int ipc_send_cell(int control_fd, const struct ipc_cell *cell, struct ipc_result *r, const int *stop);

/* Receiver side: serves cells arriving on control_fd until it is closed (returns 0) or
 * *stop is set. A cell that fails is reported to the sender; -1 only when the control socket
 * itself fails, with *error filled. */
int ipc_serve(int control_fd, const int *stop, struct ipc_error *error);

/* The same-run limit: single-thread memcpy of message_bytes, as many times as fit in
 * duration_ns (at least min_messages). r->messages counts the copies. */
int ipc_memcpy_cell(const struct ipc_cell *cell, struct ipc_result *r, const int *stop);

/* The largest message the transport's socket takes, probed on a fresh socketpair; 0 when
 * the transport has no per-message limit. -1 with *error filled when the probe fails. */
int64_t ipc_largest_message(unsigned transport, struct ipc_error *error);

/* Why the transport cannot run here (io_uring refused), into reason; 0 when it can. */
int ipc_unavailable(unsigned transport, char *reason, size_t reason_len);

/* Memory one cell needs at this size, both processes together, in bytes. */
uint64_t ipc_footprint(unsigned transport, enum ipc_mode mode, uint64_t message_bytes);

#ifdef __cplusplus
}
#endif
#endif
