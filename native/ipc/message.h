/* The bytes every message carries, and the receiver's check of them.
 *
 * A message of n bytes is a fixed 4 KiB reference page repeated (the byte at offset o is
 * ref[o % 4096]), overwritten by 8-byte stamps that hold the message's sequence number and
 * the stamp's place: one at the start of every 4 KiB page and one in the last 8 bytes. The
 * sender builds each message by writing only the stamps into a buffer filled once with the
 * pattern, so building costs one word per page.
 *
 * The receiver checks, for every message: every stamp (a message that is stale, torn at a
 * page, out of order, repeated or cut short fails), and the full bytes of one page, a
 * different page each message (seq % pages), so over a run every page is compared byte for
 * byte. Messages of up to 4 KiB are compared in full every time; `full` compares every byte
 * of every message (the receiver then reads all of it, as a consumer of the data would). */
#ifndef IOLAB_IPC_MESSAGE_H
#define IOLAB_IPC_MESSAGE_H

#include <stddef.h>
#include <stdint.h>

#include "ipc.h"

#define IPC_PAGE 4096u

/* Fills buf (len bytes) with the pattern, stamps left out. */
void ipc_pattern_fill(void *buf, size_t len);
/* Writes message seq's stamps into buf (which holds the pattern). */
void ipc_stamp(void *buf, size_t len, uint64_t seq);
/* The offset the fault knob changes in message seq: inside what the sampled check compares. */
size_t ipc_fault_offset(size_t len, uint64_t seq);
/* 0 when buf holds message seq; else -1 with e->kind IPC_CHECK and a message naming the
 * transport, the message, the offset and the bytes expected and seen. */
int ipc_check(const void *buf, size_t len, uint64_t seq, int full, const char *transport,
              struct ipc_error *e);

#endif
