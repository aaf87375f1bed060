/* What every transport file fills in: one struct of operations, called by the sender's and
 * the receiver's common loops (sender.c, receiver.c), which own timing, the message pattern,
 * checking and the control socket. A transport only moves messages. */
#ifndef IOLAB_IPC_TRANSPORT_H
#define IOLAB_IPC_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "ipc.h"

#define IPC_MAX_FDS 4

/* One process's end of a cell. */
struct ipc_side {
  const struct ipc_transport *t;
  int sender;                 /* 1 in the sending process */
  enum ipc_mode mode;
  size_t bytes;               /* message size */
  int fds[IPC_MAX_FDS];       /* this side's transport fds, -1 when not used or closed */
  int control_fd;             /* watched while waiting, so a dead peer is noticed */
  const int *stop;
  int peer_event;             /* the control socket spoke while a call waited (ipc_keep_waiting) */
  void *state;                /* the transport's own */
  struct ipc_error *error;
};

struct ipc_transport {
  const char *name;
  int socket_type;  /* the AF_UNIX socket it moves messages on, 0 for none; SOCK_DGRAM and
                     * SOCK_SEQPACKET limit a message to what the socket takes */
  /* Memory the transport's buffers take at this size, both sides, beyond the sender's one
   * message buffer the common code allocates. */
  uint64_t (*footprint)(enum ipc_mode mode, uint64_t bytes);
  /* Sender: make the endpoints. Own fds go in s->fds; the receiver's in peer_fds (*npeer of
   * them, closed by the caller once passed). */
  int (*create)(struct ipc_side *s, int *peer_fds, int *npeer);
  /* Receiver: set up over the fds that arrived in s->fds (map memory, buffers). */
  int (*attach)(struct ipc_side *s);
  /* Sender, optional: the buffer message seq is built in (stamped); NULL uses the common
   * buffer. */
  void *(*build_buffer)(struct ipc_side *s, uint64_t seq);
  /* Sends one message of s->bytes (may queue it; finish() or get() flushes). */
  int (*put)(struct ipc_side *s, const void *msg);
  /* The next message: 1 and *msg, 0 when the sender ended, -1 on error. */
  int (*get)(struct ipc_side *s, const void **msg);
  /* Done with the message get() returned (free the slot, unmap, acknowledge). */
  int (*release)(struct ipc_side *s);
  /* Sender: no more messages; flush what is queued and tell the receiver in-band. */
  int (*finish)(struct ipc_side *s);
  /* Frees the state and closes the fds; safe after a failed create/attach. */
  void (*destroy)(struct ipc_side *s);
};

extern const struct ipc_transport ipc_stream_copy, ipc_seqpacket_copy, ipc_dgram_copy, ipc_pipe,
    ipc_shm_ring, ipc_fd_per_message, ipc_uring_stream;
/* The transport with this index (as ipc_transport_name), NULL when out of range (transports.c). */
const struct ipc_transport *ipc_transport_at(unsigned index);

/* Why io_uring cannot be used here, into reason: 1; 0 when it can (transport_uring.c). */
int ipc_uring_refused(char *reason, size_t len);

/* Helpers for transports and the common loops (side.c). */
uint64_t ipc_now_ns(void);
/* Fills s->error from errno; EPIPE, ECONNRESET and ECONNREFUSED mean the peer went away. */
int ipc_fail_errno(struct ipc_side *s, const char *syscall);
int ipc_fail_errnum(struct ipc_error *e, int err, const char *syscall);
int ipc_fail(struct ipc_error *e, enum ipc_error_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Anonymous memory of len bytes, every page touched so that no first-touch fault lands in a
 * measured loop. NULL with s->error filled when it cannot be had. */
void *ipc_buffer(struct ipc_error *e, size_t len);
void ipc_buffer_free(void *buf, size_t len);
void ipc_close_fds(struct ipc_side *s);
/* Writes exactly len bytes (loops over short writes): 0, or -1 with s->error. */
int ipc_write_all(struct ipc_side *s, int fd, const void *buf, size_t len);
/* Reads exactly len bytes: 0; 1 at end of file before the first byte; -1 with s->error
 * (a message cut short counts as wrong bytes). */
int ipc_read_all(struct ipc_side *s, int fd, void *buf, size_t len);
/* Sockets wait at most a slice (SO_RCVTIMEO/SO_SNDTIMEO) so that a blocked call can look
 * at the control socket and the stop flag, where a datagram peer's death shows. */
void ipc_socket_timeouts(int fd);
/* After a failed call: 1 when it should be retried (EINTR, or a timed-out wait while the peer
 * is still there and no stop was asked); 0 otherwise, with s->error filled when the peer is
 * gone or a stop was asked. */
int ipc_retry(struct ipc_side *s);
/* 0 while the peer is there and no stop was asked; else -1 with s->error filled. */
int ipc_keep_waiting(struct ipc_side *s);
/* Blocks until fd is readable, the control socket has something (the peer reported or went
 * away: -1, IPC_PEER_GONE) or *stop is set (-1, IPC_STOPPED). */
int ipc_wait_readable(struct ipc_side *s, int fd);

/* The tests' delays (IOLAB_IPC_RECEIVER_PAUSE, IOLAB_IPC_SENDER_CHECK_PAUSE): the variable's
 * milliseconds, 0 when unset; and a sleep of that long. */
long ipc_test_pause_ms(const char *variable);
void ipc_sleep_ms(long ms);

#endif
