/* fio's random map and passes: by default a random job issues every block once per pass (fio's
 * axmap), drawing a block at random and taking the next free one after it when it was issued
 * already; norandommap draws with replacement instead. A time_based job whose map is full (or
 * whose sequential offset wraps) starts a new pass, and with invalidate=1 drops the file's cached
 * pages again, as fio does, so every pass of a buffered job reads a cold file. With norandommap a
 * random job never ends a pass, in fio as here: it invalidates once, at the start. A job over
 * several files (fio's filename=a:b) keeps a map, an offset and a pass per file. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "worker.h"

static uint64_t map_words(const struct worker *w) { return (w->nblocks + 63) / 64; }

static void map_clear(struct worker *w) {
  uint64_t n = map_words(w);
  memset(w->randmap, 0, n * sizeof(uint64_t));
  /* the bits past the last block count as issued, so the search never returns them */
  if (w->nblocks % 64 != 0) w->randmap[n - 1] = ~0ULL << (w->nblocks % 64);
  w->map_left = w->nblocks;
}

int randmap_init(struct worker *w) {
  if (!job_random(w->spec->rw) || w->spec->norandommap || w->spec->dist != DIST_RANDOM) return 0;
  w->randmap = malloc(map_words(w) * sizeof(uint64_t));
  if (w->randmap == NULL) return -1;
  map_clear(w);
  return 0;
}

void pass_start(struct worker *w) {
  if (w->randmap != NULL) map_clear(w);
  /* as fio's loop_cache_invalidate: buffered jobs only (O_DIRECT reads no cache) */
  if (w->spec->invalidate && !w->spec->direct) (void)posix_fadvise(w->fd, 0, (off_t)w->size, POSIX_FADV_DONTNEED);
}

uint64_t randmap_next(struct worker *w) {
  if (w->map_left == 0) pass_start(w);
  uint64_t b = next_random(&w->rand_state) % w->nblocks;
  uint64_t n = map_words(w), i = b / 64;
  uint64_t free_bits = ~w->randmap[i] & (~0ULL << (b % 64));
  /* the next free block at or after b, wrapping around: one exists while map_left > 0 */
  while (free_bits == 0) {
    i = i + 1 == n ? 0 : i + 1;
    free_bits = ~w->randmap[i];
  }
  unsigned bit = (unsigned)__builtin_ctzll(free_bits);
  w->randmap[i] |= 1ULL << bit;
  w->map_left--;
  return i * 64 + bit;
}

uint64_t randmap_take_after(struct worker *w, uint64_t block, uint64_t n) {
  uint64_t taken = 0;
  for (uint64_t b = block + 1; taken < n && b < w->nblocks; b++, taken++) {
    uint64_t bit = 1ULL << (b % 64);
    if (w->randmap[b / 64] & bit) break;
    w->randmap[b / 64] |= bit;
  }
  w->map_left -= taken;
  return taken;
}

/* Only the scalars move: each file's randmap and written bitmap stay where they were allocated. */
void file_next(struct worker *w) {
  if (w->nfiles < 2) return;
  struct file_state *f = &w->files[w->cur];
  f->fd = w->fd;
  f->next_block = w->next_block;
  f->last_pos = w->last_pos;
  f->map_left = w->map_left;
  w->cur = (w->cur + 1) % w->nfiles;
  f = &w->files[w->cur];
  w->fd = f->fd;
  w->next_block = f->next_block;
  w->last_pos = f->last_pos;
  w->map_left = f->map_left;
  w->randmap = f->randmap;
  w->written = f->written;
}
