/* The uring server's setup (uring_pool.c): its ring, and the provided-buffer pool the kernel
 * picks recv buffers from (the stream core's: native/stream/stream.h). Calls nothing of the
 * server. */
#pragma once
#include <liburing.h>
#include <stddef.h>

#include "stream/stream.h"

#define POOL_BUF_SIZE 4096u
#define POOL_GROUP 0 /* the buffer group id recvs select from */

struct echo_server_stats;

/* Tries the cheapest setup first: one thread submits (SINGLE_ISSUER) and completions run only
 * when it waits (DEFER_TASKRUN), without the SQ index array (NO_SQARRAY); older kernels refuse
 * those flags with EINVAL and the next try goes without. Then probes the features of
 * echo.h's enum echo_uring_feature that `off` (1 << ECHO_URING_*) leaves on, recording each in
 * st->features, and writes what was accepted into st->setup. *direct_slots: the size of the
 * sparse fixed-file table accepted sockets go into, or 0 (plain fds). 0 or -errno. */
int pool_setup_ring(struct io_uring *ring, unsigned buffers, unsigned off, struct echo_server_stats *st,
                    unsigned *direct_slots);
/* Registers `count` buffers of POOL_BUF_SIZE with the ring as the stream core's pool, every one
 * of them in it, having probed IOU_PBUF_RING_INC on the way (st->features). 0 or -errno
 * (st->syscall). */
int pool_setup(struct io_uring *ring, struct stream_pool *p, unsigned count, unsigned off,
               struct echo_server_stats *st);
/* Unregisters the pool and frees its memory (none when p->mem was set to NULL: the kernel may
 * still write there). */
void pool_teardown(struct io_uring *ring, struct stream_pool *p);
