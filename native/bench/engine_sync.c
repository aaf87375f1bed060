/* sync: lseek + read/write, one I/O at a time (fio's "sync"). */
#include <errno.h>
#include <unistd.h>

#include "engine.h"

static int sync_setup(struct engine_ctx *ctx) { (void)ctx; return 0; }

static int sync_queue(struct engine_ctx *ctx, struct io_u *io) {
  if (lseek(io->fd, (off_t)io->offset, SEEK_SET) < 0) return ENGINE_ERR(ctx, errno, "lseek");
  ssize_t n = io->ddir == DDIR_READ ? read(io->fd, io->buf, io->len) : write(io->fd, io->buf, io->len);
  if (n < 0) return ENGINE_ERR(ctx, errno, io->ddir == DDIR_READ ? "read" : "write");
  io->result = n;
  return FIO_Q_COMPLETED;
}

static void sync_cleanup(struct engine_ctx *ctx) { (void)ctx; }

static const struct engine_ops engine_sync = {
    .name = "sync", .list_order = 10, .setup = sync_setup, .queue = sync_queue,
    .cleanup = sync_cleanup,
};
ENGINE_REGISTER(engine_sync)
