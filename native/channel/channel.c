/* The shared-memory channel's rings (channel.h has the layout and the ordering rules).
 *
 * The trust rule: the other side can rewrite any byte of the region at any moment. So shared
 * memory is read once, in C: each header field, index and record header is loaded once into a
 * private copy, that copy is validated, and only validated private copies go up to the binding
 * and JS (an offset and a length, never "look at the record yourself"). Seals protect the
 * region's size; nothing protects its contents, so message bytes may change under a reader. */
#include "channel.h"

#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* A spinning loop's hint to the CPU (a hyperthread sibling gets the core meanwhile). */
#if defined(__x86_64__) || defined(__i386__)
#define CPU_RELAX() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define CPU_RELAX() __asm__ __volatile__("yield")
#else
#define CPU_RELAX() ((void)0)
#endif

struct channel_direction {
  _Alignas(64) uint64_t head;         /* bytes published, written by the writer */
  _Alignas(64) uint64_t tail;         /* bytes released, written by the reader */
  _Alignas(64) uint32_t reader_waiting; /* the reader sleeps: wake it when head moves */
  uint32_t writer_waiting;            /* the writer sleeps: wake it when tail moves */
  uint32_t closed;                    /* the writer closed the channel */
};

struct channel_header {
  char magic[8];
  uint32_t version;
  uint32_t header_bytes;
  uint64_t capacity;
  _Alignas(64) struct channel_direction dir[2]; /* [d]: side d writes, side 1-d reads */
};

/* The offsets channel.h and docs/channel.md promise a peer written in another language. */
_Static_assert(offsetof(struct channel_header, capacity) == 16, "capacity at 16");
_Static_assert(offsetof(struct channel_header, dir) == 64, "directions from 64");
_Static_assert(sizeof(struct channel_direction) == 192, "a direction takes 192 bytes");
_Static_assert(offsetof(struct channel_direction, tail) == 64, "tail at +64");
_Static_assert(offsetof(struct channel_direction, reader_waiting) == 128, "flags at +128");
_Static_assert(offsetof(struct channel_direction, closed) == 136, "closed at +136");
_Static_assert(sizeof(struct channel_header) <= CHANNEL_HEADER_BYTES, "the header fits its page");

static uint64_t align8(uint64_t n) { return (n + 7) & ~(uint64_t)7; }

uint64_t channel_region_bytes(uint64_t capacity) { return CHANNEL_HEADER_BYTES + 2 * capacity; }

uint64_t channel_max_message(uint64_t capacity) { return capacity / 2 - CHANNEL_RECORD_HEADER; }

void channel_init(void *region, uint64_t capacity) {
  struct channel_header *h = region;
  memcpy(h->magic, CHANNEL_MAGIC, 8);
  h->version = CHANNEL_VERSION;
  h->header_bytes = CHANNEL_HEADER_BYTES;
  h->capacity = capacity;
}

const char *channel_check(const void *region, uint64_t size, uint64_t *capacity) {
  const struct channel_header *h = region;
  char magic[8];
  if (size < CHANNEL_HEADER_BYTES) return "it is smaller than a channel's header";
  memcpy(magic, h->magic, 8);
  if (memcmp(magic, CHANNEL_MAGIC, 8) != 0) return "it does not start with the channel's magic";
  uint32_t version = __atomic_load_n(&h->version, __ATOMIC_RELAXED);
  uint32_t header_bytes = __atomic_load_n(&h->header_bytes, __ATOMIC_RELAXED);
  if (version != CHANNEL_VERSION || header_bytes != CHANNEL_HEADER_BYTES) return "its version is not this one's";
  /* one load: the copy checked here is the one the caller keeps (a second read could differ) */
  uint64_t c = __atomic_load_n(&h->capacity, __ATOMIC_RELAXED);
  if (c < CHANNEL_MIN_CAPACITY || c > CHANNEL_MAX_CAPACITY || (c & (c - 1)) != 0) return "its capacity is not a power of two in range";
  if (size != channel_region_bytes(c)) return "its size does not match its capacity";
  *capacity = c;
  return NULL;
}

static struct channel_direction *out_dir(struct channel_end *e) { return &e->header->dir[e->side]; }
static struct channel_direction *in_dir(struct channel_end *e) { return &e->header->dir[1 - e->side]; }
static const struct channel_direction *in_dir_const(const struct channel_end *e) { return &e->header->dir[1 - e->side]; }
static unsigned char *ring_of(struct channel_end *e, int side) {
  return e->base + CHANNEL_HEADER_BYTES + (uint64_t)side * e->capacity;
}

/* A tail the reader published: it may only move forward, up to what was written. Anything else
 * is a reader that wrote over the header, and writing on would overwrite unread records. */
static int tail_valid(const struct channel_end *e, uint64_t tail) {
  return tail - e->out_tail_seen <= e->out_head - e->out_tail_seen;
}

const char *channel_attach(struct channel_end *e, void *region, uint64_t capacity, int side, int wake_socket) {
  memset(e, 0, sizeof *e);
  e->header = region;
  e->base = region;
  e->capacity = capacity; /* channel_check's private copy, never the header's again */
  e->side = side;
  e->wake_socket = wake_socket;
  /* A side joins a region the other may have written to already. Each index is loaded once and
   * checked: an unaligned one would put a record header across the queue's end (past the
   * mapping for the second queue), one more than capacity ahead would overwrite unread records. */
  uint64_t out_head = __atomic_load_n(&out_dir(e)->head, __ATOMIC_ACQUIRE);
  uint64_t out_tail = __atomic_load_n(&out_dir(e)->tail, __ATOMIC_ACQUIRE);
  uint64_t in_tail = __atomic_load_n(&in_dir(e)->tail, __ATOMIC_ACQUIRE);
  if ((out_head | out_tail | in_tail) & 7) return "a queue index is not a multiple of 8";
  if (out_head - out_tail > capacity) return "a queue holds more than its capacity";
  e->out_head = e->out_published = out_head;
  e->out_tail_seen = out_tail;
  e->in_tail = e->in_head_seen = in_tail;
  return NULL;
}

static void wake(struct channel_end *e) {
  /* Never blocks: a full socket already holds wake-ups the other side has not read; a closed
   * one means it is gone, which its own end of the socket tells it. */
  ssize_t n = send(e->wake_socket, "w", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
  (void)n;
}

void channel_wake(struct channel_end *e) { wake(e); }

/* After publishing an index: the other side may have gone to sleep waiting for it. */
static void wake_if_waiting(struct channel_end *e, uint32_t *flag) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  if (__atomic_load_n(flag, __ATOMIC_RELAXED) && __atomic_exchange_n(flag, 0, __ATOMIC_RELAXED)) wake(e);
}

/* The bytes a message of `total` needs at head: its record, plus the padding to the ring's
 * end when the record would not fit before it. */
static uint64_t room_needed(const struct channel_end *e, uint64_t total) {
  uint64_t record = CHANNEL_RECORD_HEADER + align8(total);
  uint64_t to_end = e->capacity - (e->out_head & (e->capacity - 1));
  return record <= to_end ? record : to_end + record;
}

static int has_room(struct channel_end *e, uint64_t need, int look_again) {
  if (e->capacity - (e->out_head - e->out_tail_seen) >= need) return 1;
  if (!look_again || e->corrupt) return 0;
  uint64_t tail = __atomic_load_n(&out_dir(e)->tail, __ATOMIC_ACQUIRE);
  if (!tail_valid(e, tail)) {
    e->corrupt = 1;
    return 0;
  }
  e->out_tail_seen = tail;
  return e->capacity - (e->out_head - e->out_tail_seen) >= need;
}

static void put_record_header(unsigned char *at, uint32_t length, uint32_t kind) {
  memcpy(at, &length, 4);
  memcpy(at + 4, &kind, 4);
}

int channel_put(struct channel_end *e, const struct iovec *iov, int n, uint64_t total, channel_copy_fn copy) {
  /* The closed flag, not the socket's end, which this side hears only when it waits: a message
   * put in after it would be acknowledged and never read. */
  if (__atomic_load_n(&in_dir(e)->closed, __ATOMIC_ACQUIRE)) return CHANNEL_SEND_PEER_CLOSED;
  uint64_t need = room_needed(e, total);
  if (!has_room(e, need, 1)) return e->corrupt ? CHANNEL_SEND_CORRUPT : 0;
  unsigned char *ring = ring_of(e, e->side);
  uint64_t mask = e->capacity - 1;
  uint64_t record = CHANNEL_RECORD_HEADER + align8(total);
  uint64_t pos = e->out_head;
  if (need != record) { /* pad to the end, start again at 0 */
    uint64_t to_end = e->capacity - (pos & mask);
    put_record_header(ring + (pos & mask), (uint32_t)(to_end - CHANNEL_RECORD_HEADER), CHANNEL_KIND_PADDING);
    pos += to_end;
  }
  unsigned char *at = ring + (pos & mask);
  put_record_header(at, (uint32_t)total, CHANNEL_KIND_MESSAGE);
  at += CHANNEL_RECORD_HEADER;
  for (int i = 0; i < n; i++) {
    if (iov[i].iov_len == 0) continue; /* an empty view's base may be NULL, which memcpy may not take */
    /* nothing is published yet: a view that faults leaves the queue as it was */
    if (copy(at, iov[i].iov_base, iov[i].iov_len) != 0) return CHANNEL_SEND_FAULT;
    at += iov[i].iov_len;
  }
  e->out_head = pos + record;
  return 1;
}

void channel_publish(struct channel_end *e) {
  if (e->out_published == e->out_head) return;
  e->out_published = e->out_head;
  __atomic_store_n(&out_dir(e)->head, e->out_head, __ATOMIC_RELEASE);
  wake_if_waiting(e, &out_dir(e)->reader_waiting);
}

int channel_send(struct channel_end *e, const struct iovec *iov, int n, uint64_t total, channel_copy_fn copy) {
  int sent = channel_put(e, iov, n, total, copy);
  if (sent == 1) channel_publish(e);
  return sent;
}

/* Publishes the reader's tail up to what it has let go of. A writer waiting for room is woken
 * once half the ring is free (or all that was seen of it was read): woken for every message
 * freed, it would write one message per wake-up while the reader, woken as often, reads one. */
static void publish_tail(struct channel_end *e) {
  struct channel_direction *d = in_dir(e);
  if (__atomic_load_n(&d->tail, __ATOMIC_RELAXED) == e->in_tail) return;
  __atomic_store_n(&d->tail, e->in_tail, __ATOMIC_RELEASE);
  if (e->in_head_seen - e->in_tail <= e->capacity / 2) wake_if_waiting(e, &d->writer_waiting);
}

void channel_release(struct channel_end *e) {
  if (e->holding) {
    e->in_tail = e->held_end;
    e->holding = 0;
  }
  publish_tail(e);
}

int channel_take(struct channel_end *e, struct channel_message *out, uint32_t max, uint64_t room) {
  struct channel_direction *d = in_dir(e);
  const unsigned char *ring = ring_of(e, 1 - e->side);
  uint64_t mask = e->capacity - 1;
  if (e->holding) {
    e->in_tail = e->held_end;
    e->holding = 0;
  }
  uint64_t at = e->in_tail; /* the next record: past what this call hands out */
  uint64_t used = 0;
  int taken = 0;
  int result = CHANNEL_EMPTY;
  while ((uint32_t)taken < max) {
    if (at == e->in_head_seen) {
      e->in_head_seen = __atomic_load_n(&d->head, __ATOMIC_ACQUIRE);
      if (at == e->in_head_seen) {
        if (!__atomic_load_n(&d->closed, __ATOMIC_ACQUIRE)) break;
        /* closed after its last publish: read head again, or its last messages would be lost */
        e->in_head_seen = __atomic_load_n(&d->head, __ATOMIC_ACQUIRE);
        if (at == e->in_head_seen) {
          result = CHANNEL_ENDED;
          break;
        }
      }
    }
    uint64_t available = e->in_head_seen - at;
    uint64_t offset = at & mask;
    uint32_t length, kind;
    memcpy(&length, ring + offset, 4);
    memcpy(&kind, ring + offset + 4, 4);
    uint64_t record = CHANNEL_RECORD_HEADER + align8(length);
    /* a record the writer cannot have made: never hand out a view past what it published (the
     * head, checked against the oldest byte not released, can be no more than a queue ahead) */
    if (e->in_head_seen - e->in_tail > e->capacity || record > available || offset + record > e->capacity ||
        (kind != CHANNEL_KIND_MESSAGE && kind != CHANNEL_KIND_PADDING) ||
        (kind == CHANNEL_KIND_PADDING && offset + record != e->capacity)) {
      result = CHANNEL_CORRUPT;
      break;
    }
    if (kind == CHANNEL_KIND_PADDING) {
      at += record;
      if (taken == 0) e->in_tail = at; /* nothing held before it: the padding is free at once */
      continue;
    }
    if (room != 0 && used + align8(length) > room) {
      if (taken == 0) {
        result = CHANNEL_TOO_BIG;
        out[0].length = length;
      }
      break;
    }
    used += align8(length);
    /* the length checked above: the caller never reads it again */
    out[taken].offset = CHANNEL_HEADER_BYTES + (uint64_t)(1 - e->side) * e->capacity + offset + CHANNEL_RECORD_HEADER;
    out[taken].length = length;
    taken++;
    at += record;
  }
  if (taken > 0) {
    e->held_end = at;
    e->holding = 1;
  }
  publish_tail(e);
  return taken > 0 ? taken : result;
}

int channel_prepare_sleep(struct channel_end *e, int want_message, int want_room, uint64_t pending_bytes) {
  struct channel_direction *in = in_dir(e), *out = out_dir(e);
  if (want_message) __atomic_store_n(&in->reader_waiting, 1, __ATOMIC_RELAXED);
  if (want_room) __atomic_store_n(&out->writer_waiting, 1, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  int ready = 0;
  if (want_message && (__atomic_load_n(&in->head, __ATOMIC_ACQUIRE) != e->in_tail ||
                       __atomic_load_n(&in->closed, __ATOMIC_ACQUIRE)))
    ready = 1;
  if (want_room && (has_room(e, room_needed(e, pending_bytes), 1) || e->corrupt)) ready = 1;
  if (__atomic_load_n(&in->closed, __ATOMIC_ACQUIRE)) ready = 1; /* nothing more will come: say so */
  if (ready) channel_woken(e);
  return !ready;
}

static uint64_t monotonic_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

int channel_spin(struct channel_end *e, int want_message, int want_room, uint64_t pending_bytes, uint64_t ns) {
  struct channel_direction *in = in_dir(e);
  uint64_t read_from = e->holding ? e->held_end : e->in_tail;
  uint64_t need = room_needed(e, pending_bytes);
  uint64_t until = monotonic_ns() + ns;
  for (unsigned i = 1;; i++) {
    if (want_message && (__atomic_load_n(&in->head, __ATOMIC_ACQUIRE) != read_from || __atomic_load_n(&in->closed, __ATOMIC_ACQUIRE)))
      return 1;
    if (want_room && (has_room(e, need, 1) || e->corrupt)) return 1;
    if ((i & 31) == 0 && monotonic_ns() >= until) return 0;
    CPU_RELAX();
  }
}

void channel_woken(struct channel_end *e) {
  __atomic_store_n(&in_dir(e)->reader_waiting, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&out_dir(e)->writer_waiting, 0, __ATOMIC_RELAXED);
}

void channel_close(struct channel_end *e) {
  if (e->holding) channel_release(e);
  __atomic_store_n(&out_dir(e)->closed, 1, __ATOMIC_RELEASE);
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  wake(e);
}

int channel_unread(struct channel_end *e) {
  uint64_t from = e->holding ? e->held_end : e->in_tail;
  return __atomic_load_n(&in_dir(e)->head, __ATOMIC_ACQUIRE) != from;
}

int channel_peer_closed(const struct channel_end *e) {
  return (int)__atomic_load_n(&in_dir_const(e)->closed, __ATOMIC_ACQUIRE);
}
