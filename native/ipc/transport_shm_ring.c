/* shm-ring: one shared-memory region (a sealed memfd, passed once with SCM_RIGHTS beside two
 * eventfds) holding a ring of message slots per direction. The sender copies each message
 * into a free slot and publishes it by advancing the ring's head; the receiver reads the
 * message in place and frees the slot by advancing the tail. No byte of a message passes
 * through the kernel.
 *
 * Waiting: spin on the index for PURE_SPIN_NS (a message or a free slot comes within that when
 * both processes have a core: a round trip of a small message is ~0.2 us), then keep checking
 * but yield the CPU between checks up to SPIN_NS (on a busy machine the peer may be waiting
 * for this very core), then set this side's `waiting` flag and sleep in poll() on its
 * eventfd, which also watches the control socket so a dead peer is noticed.
 * The other side writes the eventfd only when it sees the flag set (a full fence on both
 * sides between the flag and the index makes a missed wake-up impossible), so a busy run
 * makes no syscalls at all. The region is a memfd: it has no name, so nothing can be left
 * in /dev/shm however a process ends. */
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "transport.h"

#define PURE_SPIN_NS 2000u
#define SPIN_NS 20000u
#define HEADER_BYTES 4096u
#define REGION_MAGIC 0x52494e47u /* "RING" */
#define RING_BYTES (8u << 20)    /* throughput: up to this much in slots per ring ... */
#define MAX_SLOTS 64u            /* ... and at most this many, at least 1 */

struct ring {
  _Alignas(64) uint64_t head; /* messages published, written by the ring's writer */
  _Alignas(64) uint64_t tail; /* messages consumed, written by the ring's reader */
  _Alignas(64) uint32_t closed;
};

struct region {
  uint32_t magic, slots, rings;
  uint64_t slot_stride, message_bytes;
  struct {
    _Alignas(64) uint32_t flag;
  } waiting[2];        /* [0] the sender sleeps, [1] the receiver sleeps */
  struct ring ring[2]; /* [0] sender -> receiver, [1] receiver -> sender (pingpong) */
};
_Static_assert(sizeof(struct region) <= HEADER_BYTES, "header fits its page");

struct layout {
  uint32_t slots, rings;
  uint64_t stride, bytes;
};

struct shm_state {
  struct region *r;
  unsigned char *slots;
  struct layout l;
  int me;     /* 0 sender, 1 receiver: index into waiting[] */
  int my_efd, peer_efd;
  /* the other side's index as last read: re-read only when it says "full" / "empty", so the
   * two processes do not pull each other's cache line on every message */
  uint64_t out_tail, in_head;
};

static struct layout layout_of(enum ipc_mode mode, uint64_t bytes) {
  struct layout l;
  l.stride = bytes < 4096 ? (bytes + 63) & ~63ull : (bytes + 4095) & ~4095ull;
  l.rings = mode == IPC_PINGPONG ? 2 : 1;
  /* A message larger than half the budget gets one slot: the sender then waits while the
   * receiver checks it, but a second slot of 16 MiB or more, beside the sender's source, pushes
   * the copy out of the L3 cache, and that cost more than the wait (measured: 0.78x against
   * 0.83x memcpy at 16 MiB, 0.85x against 0.98x at 64 MiB; docs/ipc.md). */
  uint64_t fit = RING_BYTES / l.stride;
  l.slots = mode == IPC_PINGPONG ? 1 : (uint32_t)(fit < 1 ? 1 : fit > MAX_SLOTS ? MAX_SLOTS : fit);
  l.bytes = HEADER_BYTES + (uint64_t)l.rings * l.slots * l.stride;
  return l;
}

static uint64_t shm_footprint(enum ipc_mode mode, uint64_t bytes) { return layout_of(mode, bytes).bytes; }

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static struct ring *out_ring(struct shm_state *st) { return &st->r->ring[st->me]; }
static struct ring *in_ring(struct shm_state *st) { return &st->r->ring[1 - st->me]; }
static unsigned char *slot(struct shm_state *st, int ring, uint64_t index) {
  return st->slots + ((uint64_t)ring * st->l.slots + index % st->l.slots) * st->l.stride;
}

enum wait_for { FREE_SLOT, MESSAGE };

static int ready(struct shm_state *st, enum wait_for what) {
  if (what == FREE_SLOT) {
    struct ring *q = out_ring(st);
    if (q->head - st->out_tail < st->l.slots) return 1;
    st->out_tail = __atomic_load_n(&q->tail, __ATOMIC_ACQUIRE);
    return q->head - st->out_tail < st->l.slots;
  }
  struct ring *q = in_ring(st);
  if (st->in_head != q->tail) return 1;
  st->in_head = __atomic_load_n(&q->head, __ATOMIC_ACQUIRE);
  if (st->in_head != q->tail) return 1;
  if (!__atomic_load_n(&q->closed, __ATOMIC_ACQUIRE)) return 0;
  /* closed after its last head: read head again, or the last messages would be lost */
  st->in_head = __atomic_load_n(&q->head, __ATOMIC_ACQUIRE);
  return 1;
}

static void wake_peer(struct shm_state *st) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  if (__atomic_load_n(&st->r->waiting[1 - st->me].flag, __ATOMIC_RELAXED)) {
    uint64_t one = 1;
    ssize_t n = write(st->peer_efd, &one, sizeof one);
    (void)n; /* the counter cannot overflow here; a failed wake-up shows as the peer's wait */
  }
}

static int wait_until(struct ipc_side *s, enum wait_for what) {
  struct shm_state *st = s->state;
  if (ready(st, what)) return 0;
  uint64_t spin_start = ipc_now_ns();
  for (unsigned i = 1;; i++) {
    cpu_relax();
    if (ready(st, what)) return 0;
    if ((i & 127) == 0) {
      uint64_t spent = ipc_now_ns() - spin_start;
      if (spent > SPIN_NS) break;
      /* past a short spin the peer is probably not running: let it have this core */
      if (spent > PURE_SPIN_NS) sched_yield();
    }
  }
  uint32_t *waiting = &st->r->waiting[st->me].flag;
  struct pollfd pfd[2] = {{st->my_efd, POLLIN, 0}, {s->control_fd, POLLIN | POLLRDHUP, 0}};
  int rc = 0;
  for (;;) {
    __atomic_store_n(waiting, 1, __ATOMIC_SEQ_CST);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (ready(st, what)) break;
    if (__atomic_load_n(s->stop, __ATOMIC_RELAXED)) {
      rc = ipc_fail(s->error, IPC_STOPPED, "stopped");
      break;
    }
    int n = poll(pfd, 2, 50);
    if (n < 0 && errno != EINTR) {
      rc = ipc_fail_errno(s, "poll");
      break;
    }
    if (n > 0 && (pfd[0].revents & (POLLERR | POLLNVAL))) {
      rc = ipc_fail(s->error, IPC_PROTOCOL, "shm-ring: the eventfd failed");
      break;
    }
    if (n > 0 && (pfd[0].revents & POLLIN)) {
      uint64_t count;
      ssize_t got = read(st->my_efd, &count, sizeof count);
      (void)got;
    }
    if (n > 0 && pfd[1].revents) {
      __atomic_thread_fence(__ATOMIC_SEQ_CST);
      if (ready(st, what)) break; /* the sender closes the ring before it sends END */
      rc = ipc_fail(s->error, IPC_PEER_GONE, "the other process stopped during the run");
      break;
    }
  }
  __atomic_store_n(waiting, 0, __ATOMIC_RELAXED);
  return rc;
}

static int map_region(struct ipc_side *s, int fd) {
  struct shm_state *st = s->state;
  void *p = mmap(NULL, st->l.bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (p == MAP_FAILED) return ipc_fail_errno(s, "mmap");
  st->r = p;
  st->slots = (unsigned char *)p + HEADER_BYTES;
  return 0;
}

static int alloc_state(struct ipc_side *s) {
  struct shm_state *st = calloc(1, sizeof *st);
  if (st == NULL) return ipc_fail_errnum(s->error, ENOMEM, "malloc");
  st->l = layout_of(s->mode, s->bytes);
  st->me = s->sender ? 0 : 1;
  s->state = st;
  return 0;
}

static int shm_create(struct ipc_side *s, int *peer, int *npeer) {
  if (alloc_state(s) != 0) return -1;
  struct shm_state *st = s->state;
  int fd = memfd_create("iolab-ipc-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return ipc_fail_errno(s, "memfd_create");
  s->fds[0] = fd;
  if (ftruncate(fd, (off_t)st->l.bytes) != 0) return ipc_fail_errno(s, "ftruncate");
  if (fallocate(fd, 0, 0, (off_t)st->l.bytes) != 0) return ipc_fail_errno(s, "fallocate");
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) return ipc_fail_errno(s, "fcntl");
  for (int i = 1; i <= 2; i++) {
    s->fds[i] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (s->fds[i] < 0) return ipc_fail_errno(s, "eventfd");
  }
  if (map_region(s, fd) != 0) return -1;
  struct region *r = st->r;
  r->magic = REGION_MAGIC;
  r->slots = st->l.slots;
  r->rings = st->l.rings;
  r->slot_stride = st->l.stride;
  r->message_bytes = s->bytes;
  st->my_efd = s->fds[2];   /* the receiver writes it when the sender waits */
  st->peer_efd = s->fds[1]; /* the sender writes it when the receiver waits */
  /* the receiver gets copies (the caller closes them once sent); this side keeps its own */
  for (*npeer = 0; *npeer < 3; (*npeer)++) {
    peer[*npeer] = fcntl(s->fds[*npeer], F_DUPFD_CLOEXEC, 0);
    if (peer[*npeer] < 0) return ipc_fail_errno(s, "fcntl");
  }
  return 0;
}

static int shm_attach(struct ipc_side *s) {
  if (alloc_state(s) != 0) return -1;
  struct shm_state *st = s->state;
  struct stat sb;
  if (s->fds[0] < 0 || s->fds[2] < 0) return ipc_fail(s->error, IPC_PROTOCOL, "shm-ring: the region or its eventfds did not arrive");
  if (fstat(s->fds[0], &sb) != 0) return ipc_fail_errno(s, "fstat");
  int seals = fcntl(s->fds[0], F_GET_SEALS);
  if (seals < 0) return ipc_fail_errno(s, "fcntl");
  /* a region its creator could shrink under the mapping would kill this process (SIGBUS) */
  if (!(seals & F_SEAL_SHRINK) || (uint64_t)sb.st_size != st->l.bytes)
    return ipc_fail(s->error, IPC_PROTOCOL, "shm-ring: the region is not sealed at the expected size");
  if (map_region(s, s->fds[0]) != 0) return -1;
  struct region *r = st->r;
  if (r->magic != REGION_MAGIC || r->slots != st->l.slots || r->slot_stride != st->l.stride || r->message_bytes != s->bytes)
    return ipc_fail(s->error, IPC_PROTOCOL, "shm-ring: the region's layout is not the one agreed");
  st->my_efd = s->fds[1];
  st->peer_efd = s->fds[2];
  return 0;
}

static int shm_put(struct ipc_side *s, const void *msg) {
  struct shm_state *st = s->state;
  if (wait_until(s, FREE_SLOT) != 0) return -1;
  struct ring *q = out_ring(st);
  memcpy(slot(st, st->me, q->head), msg, s->bytes);
  __atomic_store_n(&q->head, q->head + 1, __ATOMIC_RELEASE);
  wake_peer(st);
  return 0;
}

static int shm_get(struct ipc_side *s, const void **msg) {
  struct shm_state *st = s->state;
  if (wait_until(s, MESSAGE) != 0) return -1;
  struct ring *q = in_ring(st);
  if (st->in_head == q->tail) return 0; /* closed and drained */
  *msg = slot(st, 1 - st->me, q->tail);
  return 1;
}

static int shm_release(struct ipc_side *s) {
  struct shm_state *st = s->state;
  struct ring *q = in_ring(st);
  __atomic_store_n(&q->tail, q->tail + 1, __ATOMIC_RELEASE);
  wake_peer(st);
  return 0;
}

static int shm_finish(struct ipc_side *s) {
  struct shm_state *st = s->state;
  __atomic_store_n(&out_ring(st)->closed, 1, __ATOMIC_RELEASE);
  wake_peer(st);
  return 0;
}

static void shm_destroy(struct ipc_side *s) {
  struct shm_state *st = s->state;
  if (st != NULL) {
    if (st->r != NULL) munmap(st->r, st->l.bytes);
    free(st);
    s->state = NULL;
  }
  ipc_close_fds(s);
}

const struct ipc_transport ipc_shm_ring = {
    .name = "shm-ring", .footprint = shm_footprint, .create = shm_create, .attach = shm_attach,
    .put = shm_put, .get = shm_get, .release = shm_release, .finish = shm_finish, .destroy = shm_destroy};
