#include "pattern.h"

#include <string.h>

static inline uint64_t mix(uint64_t x) {  /* splitmix64's finaliser */
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

void pattern_fill(void *buf, uint64_t offset, size_t len, uint64_t key) {
  uint64_t *w = buf;
  uint64_t first = offset / 8;
  for (size_t i = 0; i < len / 8; i++) w[i] = mix((first + i) ^ key);
}

int64_t pattern_check(const void *buf, uint64_t offset, size_t len, uint64_t key) {
  const uint64_t *w = buf;
  uint64_t first = offset / 8;
  for (size_t i = 0; i < len / 8; i++) {
    uint64_t want = mix((first + i) ^ key);
    if (w[i] != want) {
      const unsigned char *a = (const unsigned char *)&w[i], *b = (const unsigned char *)&want;
      size_t j = 0;
      while (j < 7 && a[j] == b[j]) j++;
      return (int64_t)(offset + i * 8 + j);
    }
  }
  return -1;
}

void fixed_pattern_fill(void *buf, size_t len, const unsigned char *p, size_t n) {
  unsigned char *b = buf;
  for (size_t i = 0; i < len; i++) b[i] = p[i % n];
}

int64_t fixed_pattern_check(const void *buf, uint64_t offset, size_t len, const unsigned char *p, size_t n) {
  const unsigned char *b = buf;
  for (size_t i = 0; i < len; i++)
    if (b[i] != p[i % n]) return (int64_t)(offset + i);
  return -1;
}
