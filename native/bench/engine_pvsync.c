/* pvsync: preadv/pwritev of one buffer, one I/O at a time (fio's "pvsync"). */
#include <errno.h>
#include <sys/uio.h>

#include "engine.h"

static int pvsync_setup(struct engine_ctx *ctx) { (void)ctx; return 0; }

static int pvsync_queue(struct engine_ctx *ctx, struct io_u *io) {
  struct iovec iov = {.iov_base = io->buf, .iov_len = io->len};
  ssize_t n = io->ddir == DDIR_READ ? preadv(io->fd, &iov, 1, (off_t)io->offset)
                                    : pwritev(io->fd, &iov, 1, (off_t)io->offset);
  if (n < 0) return ENGINE_ERR(ctx, errno, io->ddir == DDIR_READ ? "preadv" : "pwritev");
  io->result = n;
  return FIO_Q_COMPLETED;
}

static void pvsync_cleanup(struct engine_ctx *ctx) { (void)ctx; }

static const struct engine_ops engine_pvsync = {
    .name = "pvsync", .flags = ENGINE_NAMED, .list_order = 60, .setup = pvsync_setup, .queue = pvsync_queue,
    .cleanup = pvsync_cleanup,
};
ENGINE_REGISTER(engine_pvsync)
