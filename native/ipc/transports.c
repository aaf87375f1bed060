/* The transport table (the order the table and the JSON list them in) and what the command
 * asks before a run: names, limits, whether a transport can run here, memory. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transport.h"

static const struct ipc_transport *const transports[] = {
    &ipc_stream_copy, &ipc_seqpacket_copy, &ipc_dgram_copy, &ipc_pipe,
    &ipc_shm_ring,    &ipc_fd_per_message, &ipc_uring_stream,
};
#define TRANSPORTS (sizeof transports / sizeof transports[0])

const struct ipc_transport *ipc_transport_at(unsigned index) {
  return index < TRANSPORTS ? transports[index] : NULL;
}

const char *ipc_transport_name(unsigned index) {
  return index < TRANSPORTS ? transports[index]->name : NULL;
}

int ipc_transport_find(const char *name) {
  for (unsigned i = 0; i < TRANSPORTS; i++)
    if (strcmp(transports[i]->name, name) == 0) return (int)i;
  return -1;
}

#define PROBE_LIMIT (256ull << 20)

/* Binary search for the largest message a fresh socketpair of the transport's type takes:
 * a message over the limit fails at once with EMSGSIZE, before anything is allocated. */
int64_t ipc_largest_message(unsigned transport, struct ipc_error *e) {
  memset(e, 0, sizeof *e);
  const struct ipc_transport *t = ipc_transport_at(transport);
  if (t == NULL) return ipc_fail(e, IPC_PROTOCOL, "no such transport");
  if (t->socket_type != SOCK_DGRAM && t->socket_type != SOCK_SEQPACKET) return 0;
  int sv[2];
  if (socketpair(AF_UNIX, t->socket_type | SOCK_CLOEXEC, 0, sv) != 0) return ipc_fail_errnum(e, errno, "socketpair");
  /* never written: every page reads as the zero page, so this costs no memory */
  void *buf = mmap(NULL, PROBE_LIMIT, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  int64_t result = -1;
  if (buf == MAP_FAILED) {
    ipc_fail_errnum(e, errno, "mmap");
    goto out;
  }
  uint64_t lo = IPC_MIN_MESSAGE, hi = PROBE_LIMIT;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo + 1) / 2;
    ssize_t n = send(sv[0], buf, mid, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n == (ssize_t)mid) {
      char drop;
      if (recv(sv[1], &drop, 1, MSG_TRUNC) < 0) {
        ipc_fail_errnum(e, errno, "recv");
        goto out;
      }
      lo = mid;
    } else if (n < 0 && (errno == EMSGSIZE || errno == ENOBUFS || errno == ENOMEM || errno == EAGAIN)) {
      hi = mid - 1;
    } else {
      ipc_fail_errnum(e, n < 0 ? errno : EIO, "send");
      goto out;
    }
  }
  result = (int64_t)lo;
out:
  if (buf != MAP_FAILED) munmap(buf, PROBE_LIMIT);
  close(sv[0]);
  close(sv[1]);
  return result;
}

int ipc_unavailable(unsigned transport, char *reason, size_t reason_len) {
  reason[0] = 0;
  if (ipc_transport_at(transport) == &ipc_uring_stream) return ipc_uring_refused(reason, reason_len);
  return 0;
}

uint64_t ipc_footprint(unsigned transport, enum ipc_mode mode, uint64_t message_bytes) {
  const struct ipc_transport *t = ipc_transport_at(transport);
  if (t == NULL) return 0;
  return t->footprint(mode, message_bytes) + (t->build_buffer == NULL ? message_bytes : 0);
}
