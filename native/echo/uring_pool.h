/* The uring server's setup (uring_pool.c): its ring, and the provided-buffer pool the kernel
 * picks recv buffers from (a buffer ring set up by hand: mmap + io_uring_buf_ring_init +
 * io_uring_register_buf_ring, liburing 2.3). Calls nothing of the server. */
#pragma once
#include <liburing.h>
#include <stddef.h>

#define POOL_BUF_SIZE 4096u
#define POOL_GROUP 0 /* the buffer group id recvs select from */

struct buf_pool {
  struct io_uring_buf_ring *br;
  size_t br_bytes;
  unsigned char *bufs;
  unsigned count; /* a power of two, <= 32768 */
};

struct echo_server_stats;

/* Tries the cheapest setup first: one thread submits (SINGLE_ISSUER) and completions run only
 * when it waits (DEFER_TASKRUN), without the SQ index array (NO_SQARRAY); older kernels refuse
 * those flags with EINVAL and the next try goes without. Then probes the features of
 * echo.h's enum echo_uring_feature that `off` (1 << ECHO_URING_*) leaves on, recording each in
 * st->features, and writes what was accepted into st->setup. *direct_slots: the size of the
 * sparse fixed-file table accepted sockets go into, or 0 (plain fds). 0 or -errno. */
int pool_setup_ring(struct io_uring *ring, unsigned buffers, unsigned off, struct echo_server_stats *st,
                    unsigned *direct_slots);
/* Registers `count` buffers with the ring, every one of them in it, having probed
 * IOU_PBUF_RING_INC on the way (st->features). 0 or -errno (st->syscall). */
int pool_setup(struct io_uring *ring, struct buf_pool *p, unsigned count, unsigned off,
               struct echo_server_stats *st);
void pool_teardown(struct io_uring *ring, struct buf_pool *p);

static inline void *pool_addr(const struct buf_pool *p, unsigned bid) {
  return p->bufs + (size_t)bid * POOL_BUF_SIZE;
}

/* Gives buffer bid back to the kernel. */
static inline void pool_return(struct buf_pool *p, unsigned bid) {
  io_uring_buf_ring_add(p->br, pool_addr(p, bid), POOL_BUF_SIZE, (unsigned short)bid,
                        io_uring_buf_ring_mask(p->count), 0);
  io_uring_buf_ring_advance(p->br, 1);
}
