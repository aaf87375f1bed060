/* test_nodata (tests only): fault injection. After test_nodata_after I/Os that really move
 * data, every I/O reports len bytes done without moving any, as a broken device or driver
 * might. A verify read must catch it: the runner poisons read buffers, so a buffer that still
 * holds the right bytes from an earlier I/O cannot pass. */
#include <errno.h>
#include <stddef.h>
#include <unistd.h>

#include "engine.h"

struct nodata_options {
  unsigned after;
};

static const struct engine_option nodata_option_table[] = {
    {"test_nodata_after", ENGINE_OPT_UINT, "test_nodata: I/Os that move data before the fault starts",
     offsetof(struct nodata_options, after), 0, 0, 1000000000},
    {NULL},
};

static int nodata_setup(struct engine_ctx *ctx) {
  ctx->engine_data = NULL;  /* the count of I/Os done so far, kept in the pointer */
  return 0;
}

static int nodata_queue(struct engine_ctx *ctx, struct io_u *io) {
  const struct nodata_options *o = ctx->options;
  uintptr_t done = (uintptr_t)ctx->engine_data;
  ctx->engine_data = (void *)(done + 1);
  if (done >= o->after) {
    io->result = io->len;
    return FIO_Q_COMPLETED;
  }
  ssize_t n = io->ddir == DDIR_READ ? pread(io->fd, io->buf, io->len, (off_t)io->offset)
                                    : pwrite(io->fd, io->buf, io->len, (off_t)io->offset);
  if (n < 0) return ENGINE_ERR(ctx, errno, io->ddir == DDIR_READ ? "pread" : "pwrite");
  io->result = n;
  return FIO_Q_COMPLETED;
}

static void nodata_cleanup(struct engine_ctx *ctx) { ctx->engine_data = NULL; }

static const struct engine_ops engine_test_nodata = {
    .name = "test_nodata", .flags = ENGINE_TEST_ONLY, .list_order = 910,
    .options = nodata_option_table, .options_size = sizeof(struct nodata_options),
    .setup = nodata_setup, .queue = nodata_queue, .cleanup = nodata_cleanup,
};
ENGINE_REGISTER(engine_test_nodata)
