/* The shared-memory channel: two byte rings in one sealed memfd, one per direction, each with
 * one writer (the side that sends) and one reader. Plain bytes at fixed offsets, so a peer in C
 * or Python can take part (docs/channel.md gives the layout and the rules a peer keeps).
 *
 *   region:  [ header: 4096 bytes ][ ring of side 0 -> 1: capacity ][ ring of side 1 -> 0: capacity ]
 *   header:  0 magic "iolabch1", 8 version (u32), 12 header bytes (u32), 16 capacity (u64),
 *            then one block per direction d at 64 + 192 * d:
 *              +0 head (u64): bytes the writer has published    +64 tail (u64): bytes the reader has released
 *              +128 reader_waiting (u32)  +132 writer_waiting (u32)  +136 closed (u32)
 *   record:  length (u32), kind (u32: 0 message, 1 padding to the ring's end), then the payload,
 *            padded to 8 bytes. A record never wraps: where it would not fit before the end,
 *            a padding record fills the rest and the message starts at offset 0.
 *
 * head and tail only grow (the byte positions, taken modulo the capacity, a power of two). The
 * writer copies a record in, then publishes head with release order; the reader reads head with
 * acquire order, reads the record, then publishes tail with release order. Waking: a side that
 * is about to sleep sets its waiting flag, issues a full fence and looks again; a side that
 * publishes issues a full fence and, when it finds the other's flag set, clears it and sends
 * one byte on the Unix socket the two share. One of the two always sees the other, so no
 * wake-up is lost, and a busy channel makes no syscalls. (The socket, not an eventfd: a wake
 * of an io_uring read by an eventfd write can be lost, docs/channel.md.) */
#ifndef IOLAB_CHANNEL_H
#define IOLAB_CHANNEL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define CHANNEL_MAGIC "iolabch1"
#define CHANNEL_VERSION 1u
#define CHANNEL_HEADER_BYTES 4096u
#define CHANNEL_RECORD_HEADER 8u
#define CHANNEL_KIND_MESSAGE 0u
#define CHANNEL_KIND_PADDING 1u
#define CHANNEL_MIN_CAPACITY 4096u
#define CHANNEL_MAX_CAPACITY (1u << 30)

struct channel_header; /* channel.c: the layout above, as a struct */

/* One side's view of a mapped region: the indexes it keeps to itself. */
struct channel_end {
  struct channel_header *header;
  unsigned char *base; /* the region */
  uint64_t capacity;
  int side;            /* 0 made the region, 1 joined */
  int wake_socket;     /* this side's end of the socket: a byte sent on it wakes the other side */
  /* writing: our head, and the reader's tail as last read (read again only when full) */
  uint64_t out_head, out_tail_seen;
  /* reading: our tail, the writer's head as last read (read again only when empty), and the
   * end of the message handed out, released when the next one is asked for */
  uint64_t in_tail, in_head_seen, held_end;
  int holding;
  uint64_t out_published; /* the head the reader was last shown (channel_publish) */
  int corrupt; /* the reader published a tail no reader can: sends fail from then on */
};

/* What channel_take found when it hands out nothing. */
enum channel_take_result { CHANNEL_EMPTY = 0, CHANNEL_ENDED = -1, CHANNEL_CORRUPT = -2, CHANNEL_TOO_BIG = -3 };

/* A message handed out: its payload's offset in the region and its length, both checked. */
struct channel_message {
  uint64_t offset;
  uint32_t length;
};

uint64_t channel_region_bytes(uint64_t capacity);
/* The largest message a ring of this capacity carries: half of it, less a record header. */
uint64_t channel_max_message(uint64_t capacity);
/* A fresh region of channel_region_bytes(capacity) bytes, zeroed by the caller (ftruncate). */
void channel_init(void *region, uint64_t capacity);
/* NULL when region (size bytes) holds a channel this code can use, else why not. Reads each
 * header field once; *capacity gets the capacity it checked (the one to attach with). */
const char *channel_check(const void *region, uint64_t size, uint64_t *capacity);
/* NULL, or why the region's indexes are no channel's (an index not a multiple of 8, a queue
 * holding more than capacity). capacity is channel_check's copy. */
const char *channel_attach(struct channel_end *e, void *region, uint64_t capacity, int side, int wake_socket);

/* Copies n bytes from a caller's buffer into the queue: 0, or nonzero when the buffer faults. */
typedef int (*channel_copy_fn)(void *to, const void *from, size_t n);
enum channel_send_result { CHANNEL_SEND_CORRUPT = -1, CHANNEL_SEND_FAULT = -2, CHANNEL_SEND_PEER_CLOSED = -3 };
/* Copies the message (n buffers, total bytes) into the outgoing ring with copy and publishes it:
 * 1; 0 when it does not fit now (nothing written); a channel_send_result when the other side
 * has closed (nobody would read it), the reader's tail is no reader's or a buffer faulted
 * (nothing published). The caller keeps total <= channel_max_message. */
int channel_send(struct channel_end *e, const struct iovec *iov, int n, uint64_t total, channel_copy_fn copy);
/* channel_send without the publish: the record is written past what the reader was shown, and
 * channel_publish shows it (with every other record put since): one release store and one
 * wake-up check for a batch of messages. Same results as channel_send. */
int channel_put(struct channel_end *e, const struct iovec *iov, int n, uint64_t total, channel_copy_fn copy);
/* Shows the reader every record put since the last publish, and wakes it if it sleeps. */
void channel_publish(struct channel_end *e);
/* Releases what was handed out before, then hands out the messages there, in order: at most
 * max, and with room > 0 only while their payloads, each rounded up to 8 bytes, fit in room
 * bytes together. Returns how many (> 0), in out, held until the next channel_take or
 * channel_release (one tail published for all of them); or, having handed out none, a
 * channel_take_result: CHANNEL_TOO_BIG when the next message alone needs more than
 * room (its length in out[0].length). */
int channel_take(struct channel_end *e, struct channel_message *out, uint32_t max, uint64_t room);
/* Releases what was handed out, if anything (the reader is done with it). */
void channel_release(struct channel_end *e);
/* Before sleeping: sets the waiting flags for what is wanted (a message; room for a message of
 * pending_bytes, which may be 0) and looks again. 1: sleep (the other side will send a byte);
 * 0: something wanted is there already (the flags are cleared). A sleeping side waits for a
 * byte on its socket (any byte: look again; end of file: the other side is gone). */
int channel_prepare_sleep(struct channel_end *e, int want_message, int want_room, uint64_t pending_bytes);
/* Spins (no syscall, no sleep) for up to ns nanoseconds for what a side would sleep for: a
 * message (or the other side's close), room for a message of pending_bytes. 1: it came; 0: the
 * time ran out. A side whose other side answers within microseconds saves both the sleep and
 * the other side's wake-up byte (it sees no waiting flag). */
int channel_spin(struct channel_end *e, int want_message, int want_room, uint64_t pending_bytes, uint64_t ns);
/* After waking: clears this side's waiting flags. */
void channel_woken(struct channel_end *e);
/* Sends the other side one wake-up byte (any byte means "look again"). */
void channel_wake(struct channel_end *e);
/* Marks this side closed and wakes the other side. */
void channel_close(struct channel_end *e);
/* Whether a message is there that channel_take has not handed out. */
int channel_unread(struct channel_end *e);
/* Whether the other side has closed the channel (its messages may still be unread). */
int channel_peer_closed(const struct channel_end *e);

#endif
