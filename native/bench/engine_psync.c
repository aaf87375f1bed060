/* psync: pread/pwrite, one I/O at a time (fio's "psync"). */
#include <errno.h>
#include <unistd.h>

#include "engine.h"

static int psync_setup(struct engine_ctx *ctx) { (void)ctx; return 0; }

static int psync_queue(struct engine_ctx *ctx, struct io_u *io) {
  ssize_t n = io->ddir == DDIR_READ ? pread(io->fd, io->buf, io->len, (off_t)io->offset)
                                    : pwrite(io->fd, io->buf, io->len, (off_t)io->offset);
  if (n < 0) return ENGINE_ERR(ctx, errno, io->ddir == DDIR_READ ? "pread" : "pwrite");
  io->result = n;
  return FIO_Q_COMPLETED;
}

static void psync_cleanup(struct engine_ctx *ctx) { (void)ctx; }

static const struct engine_ops engine_psync = {
    .name = "psync", .list_order = 20, .setup = psync_setup, .queue = psync_queue,
    .cleanup = psync_cleanup,
};
ENGINE_REGISTER(engine_psync)
