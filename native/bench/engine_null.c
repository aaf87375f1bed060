/* null: completes every I/O at once and moves nothing (fio's "null"): what the job runner itself
 * costs per I/O. Opens no file (diskless), so a job lays nothing out. */
#include "engine.h"

static int null_setup(struct engine_ctx *ctx) { (void)ctx; return 0; }

static int null_queue(struct engine_ctx *ctx, struct io_u *io) {
  (void)ctx;
  io->result = io->len;
  return FIO_Q_COMPLETED;
}

static void null_cleanup(struct engine_ctx *ctx) { (void)ctx; }

static const struct engine_ops engine_null = {
    .name = "null", .flags = ENGINE_NAMED | ENGINE_DISKLESS, .list_order = 80, .setup = null_setup,
    .queue = null_queue, .cleanup = null_cleanup,
};
ENGINE_REGISTER(engine_null)
