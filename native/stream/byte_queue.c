/* A chunked byte queue (see byte_queue.h). */
#include "stream/byte_queue.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_CAP 16384u

struct byte_queue_chunk {
  struct byte_queue_chunk *next;
  uint32_t off, used, cap; /* queued bytes: data[off, used) */
  unsigned char data[];
};

static struct byte_queue_chunk *new_chunk(uint32_t len) {
  uint32_t cap = len > CHUNK_CAP ? len : CHUNK_CAP;
  struct byte_queue_chunk *c = malloc(sizeof(*c) + cap);
  if (!c) return NULL;
  c->next = NULL;
  c->off = c->used = 0;
  c->cap = cap;
  return c;
}

static int plain_copy(void *to, const void *from, size_t n) {
  memcpy(to, from, n);
  return 0;
}

int byte_queue_append(struct byte_queue *q, const void *data, uint32_t len, byte_queue_copy_fn copy) {
  if (len == 0) return 0;
  if (!copy) copy = plain_copy;
  struct byte_queue_chunk *c = q->tail;
  bool fresh = !c || c->cap - c->used < len;
  if (fresh && !(c = new_chunk(len))) return -ENOMEM;
  int err = copy(c->data + c->used, data, len);
  if (err) {
    if (fresh) free(c);
    return -err;
  }
  c->used += len; /* counted only once every byte is in */
  if (fresh) {
    if (q->tail) q->tail->next = c;
    else q->head = c;
    q->tail = c;
  }
  q->bytes += len;
  return 0;
}

int byte_queue_prepend(struct byte_queue *q, const void *data, uint32_t len) {
  if (len == 0) return 0;
  struct byte_queue_chunk *c = new_chunk(len);
  if (!c) return -ENOMEM;
  memcpy(c->data, data, len);
  c->used = len;
  c->next = q->head;
  q->head = c;
  if (!q->tail) q->tail = c;
  q->bytes += len;
  return 0;
}

const unsigned char *byte_queue_front(const struct byte_queue *q, uint32_t *len) {
  if (!q->head) {
    *len = 0;
    return NULL;
  }
  *len = q->head->used - q->head->off;
  return q->head->data + q->head->off;
}

void byte_queue_consume(struct byte_queue *q, uint32_t n) {
  struct byte_queue_chunk *c = q->head;
  if (!c) return;
  c->off += n;
  q->bytes -= n;
  if (c->off < c->used) return;
  q->head = c->next;
  if (!q->head) q->tail = NULL;
  free(c);
}

void byte_queue_free(struct byte_queue *q) {
  while (q->head) {
    struct byte_queue_chunk *next = q->head->next;
    free(q->head);
    q->head = next;
  }
  q->tail = NULL;
  q->bytes = 0;
}
