/* A chunked byte queue (see backlog.h). */
#include "backlog.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_CAP 16384u

struct backlog_chunk {
  struct backlog_chunk *next;
  uint32_t off, used, cap; /* queued bytes: data[off, used) */
  unsigned char data[];
};

static struct backlog_chunk *new_chunk(uint32_t cap) {
  struct backlog_chunk *c = malloc(sizeof(*c) + cap);
  if (!c) return NULL;
  c->next = NULL;
  c->off = c->used = 0;
  c->cap = cap;
  return c;
}

int backlog_append(struct backlog *b, const void *data, uint32_t len) {
  const unsigned char *p = data;
  uint32_t room = b->tail ? b->tail->cap - b->tail->used : 0;
  /* Allocate what the tail cannot hold first, so a failure adds nothing. */
  struct backlog_chunk *first = NULL, *last = NULL;
  for (uint32_t need = len > room ? len - room : 0; need > 0;) {
    struct backlog_chunk *c = new_chunk(CHUNK_CAP);
    if (!c) {
      while (first) {
        struct backlog_chunk *next = first->next;
        free(first);
        first = next;
      }
      return -ENOMEM;
    }
    if (last) last->next = c; else first = c;
    last = c;
    need = need > CHUNK_CAP ? need - CHUNK_CAP : 0;
  }
  uint32_t n = len < room ? len : room;
  if (n) {
    memcpy(b->tail->data + b->tail->used, p, n);
    b->tail->used += n;
  }
  for (struct backlog_chunk *c = first; c; c = c->next) {
    uint32_t m = len - n < c->cap ? len - n : c->cap;
    memcpy(c->data, p + n, m);
    c->used = m;
    n += m;
  }
  if (first) {
    if (b->tail) b->tail->next = first; else b->head = first;
    b->tail = last;
  }
  b->bytes += len;
  return 0;
}

int backlog_prepend(struct backlog *b, const void *data, uint32_t len) {
  if (len == 0) return 0;
  struct backlog_chunk *c = new_chunk(len > CHUNK_CAP ? len : CHUNK_CAP);
  if (!c) return -ENOMEM;
  memcpy(c->data, data, len);
  c->used = len;
  c->next = b->head;
  b->head = c;
  if (!b->tail) b->tail = c;
  b->bytes += len;
  return 0;
}

const unsigned char *backlog_front(const struct backlog *b, uint32_t *len) {
  if (!b->head) {
    *len = 0;
    return NULL;
  }
  *len = b->head->used - b->head->off;
  return b->head->data + b->head->off;
}

void backlog_consume(struct backlog *b, uint32_t n) {
  struct backlog_chunk *c = b->head;
  if (!c) return;
  c->off += n;
  b->bytes -= n;
  if (c->off < c->used) return;
  b->head = c->next;
  if (!b->head) b->tail = NULL;
  free(c);
}

void backlog_free(struct backlog *b) {
  while (b->head) {
    struct backlog_chunk *next = b->head->next;
    free(b->head);
    b->head = next;
  }
  b->tail = NULL;
  b->bytes = 0;
}
