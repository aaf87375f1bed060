/* Verify pattern: every 8-byte word of a file holds a value derived from its offset and a
 * fixed key, so any block size that is a multiple of 8 can be written and checked anywhere. */
#ifndef IOLAB_BENCH_PATTERN_H
#define IOLAB_BENCH_PATTERN_H

#include <stddef.h>
#include <stdint.h>

#define PATTERN_KEY 0x10ab5eed2026ULL

/* offset and len must be multiples of 8. */
void pattern_fill(void *buf, uint64_t offset, size_t len, uint64_t key);
/* -1 when buf holds the pattern for [offset, offset+len); else the file offset of the first
 * byte that differs. */
int64_t pattern_check(const void *buf, uint64_t offset, size_t len, uint64_t key);

/* fio's verify_pattern: the n bytes of p repeated from buf's start. */
void fixed_pattern_fill(void *buf, size_t len, const unsigned char *p, size_t n);
/* -1 when buf holds p repeated from its start; else the file offset (offset: buf's) of the
 * first byte that differs. */
int64_t fixed_pattern_check(const void *buf, uint64_t offset, size_t len, const unsigned char *p, size_t n);

#endif
