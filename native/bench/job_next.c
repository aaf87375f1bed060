/* The next I/O of a job thread: its direction, its offset (sequential with fio's modifier, from a
 * distribution, fio's random map, strided zones), its length (bs, or drawn: bsrange, bssplit),
 * its file and what its buffer holds. The measured loop (job_loop.c) issues it. */
#include <string.h>

#include "pattern.h"
#include "worker.h"

/* fio's sequential offset with a modifier (rw=read:-8k, write:112k), as its get_next_seq_offset
 * computes it, quirks included: each I/O starts where the last ended plus the modifier; a step
 * past the file's end wraps a hole to the start and a backwards job to the region's end minus
 * the step; a backwards job with an offset starts from the region's end. F is fio's file_offset
 * (offset=), the region [F, F + size), the file F + size long. */
static uint64_t seq_add_offset(struct worker *w) {
  const struct job_spec *s = w->spec;
  uint64_t f = s->offset, io = w->size, real = f + w->size;
  if (w->last_pos >= io + f && s->time_based) w->last_pos = f;
  if (w->last_pos == f && f != 0 && s->seq_add < 0) w->last_pos = real > io ? io : real;
  uint64_t pos = w->last_pos - f;
  if (pos != 0) {
    pos += (uint64_t)s->seq_add;  /* below 0 wraps to a huge value, as fio's unsigned sum */
    if (pos >= real) pos = s->seq_add > 0 ? f : (real > io ? io : real) + (uint64_t)s->seq_add;
  }
  if (pos + f + s->bs > real) pos = 0;  /* never past the file (fio would read short) */
  return pos + f;
}

/* A sequential job with a modifier ends once an I/O ended at the file's end (fio: no next offset). */
int seq_add_done(const struct worker *w) {
  const struct job_spec *s = w->spec;
  return s->seq_add != 0 && !job_random(s->rw) && !s->time_based && w->last_pos >= s->offset + w->size;
}

/* fio's bsrange and bssplit: this I/O's length, a multiple of bs, among those that fit in room
 * (the bytes left to the region's end), as fio's get_next_buflen draws again until one fits: so a
 * job's last I/Os are shorter and it moves exactly its size. bsrange draws uniformly among the
 * lengths that fit; bssplit scans its sizes in fio's order (by share) from the drawn one to the
 * first that fits, and draws again when none after it does. */
static uint32_t next_len(struct worker *w, int ddir, uint64_t room) {
  const struct job_spec *s = w->spec;
  unsigned n = s->nsplit[ddir];
  if (n != 0) {
    for (int tries = 0; tries < 64; tries++) {
      unsigned pick = (unsigned)(next_random(&w->rand_state) % 100), sum = 0;
      for (unsigned i = 0; i < n; i++) {
        sum += s->split_pct[ddir][i];
        if (s->split_pct[ddir][i] != 0 && pick < sum && s->split_bs[ddir][i] <= room) return s->split_bs[ddir][i];
      }
    }
    return s->bs;  /* the smallest always fits: a block is left */
  }
  uint64_t steps = (s->bs_max - s->bs) / s->bs + 1;
  if (steps > room / s->bs) steps = room / s->bs;
  if (steps <= 1) return s->bs;
  return s->bs + (uint32_t)(next_random(&w->rand_state) % steps) * s->bs;
}

/* fio's zonemode=strided (its setup_strided_zone_mode): after zonesize bytes in a zone, the
 * next zone starts zonerange + zoneskip further, back at the region's start past its end; a
 * sequential job that passes its zone's range starts the zone again. */
static void strided_zone(struct worker *w) {
  const struct job_spec *s = w->spec;
  uint64_t first = w->zone_start / s->bs;
  if (w->zone_bytes >= s->strided_size) {
    w->zone_bytes = 0;
    w->zone_start += s->strided_range + s->strided_skip;
    if (w->zone_start >= w->size) w->zone_start = 0;
    first = w->zone_start / s->bs;
    w->next_block = first;
  }
  if (!job_random(s->rw) && (w->next_block >= w->nblocks || w->next_block * s->bs >= w->zone_start + s->strided_range)) w->next_block = first;
}

void prepare_io(struct worker *w, struct io_u *io) {
  const struct job_spec *s = w->spec;
  uint64_t block, end = s->offset + w->size;
  /* the direction first, as fio's fill_io_u: each direction may have a split of its own */
  if (s->rw == RW_RANDRW || s->rw == RW_READWRITE)
    io->ddir = next_random(&w->rand_state) % 100 < s->rwmixread ? DDIR_READ : DDIR_WRITE;
  else
    io->ddir = job_reads(s->rw) ? DDIR_READ : DDIR_WRITE;
  int varlen = job_varlen(s), mapped = 0;
  if (s->strided_size != 0) strided_zone(w);
  if (s->seq_add != 0 && !job_random(s->rw)) {
    io->offset = seq_add_offset(w);
    w->last_pos = io->offset + s->bs;
    block = UINT64_MAX;
  } else if (s->strided_size != 0 && job_random(s->rw)) {
    /* a block of the zone, drawn with replacement */
    uint64_t first = w->zone_start / s->bs, n = s->strided_range / s->bs;
    if (first + n > w->nblocks) n = w->nblocks - first;
    block = first + next_random(&w->rand_state) % (n ? n : 1);
  } else if (s->dist != DIST_RANDOM && job_random(s->rw)) {
    block = dist_next_block(w, io->ddir);
  } else if (w->randmap != NULL) {
    block = randmap_next(w);
    mapped = 1;
  } else if (job_random(s->rw)) {
    block = next_random(&w->rand_state) % w->nblocks;
  } else {
    /* a pass ended: the next starts at 0 (and drops the cache of a buffered job) only when an I/O
     * needs it, as fio's wrap of a time_based job; a job that ends leaves the cache as it read it */
    if (w->next_block >= w->nblocks) {
      w->next_block = 0;
      pass_start(w);
    }
    block = w->next_block;
  }
  /* fio's blockalign: a random offset rounded down to a multiple of it */
  if (block != UINT64_MAX && s->block_align > s->bs && job_random(s->rw)) {
    block -= block % (s->block_align / s->bs);
    mapped = 0;
  }
  if (block != UINT64_MAX) io->offset = block * s->bs + s->offset;
  uint64_t room = io->offset < end ? end - io->offset : 0;
  uint32_t len = varlen ? next_len(w, io->ddir, room) : s->bs;
  /* a random I/O takes the blocks after its own only while they are free in this pass, as fio's
   * mark_random_map trims it: every block once per pass, the pass exactly the size */
  if (mapped && len > s->bs) len = (uint32_t)(1 + randmap_take_after(w, block, len / s->bs - 1)) * s->bs;
  if (block != UINT64_MAX && !job_random(s->rw)) w->next_block += len / s->bs;
  w->zone_bytes += len;
  /* never past the region */
  if (len > room) len = (uint32_t)room;
  io->len = len;
  io->ioprio = s->ioprio >= 0 ? (unsigned)s->ioprio : 0;  /* the job's; an engine's cmdprio may raise it */
  io->fd = w->fd;
  io->file = w->cur;
  file_next(w);  /* fio's file_service_type: the file of the next I/O */
  fill_buffer(w, io);
}

/* The buffer of an I/O of its direction: a write's data (the verify pattern, or refill_buffers'
 * fresh data), a read's poison for the check. */
void fill_buffer(struct worker *w, struct io_u *io) {
  const struct job_spec *s = w->spec;
  if (s->verify) {
    if (io->ddir == DDIR_WRITE && s->verify_pattern_len != 0)
      fixed_pattern_fill(io->buf, io->len, s->verify_pattern, s->verify_pattern_len);
    else if (io->ddir == DDIR_WRITE) pattern_fill(io->buf, io->offset, io->len, PATTERN_KEY);
    else memset(io->buf, VERIFY_POISON, io->len);
  } else if (io->ddir == DDIR_WRITE && write_data_varies(s)) {
    fill_write_data(w, io);  /* refill_buffers, dedupe_percentage, buffer_compress_percentage */
  }
}

