/* A stream's own queue of bytes to send (the stream core's send side, stream.h): what it copies
 * out of the shared provided buffers when a send is ahead of them or the peer reads slower than
 * it sends, so a slow reader never pins the pool, and the bytes an owner hands over. Chunks never
 * move once written, so a send may read the front chunk while more bytes are appended behind it.
 * Plain data structure. */
#pragma once
#include <stddef.h>
#include <stdint.h>

struct byte_queue_chunk;

struct byte_queue {
  struct byte_queue_chunk *head, *tail;
  uint64_t bytes;
};

/* How bytes get in: memcpy's shape; 0, or a positive errno (then nothing was added). The
 * owner's own copy lets it refuse memory that would fault (the Ring's views of a mapping). */
typedef int (*byte_queue_copy_fn)(void *to, const void *from, size_t n);

/* Appends len bytes; copy NULL is memcpy. 0, -ENOMEM or the copy's -errno; nothing was added
 * unless 0. A len larger than a chunk gets one chunk of its own, so it goes out as one send. */
int byte_queue_append(struct byte_queue *q, const void *data, uint32_t len, byte_queue_copy_fn copy);
/* Puts bytes in front of everything queued (the unsent rest of a send). 0 or -ENOMEM. */
int byte_queue_prepend(struct byte_queue *q, const void *data, uint32_t len);
/* The first contiguous bytes: pointer and *len (0 when empty). */
const unsigned char *byte_queue_front(const struct byte_queue *q, uint32_t *len);
/* Drops n bytes from the front (n <= the front's length). Call only when no send reads them. */
void byte_queue_consume(struct byte_queue *q, uint32_t n);
void byte_queue_free(struct byte_queue *q);
