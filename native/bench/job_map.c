/* fio's random map and passes: by default a random job issues every block once per pass (fio's
 * axmap), drawing a block at random and taking the next free one after it when it was issued
 * already; norandommap draws with replacement instead. A time_based job whose map is full (or
 * whose sequential offset wraps) starts a new pass, and with invalidate=1 drops the file's cached
 * pages again, as fio does, so every pass of a buffered job reads a cold file. With norandommap a
 * random job never ends a pass, in fio as here: it invalidates once, at the start. A job over
 * several files (fio's filename=a:b) keeps a map, an offset and a pass per file. */
#include <fcntl.h>
#include <math.h>
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

/* Makes file `to` the current one. Only the scalars move: each file's randmap and written
 * bitmap stay where they were allocated. */
static void file_switch(struct worker *w, unsigned to) {
  struct file_state *f = &w->files[w->cur];
  f->fd = w->fd;
  f->next_block = w->next_block;
  f->last_pos = w->last_pos;
  f->map_left = w->map_left;
  w->cur = to;
  f = &w->files[w->cur];
  w->fd = f->fd;
  w->next_block = f->next_block;
  w->last_pos = f->last_pos;
  w->map_left = f->map_left;
  w->randmap = f->randmap;
  w->written = f->written;
}

/* The current file's pass is over: every block of a sequential or mapped random job issued. */
static int file_exhausted(const struct worker *w) {
  if (w->spec->seq_add != 0 && !job_random(w->spec->rw)) return 0;
  if (!job_random(w->spec->rw)) return w->next_block >= w->nblocks;
  return w->randmap != NULL && w->map_left == 0;
}

static double file_rand01(struct worker *w) { return (double)(next_random(&w->file_rand) >> 11) * 0x1.0p-53; }

/* fio's zipf, pareto and normal over the files: a value over nfiles << 10 ranges, not hashed,
 * moved by the distribution's offset; the file is the value >> 10 (fio's FIO_FSERVICE_SHIFT). */
static unsigned file_by_distribution(struct worker *w) {
  const struct job_spec *s = w->spec;
  uint64_t n = (uint64_t)w->nfiles << 10, v;
  double u = file_rand01(w);
  if (s->file_service == FS_ZIPF) {
    double theta = s->file_service_param, alpha = 1.0 / (1.0 - theta);
    double eta = (1.0 - pow(2.0 / (double)n, 1.0 - theta)) / (1.0 - w->file_zeta2 / w->file_zetan);
    double uz = u * w->file_zetan;
    v = uz < 1.0 ? 0 : uz < 1.0 + pow(0.5, theta) ? 1 : (uint64_t)((double)n * pow(eta * u - eta + 1.0, alpha));
  } else if (s->file_service == FS_PARETO) {
    double h = s->file_service_param;
    v = (uint64_t)((double)(n - 1) * pow(u, log(h) / log(1.0 - h)));
  } else {
    /* fio's gauss: the mean of 12 uniform draws, a deviation of dev percent of the ranges */
    double dev = ceil((double)n * s->file_service_param / 100.0), sum = 0;
    if (dev > (double)(n / 2)) dev = (double)(n / 2);
    for (int i = 0; i < 12; i++) sum += dev * file_rand01(w) - dev / 2;
    v = (uint64_t)((double)n / 2 + sum / 12 * 2);
  }
  return (unsigned)(((v + w->file_off) % n) >> 10);
}

void file_init(struct worker *w) {
  const struct job_spec *s = w->spec;
  if (w->nfiles < 2) return;
  w->file_rand = (w->rand_state ^ 0xd1b54a32d192ed03ULL) | 1;
  w->file_left = s->file_service_nr ? s->file_service_nr : 1;
  uint64_t n = (uint64_t)w->nfiles << 10;
  if (s->file_service == FS_ZIPF) {
    for (uint64_t i = 1; i <= n; i++) w->file_zetan += pow(1.0 / (double)i, s->file_service_param);
    w->file_zeta2 = 1.0 + pow(0.5, s->file_service_param);
  }
  if (s->file_service >= FS_ZIPF) {
    w->file_off = s->file_service_center >= 0 ? (uint64_t)((double)n * s->file_service_center) % n : next_random(&w->file_rand) % n;
    if (s->file_service == FS_NORMAL && s->file_service_center >= 0) w->file_off = (uint64_t)((double)n * (s->file_service_center - 0.5) + (double)n) % n;
    else if (s->file_service == FS_NORMAL) w->file_off = 0;
  }
  if (s->file_service == FS_RANDOM) file_switch(w, (unsigned)(next_random(&w->file_rand) % w->nfiles));
  else if (s->file_service >= FS_ZIPF) file_switch(w, file_by_distribution(w));
}

/* fio's get_next_file: the file of the next I/O. The uniform kinds skip a file whose pass is over
 * until every file's is (then all start again: a time_based job, loops); the distributions take
 * the file they draw, its pass starting again when it is over, as fio's non-uniform kinds. */
void file_next(struct worker *w) {
  const struct job_spec *s = w->spec;
  if (w->nfiles < 2) return;
  if (s->file_service >= FS_ZIPF) {
    file_switch(w, file_by_distribution(w));
    return;
  }
  int done = file_exhausted(w);
  if (done) w->files[w->cur].done = 1;
  if (!done && (s->file_service == FS_SEQUENTIAL || --w->file_left > 0)) return;
  w->file_left = s->file_service_nr ? s->file_service_nr : 1;
  unsigned open = 0;
  for (unsigned f = 0; f < w->nfiles; f++) open += !w->files[f].done;
  if (open == 0)
    for (unsigned f = 0; f < w->nfiles; f++) w->files[f].done = 0;
  unsigned to = w->cur;
  if (s->file_service == FS_RANDOM) {
    do to = (unsigned)(next_random(&w->file_rand) % w->nfiles);
    while (w->files[to].done);
  } else {
    do to = (to + 1) % w->nfiles;
    while (w->files[to].done);
  }
  file_switch(w, to);
}
