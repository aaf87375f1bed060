/* A connection's own queue of bytes, for the uring server: what it copies out of the shared
 * provided buffers when its peer reads slower than it sends, so a slow reader never pins the
 * pool. Chunks never move once written, so a send may read the front chunk while more bytes
 * are appended behind it. Plain data structure: calls nothing of the servers. */
#pragma once
#include <stdint.h>

struct backlog_chunk;

struct backlog {
  struct backlog_chunk *head, *tail;
  uint64_t bytes;
};

/* 0, or -ENOMEM (then nothing was added). */
int backlog_append(struct backlog *b, const void *data, uint32_t len);
/* Puts bytes in front of everything queued (the unsent rest of a send). 0 or -ENOMEM. */
int backlog_prepend(struct backlog *b, const void *data, uint32_t len);
/* The first contiguous bytes: pointer and *len (0 when empty). */
const unsigned char *backlog_front(const struct backlog *b, uint32_t *len);
/* Drops n bytes from the front (n <= the front's length). Call only when no send reads it. */
void backlog_consume(struct backlog *b, uint32_t n);
void backlog_free(struct backlog *b);
