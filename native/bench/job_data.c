/* What a write carries when no verify pattern is asked for: fio's refill_buffers (fresh random
 * data in every write), dedupe_percentage (that share of the writes repeat an earlier buffer:
 * dedupe_mode=repeat the last new one, working_set one of the first new ones, a
 * dedupe_working_set_percentage of the blocks' worth; with dedupe_global the set is every such
 * job's), and buffer_compress_percentage (that share of each buffer_compress_chunk zeros, so it
 * compresses so far). Each buffer is the random stream of its own starting number, so a repeat is regenerated,
 * never kept. */
#include <string.h>

#include "worker.h"

/* The starting number of the global working set's i-th buffer's random stream: the same in
 * every job (dedupe_global). */
static uint64_t global_start(uint64_t i) {
  uint64_t x = i + 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return (x ^ (x >> 31)) | 1;
}

static uint64_t working_set_size(const struct worker *w) {
  uint64_t n = w->nblocks * w->spec->dedupe_ws_pct / 100;
  return n < 1 ? 1 : n;
}

/* The starting number of this write's buffer's random stream: a new one, or an earlier one the
 * dedupe share asks for. */
static uint64_t buffer_start(struct worker *w) {
  const struct job_spec *s = w->spec;
  int repeat = s->dedupe_pct != 0 && w->unique_writes != 0 && next_random(&w->dedupe_state) % 100 < s->dedupe_pct;
  if (!repeat) {
    uint64_t start;
    if (s->dedupe_mode == DEDUPE_WORKING_SET && s->dedupe_global && w->unique_writes < working_set_size(w)) {
      /* this job's share of the global set, spread evenly between the jobs that share it */
      start = global_start(w->unique_writes * s->dedupe_jobs + s->dedupe_index);
    } else {
      start = next_random(&w->fill_state) | 1;
    }
    if (s->dedupe_mode == DEDUPE_WORKING_SET && !s->dedupe_global && w->ws_starts != NULL && w->unique_writes < w->ws_n)
      w->ws_starts[w->unique_writes] = start;
    w->unique_writes++;
    w->last_start = start;
    return start;
  }
  if (s->dedupe_mode != DEDUPE_WORKING_SET) return w->last_start;
  if (s->dedupe_global) return global_start(next_random(&w->dedupe_state) % (working_set_size(w) * s->dedupe_jobs));
  uint64_t have = w->unique_writes < w->ws_n ? w->unique_writes : w->ws_n;
  return w->ws_starts[next_random(&w->dedupe_state) % have];
}

int write_data_varies(const struct job_spec *s) {
  return s->refill_buffers || s->dedupe_pct != 0 || s->compress_pct != 0;
}

void fill_write_data(struct worker *w, struct io_u *io) {
  const struct job_spec *s = w->spec;
  uint64_t state = buffer_start(w);
  uint64_t *words = (uint64_t *)io->buf;
  for (size_t i = 0; i < io->len / 8; i++) words[i] = next_random(&state);
  if (s->compress_pct == 0) return;
  /* fio's fill_random_buf_percentage: each chunk's first (100 - pct)% random, the rest zeros */
  size_t chunk = s->compress_chunk ? s->compress_chunk : 512;
  for (size_t at = 0; at < io->len; at += chunk) {
    size_t len = io->len - at < chunk ? io->len - at : chunk;
    size_t keep = (100 - s->compress_pct) * len / 100;
    memset((char *)io->buf + at + keep, 0, len - keep);
  }
}
