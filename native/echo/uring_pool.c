/* The uring server's ring, its probed features, and the provided-buffer pool (see uring_pool.h). */
#include "uring_pool.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "echo.h"

/* Newer than liburing 2.3's headers: values from the kernel's include/uapi/linux/io_uring.h. */
#ifndef IORING_SETUP_NO_SQARRAY
#define IORING_SETUP_NO_SQARRAY (1U << 16)
#endif
#ifndef IORING_FEAT_RECVSEND_BUNDLE
#define IORING_FEAT_RECVSEND_BUNDLE (1U << 14)
#endif
#ifndef IOU_PBUF_RING_INC
#define IOU_PBUF_RING_INC 2
#endif

const char *echo_uring_feature_name(unsigned feature) {
  static const char *const names[ECHO_URING_NFEATURES] = {
    "noSqArray", "registeredRingFd", "directDescriptors", "recvBundle", "incrementalBuffers",
  };
  return feature < ECHO_URING_NFEATURES ? names[feature] : NULL;
}

static void feature(struct echo_server_stats *st, unsigned f, int state, int err) {
  st->features[f].state = state;
  st->features[f].err = err;
}

/* io_uring_queue_init_params by hand: liburing 2.3 fills the SQ index array unconditionally,
 * which under NO_SQARRAY (sq_off.array 0) would write over the ring's head and tail. */
static int init_ring(struct io_uring *ring, unsigned entries, struct io_uring_params *p) {
  int fd = (int)syscall(__NR_io_uring_setup, entries, p);
  if (fd < 0) return -errno;
  int ret = io_uring_queue_mmap(fd, p, ring);
  if (ret < 0) {
    close(fd);
    return ret;
  }
  if (!(p->flags & IORING_SETUP_NO_SQARRAY))
    for (unsigned i = 0; i < ring->sq.ring_entries; i++) ring->sq.array[i] = i;
  ring->features = p->features;
  return 0;
}

/* The fixed-file table: as many slots as the process may have fds (what plain fds would allow;
 * the kernel refuses more than RLIMIT_NOFILE), capped so a huge limit costs no huge table. */
static unsigned direct_table_size(void) {
  uint64_t soft = echo_open_file_limit(NULL);
  if (soft < 16) soft = 16;
  return soft > (1u << 18) ? (1u << 18) : (unsigned)soft;
}

int pool_setup_ring(struct io_uring *ring, unsigned buffers, unsigned off, struct echo_server_stats *st,
                    unsigned *direct_slots) {
  static const struct { unsigned flags; const char *name; } tries[] = {
    { IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN, "SINGLE_ISSUER|DEFER_TASKRUN" },
    { IORING_SETUP_COOP_TASKRUN, "COOP_TASKRUN" },
    { 0, "plain" },
  };
  int ret = -EINVAL;
  unsigned flags = 0, i;
  bool sqarray_off = off & (1u << ECHO_URING_NO_SQARRAY);
  *direct_slots = 0;
  for (i = 0; i < sizeof(tries) / sizeof(tries[0]); i++) {
    for (int with_nosq = sqarray_off ? 0 : 1; with_nosq >= 0; with_nosq--) {
      struct io_uring_params p;
      memset(&p, 0, sizeof(p));
      flags = p.flags = tries[i].flags | IORING_SETUP_CQSIZE | (with_nosq ? IORING_SETUP_NO_SQARRAY : 0);
      p.cq_entries = 16384;
      ret = init_ring(ring, 2048, &p);
      if (ret == 0) break;
      if (ret != -EINVAL) return ret;
      if (with_nosq) feature(st, ECHO_URING_NO_SQARRAY, ECHO_FEATURE_REFUSED, EINVAL);
    }
    if (ret == 0) break;
  }
  if (ret < 0) return ret;
  if (flags & IORING_SETUP_NO_SQARRAY) feature(st, ECHO_URING_NO_SQARRAY, ECHO_FEATURE_ACCEPTED, 0);
  else if (sqarray_off) feature(st, ECHO_URING_NO_SQARRAY, ECHO_FEATURE_OFF, 0);

  /* io_uring_enter then takes the ring's index instead of looking its fd up each call. */
  if (off & (1u << ECHO_URING_RING_FD)) {
    feature(st, ECHO_URING_RING_FD, ECHO_FEATURE_OFF, 0);
  } else {
    int r = io_uring_register_ring_fd(ring);
    feature(st, ECHO_URING_RING_FD, r == 1 ? ECHO_FEATURE_ACCEPTED : ECHO_FEATURE_REFUSED, r < 0 ? -r : 0);
  }

  /* Sparse registration came with IORING_FILE_INDEX_ALLOC (5.19): one probe for both. */
  if (off & (1u << ECHO_URING_DIRECT)) {
    feature(st, ECHO_URING_DIRECT, ECHO_FEATURE_OFF, 0);
  } else {
    unsigned slots = direct_table_size();
    int r = io_uring_register_files_sparse(ring, slots);
    feature(st, ECHO_URING_DIRECT, r == 0 ? ECHO_FEATURE_ACCEPTED : ECHO_FEATURE_REFUSED, r < 0 ? -r : 0);
    if (r == 0) *direct_slots = slots;
  }

  /* Probed and reported; the server does not use them (docs/echo.md says why). */
  if (off & (1u << ECHO_URING_BUNDLE)) feature(st, ECHO_URING_BUNDLE, ECHO_FEATURE_OFF, 0);
  else if (ring->features & IORING_FEAT_RECVSEND_BUNDLE) feature(st, ECHO_URING_BUNDLE, ECHO_FEATURE_UNUSED, 0);
  else feature(st, ECHO_URING_BUNDLE, ECHO_FEATURE_REFUSED, 0);  /* no flag: nothing was asked */

  snprintf(st->setup, sizeof(st->setup), "%s%s%s%s, %u x %u B provided buffers", tries[i].name,
           (flags & IORING_SETUP_NO_SQARRAY) ? "|NO_SQARRAY" : "",
           st->features[ECHO_URING_RING_FD].state == ECHO_FEATURE_ACCEPTED ? ", registered ring fd" : "",
           *direct_slots ? ", direct descriptors" : "", buffers, POOL_BUF_SIZE);
  return 0;
}

int pool_setup(struct io_uring *ring, struct stream_pool *p, unsigned count, unsigned off,
               struct echo_server_stats *st) {
  memset(p, 0, sizeof(*p));
  unsigned char *mem = malloc((size_t)count * POOL_BUF_SIZE);
  if (!mem) {
    st->syscall = "malloc";
    return -ENOMEM;
  }
  /* Incremental consumption is probed by registering an INC ring and unregistering it. */
  if (off & (1u << ECHO_URING_PBUF_INC)) {
    feature(st, ECHO_URING_PBUF_INC, ECHO_FEATURE_OFF, 0);
  } else {
    const char *call = NULL;
    int r = stream_pool_register(ring, p, mem, count, POOL_BUF_SIZE, POOL_GROUP, IOU_PBUF_RING_INC, &call);
    if (r == 0) stream_pool_unregister(ring, p);
    feature(st, ECHO_URING_PBUF_INC, r == 0 ? ECHO_FEATURE_UNUSED : ECHO_FEATURE_REFUSED, r < 0 ? -r : 0);
  }
  int ret = stream_pool_register(ring, p, mem, count, POOL_BUF_SIZE, POOL_GROUP, 0, &st->syscall);
  if (ret < 0) {
    free(mem);
    memset(p, 0, sizeof(*p));
  }
  return ret;
}

/* After the ring has gone quiet (or is about to be torn down). */
void pool_teardown(struct io_uring *ring, struct stream_pool *p) {
  stream_pool_unregister(ring, p);
  free(p->mem);
  memset(p, 0, sizeof(*p));
}
