/* The uring server's ring and provided-buffer pool (see uring_pool.h). */
#include "uring_pool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int pool_setup_ring(struct io_uring *ring, unsigned buffers, char *setup, size_t setup_len) {
  static const struct { unsigned flags; const char *name; } tries[] = {
    { IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN, "SINGLE_ISSUER|DEFER_TASKRUN" },
    { IORING_SETUP_COOP_TASKRUN, "COOP_TASKRUN" },
    { 0, "plain" },
  };
  int ret = -EINVAL;
  for (unsigned i = 0; i < sizeof(tries) / sizeof(tries[0]); i++) {
    struct io_uring_params p;
    memset(&p, 0, sizeof(p));
    p.flags = tries[i].flags | IORING_SETUP_CQSIZE;
    p.cq_entries = 16384;
    ret = io_uring_queue_init_params(2048, ring, &p);
    if (ret == 0) {
      snprintf(setup, setup_len, "%s, %u x %u B provided buffers", tries[i].name, buffers, POOL_BUF_SIZE);
      return 0;
    }
    if (ret != -EINVAL) return ret;
  }
  return ret;
}

int pool_setup(struct io_uring *ring, struct buf_pool *p, unsigned count, const char **syscall) {
  memset(p, 0, sizeof(*p));
  p->count = count;
  p->br_bytes = count * sizeof(struct io_uring_buf);
  void *mem = mmap(NULL, p->br_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    *syscall = "mmap";
    return -errno;
  }
  p->br = mem;
  io_uring_buf_ring_init(p->br);
  struct io_uring_buf_reg reg;
  memset(&reg, 0, sizeof(reg));
  reg.ring_addr = (uint64_t)(uintptr_t)p->br;
  reg.ring_entries = count;
  reg.bgid = POOL_GROUP;
  int ret = io_uring_register_buf_ring(ring, &reg, 0);
  if (ret < 0) {
    *syscall = "io_uring_register_buf_ring";
    munmap(p->br, p->br_bytes);
    p->br = NULL;
    return ret;
  }
  p->bufs = malloc((size_t)count * POOL_BUF_SIZE);
  if (!p->bufs) {
    *syscall = "malloc";
    return -ENOMEM;
  }
  for (unsigned i = 0; i < count; i++)
    io_uring_buf_ring_add(p->br, pool_addr(p, i), POOL_BUF_SIZE, (unsigned short)i,
                          io_uring_buf_ring_mask(count), (int)i);
  io_uring_buf_ring_advance(p->br, (int)count);
  return 0;
}

/* After the ring has gone quiet (or is about to be torn down). */
void pool_teardown(struct io_uring *ring, struct buf_pool *p) {
  if (p->br) {
    io_uring_unregister_buf_ring(ring, POOL_GROUP);
    munmap(p->br, p->br_bytes);
  }
  free(p->bufs);
  memset(p, 0, sizeof(*p));
}
