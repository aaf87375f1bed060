#include "message.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "transport.h"

#define STAMP_MIX 0x5ca1ab1e00000000ull
#define TAIL_PLACE 0xffffffull

static unsigned char ref_page[IPC_PAGE];
static pthread_once_t ref_once = PTHREAD_ONCE_INIT;

static void ref_init(void) {
  uint64_t x = 0x10ab5eed2026ull;
  for (size_t i = 0; i < IPC_PAGE; i += 8) {
    /* splitmix64: every byte of the page differs from its neighbours */
    uint64_t z = (x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    memcpy(ref_page + i, &z, 8);
  }
}

static const unsigned char *ref(void) {
  pthread_once(&ref_once, ref_init);
  return ref_page;
}

static inline uint64_t stamp_word(uint64_t seq, uint64_t place) { return ((seq << 24) | place) ^ STAMP_MIX; }

/* Page p starts with a stamp when the stamp fits before the tail word (page 0 always). */
static inline int page_stamped(size_t len, size_t p) { return p == 0 || p * IPC_PAGE + 16 <= len; }
static inline size_t stamped_pages(size_t len) { return len < 16 ? 1 : (len - 16) / IPC_PAGE + 1; }
static inline int has_tail(size_t len) { return len >= 16; }
static inline size_t pages_of(size_t len) { return (len + IPC_PAGE - 1) / IPC_PAGE; }

void ipc_pattern_fill(void *buf, size_t len) {
  const unsigned char *r = ref();
  unsigned char *b = buf;
  for (size_t off = 0; off < len; off += IPC_PAGE) {
    size_t n = len - off < IPC_PAGE ? len - off : IPC_PAGE;
    memcpy(b + off, r, n);
  }
}

void ipc_stamp(void *buf, size_t len, uint64_t seq) {
  unsigned char *b = buf;
  size_t n = stamped_pages(len);
  for (size_t p = 0; p < n; p++) {
    uint64_t w = stamp_word(seq, p);
    memcpy(b + p * IPC_PAGE, &w, 8);
  }
  if (has_tail(len)) {
    uint64_t w = stamp_word(seq, TAIL_PLACE);
    memcpy(b + len - 8, &w, 8);
  }
}

/* The bytes compared in full for message seq: [*start, *end). */
static void compared_range(size_t len, uint64_t seq, int full, size_t *start, size_t *end) {
  if (full || len <= IPC_PAGE) {
    *start = 0;
    *end = len;
    return;
  }
  size_t q = (size_t)(seq % pages_of(len));
  *start = q * IPC_PAGE;
  *end = *start + IPC_PAGE < len ? *start + IPC_PAGE : len;
}

size_t ipc_fault_offset(size_t len, uint64_t seq) {
  size_t start, end;
  compared_range(len, seq, 0, &start, &end);
  return start + (end - start) / 2;
}

/* The byte message seq should hold at off. */
static unsigned char expected_byte(size_t len, uint64_t seq, size_t off) {
  size_t p = off / IPC_PAGE, in = off % IPC_PAGE;
  uint64_t w;
  if (has_tail(len) && off >= len - 8) {
    w = stamp_word(seq, TAIL_PLACE);
    return ((const unsigned char *)&w)[off - (len - 8)];
  }
  if (in < 8 && page_stamped(len, p)) {
    w = stamp_word(seq, p);
    return ((const unsigned char *)&w)[in];
  }
  return ref()[in];
}

static int mismatch(const unsigned char *b, size_t len, uint64_t seq, size_t from, size_t to,
                    const char *transport, struct ipc_error *e, const char *what) {
  for (size_t off = from; off < to; off++) {
    unsigned char want = expected_byte(len, seq, off);
    if (b[off] != want)
      return ipc_fail(e, IPC_CHECK,
                      "%s delivered wrong bytes: message %llu (%zu bytes) differs at byte %zu%s: "
                      "expected 0x%02x, got 0x%02x",
                      transport, (unsigned long long)seq, len, off, what, want, b[off]);
  }
  return ipc_fail(e, IPC_CHECK, "%s delivered wrong bytes: message %llu differs", transport,
                  (unsigned long long)seq);
}

static int check_stamp(const unsigned char *b, size_t len, uint64_t seq, size_t off, uint64_t place,
                       const char *transport, struct ipc_error *e) {
  uint64_t got, want = stamp_word(seq, place);
  memcpy(&got, b + off, 8);
  if (got == want) return 0;
  uint64_t plain = got ^ STAMP_MIX;
  char what[80] = "";
  if ((plain & 0xffffff) == place && (plain >> 24) < seq) /* a slot or page left from before */
    snprintf(what, sizeof what, " (the stamp there is message %llu's)", (unsigned long long)(plain >> 24));
  return mismatch(b, len, seq, off, off + 8, transport, e, what);
}

int ipc_check(const void *buf, size_t len, uint64_t seq, int full, const char *transport,
              struct ipc_error *e) {
  const unsigned char *b = buf;
  size_t n = stamped_pages(len);
  for (size_t p = 0; p < n; p++)
    if (check_stamp(b, len, seq, p * IPC_PAGE, p, transport, e)) return -1;
  if (has_tail(len) && check_stamp(b, len, seq, len - 8, TAIL_PLACE, transport, e)) return -1;

  const unsigned char *r = ref();
  size_t start, end, body_end = has_tail(len) ? len - 8 : len;
  compared_range(len, seq, full, &start, &end);
  for (size_t page = start; page < end; page += IPC_PAGE) {
    size_t p = page / IPC_PAGE;
    size_t from = page + (page_stamped(len, p) ? 8 : 0);
    size_t to = page + IPC_PAGE < body_end ? page + IPC_PAGE : body_end;
    if (from < to && memcmp(b + from, r + (from - page), to - from) != 0)
      return mismatch(b, len, seq, from, to, transport, e, "");
  }
  return 0;
}
