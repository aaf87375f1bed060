/* mmap: memcpy to/from a shared mapping of the file (fio's "mmap"). With direct=1 each I/O is
 * msync(MS_SYNC)'d and its pages dropped (posix_madvise DONTNEED), as fio does; writes are
 * msync'd at the end of the job either way. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "engine.h"

/* one mapping per file of the job (fio's filename=a:b), each file_size long */
struct mmap_data {
  char **maps;
  unsigned nmaps;
  size_t len;
};

static int mmap_setup(struct engine_ctx *ctx) {
  struct mmap_data *d = calloc(1, sizeof(*d));
  if (d == NULL) return ENGINE_ERR(ctx, ENOMEM, "calloc");
  ctx->engine_data = d;
  d->len = ctx->file_size;
  d->maps = calloc(ctx->nfiles, sizeof(*d->maps));
  if (d->maps == NULL) return ENGINE_ERR(ctx, ENOMEM, "calloc");
  for (; d->nmaps < ctx->nfiles; d->nmaps++) {
    void *p = mmap(NULL, d->len, ctx->writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, ctx->fds[d->nmaps], 0);
    if (p == MAP_FAILED) {
      snprintf(ctx->reason, sizeof(ctx->reason), "mmap failed: %s", strerror(errno));
      return -1;
    }
    d->maps[d->nmaps] = p;
  }
  return 0;
}

static int mmap_queue(struct engine_ctx *ctx, struct io_u *io) {
  struct mmap_data *d = ctx->engine_data;
  char *at = d->maps[io->file] + io->offset;
  if (io->ddir == DDIR_READ) memcpy(io->buf, at, io->len);
  else memcpy(at, io->buf, io->len);
  if (ctx->direct) {
    /* msync needs a page-aligned start; offsets are bs-aligned and bs >= 512, so align down */
    uintptr_t page = 4096, start = (uintptr_t)at & ~(page - 1);
    size_t len = (uintptr_t)at + io->len - start;
    if (msync((void *)start, len, MS_SYNC) < 0) return ENGINE_ERR(ctx, errno, "msync");
    int e = posix_madvise((void *)start, len, POSIX_MADV_DONTNEED);
    if (e != 0) return ENGINE_ERR(ctx, e, "posix_madvise");
  }
  io->result = io->len;
  return FIO_Q_COMPLETED;
}

static int mmap_flush(struct engine_ctx *ctx) {
  struct mmap_data *d = ctx->engine_data;
  for (unsigned i = 0; d != NULL && i < d->nmaps; i++)
    if (msync(d->maps[i], d->len, MS_SYNC) < 0) return ENGINE_ERR(ctx, errno, "msync");
  return 0;
}

static void mmap_cleanup(struct engine_ctx *ctx) {
  struct mmap_data *d = ctx->engine_data;
  if (d == NULL) return;
  for (unsigned i = 0; i < d->nmaps; i++) munmap(d->maps[i], d->len);
  free(d->maps);
  free(d);
  ctx->engine_data = NULL;
}

static const struct engine_ops engine_mmap = {
    .name = "mmap", .list_order = 60, .setup = mmap_setup, .queue = mmap_queue, .flush = mmap_flush, .cleanup = mmap_cleanup,
};
ENGINE_REGISTER(engine_mmap)
