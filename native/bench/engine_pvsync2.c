/* pvsync2: preadv2/pwritev2 of one buffer, one I/O at a time (fio's "pvsync2"); --hipri sets
 * RWF_HIPRI (polled completion, where the device has poll queues), as fio's hipri option;
 * uncached RWF_DONTCACHE on buffered I/O, and fio's atomic RWF_ATOMIC on writes (fio 3.42's). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stddef.h>
#include <sys/uio.h>

#include "engine.h"

struct pvsync2_options {
  unsigned hipri, uncached;
};

static const struct engine_option pvsync2_options[] = {
    {"hipri", ENGINE_OPT_BOOL, "RWF_HIPRI: poll for the completion (devices with poll queues)",
     offsetof(struct pvsync2_options, hipri), 0, 0, 1},
    {"uncached", ENGINE_OPT_UINT, "RWF_DONTCACHE on buffered I/O: read pages dropped after the copy, writes written back at once (fio 3.42's)",
     offsetof(struct pvsync2_options, uncached), 0, 0, 1},
    {NULL, 0, NULL, 0, 0, 0, 0},
};

static int pvsync2_setup(struct engine_ctx *ctx) { (void)ctx; return 0; }

static int pvsync2_queue(struct engine_ctx *ctx, struct io_u *io) {
  const struct pvsync2_options *o = ctx->options;
  int flags = o != NULL && o->hipri ? RWF_HIPRI : 0;
  if (o != NULL && o->uncached && !ctx->direct) flags |= RWF_DONTCACHE;
  if (ctx->atomic && io->ddir == DDIR_WRITE) flags |= RWF_ATOMIC;
  struct iovec iov = {.iov_base = io->buf, .iov_len = io->len};
  ssize_t n = io->ddir == DDIR_READ ? preadv2(io->fd, &iov, 1, (off_t)io->offset, flags)
                                    : pwritev2(io->fd, &iov, 1, (off_t)io->offset, flags);
  if (n < 0) return ENGINE_ERR(ctx, errno, io->ddir == DDIR_READ ? "preadv2" : "pwritev2");
  io->result = n;
  return FIO_Q_COMPLETED;
}

static void pvsync2_cleanup(struct engine_ctx *ctx) { (void)ctx; }

static const struct engine_ops engine_pvsync2 = {
    .name = "pvsync2", .flags = ENGINE_NAMED | ENGINE_ATOMIC_WRITES, .list_order = 70, .options = pvsync2_options,
    .options_size = sizeof(struct pvsync2_options), .setup = pvsync2_setup, .queue = pvsync2_queue,
    .cleanup = pvsync2_cleanup,
};
ENGINE_REGISTER(engine_pvsync2)
