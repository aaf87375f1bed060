/* fio's random_distribution for a random job's blocks (zipf, pareto, normal, zoned): a rank drawn from
 * the distribution over the job's blocks, then spread over the file by a hash, or, with a center
 * (zipf:1.2:0.25), moved so the hottest block sits at that fraction of the file, as fio does. With
 * a distribution there is no random map (fio disables it): blocks are drawn with replacement. */
#include <math.h>

#include "worker.h"

#define ZIPF_MAX_SUM 10000000ull  /* fio sums zeta over at most this many items (ZIPF_MAX_GEN) */

static double rand01(struct worker *w) { return (double)(next_random(&w->rand_state) >> 11) * 0x1.0p-53; }

static uint64_t hash64(uint64_t x) {  /* splitmix64's finalizer */
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

void dist_init(struct worker *w) {
  const struct job_spec *s = w->spec;
  if (s->dist != DIST_ZIPF) return;
  uint64_t n = w->nblocks < ZIPF_MAX_SUM ? w->nblocks : ZIPF_MAX_SUM;
  double zeta = 0;
  for (uint64_t i = 1; i <= n; i++) zeta += pow(1.0 / (double)i, s->dist_param);
  w->zipf_zetan = zeta;
  w->zipf_zeta2 = 1.0 + pow(0.5, s->dist_param);
}

/* Gray et al.'s zipf generator (fio's zipf_next): rank 0 is the hottest. */
static uint64_t zipf_rank(struct worker *w) {
  double theta = w->spec->dist_param, n = (double)w->nblocks;
  double alpha = 1.0 / (1.0 - theta);
  double eta = (1.0 - pow(2.0 / n, 1.0 - theta)) / (1.0 - w->zipf_zeta2 / w->zipf_zetan);
  double u = rand01(w), uz = u * w->zipf_zetan;
  if (uz < 1.0) return 0;
  if (uz < 1.0 + pow(0.5, theta)) return 1;
  return (uint64_t)(n * pow(eta * u - eta + 1.0, alpha));
}

/* fio's pareto_next: (n - 1) * u^(log(h) / log(1 - h)). */
static uint64_t pareto_rank(struct worker *w) {
  double h = w->spec->dist_param;
  return (uint64_t)((double)(w->nblocks - 1) * pow(rand01(w), log(h) / log(1.0 - h)));
}

/* A normal deviate around the center, its deviation dev percent of the blocks (Box-Muller). */
static uint64_t normal_block(struct worker *w) {
  double n = (double)w->nblocks;
  double z = sqrt(-2.0 * log(1.0 - rand01(w))) * cos(2.0 * M_PI * rand01(w));
  double center = w->spec->dist_center >= 0 ? w->spec->dist_center : 0.5;
  double v = fmod(center * n + z * (w->spec->dist_param / 100.0) * n, n);
  return (uint64_t)(v < 0 ? v + n : v) % w->nblocks;
}

/* fio's zoned and zoned_abs: a zone of the I/O's direction picked by its share of the I/Os, then
 * a block of it at random; a zone's size is a percent of the blocks, or bytes (zoned_abs). */
static uint64_t zoned_block(struct worker *w, int ddir) {
  const struct job_spec *s = w->spec;
  unsigned pick = (unsigned)(next_random(&w->rand_state) % 100), access = 0;
  uint64_t from = 0;
  for (unsigned i = 0; i < s->nzones[ddir]; i++) {
    access += s->zone_access_pct[ddir][i];
    uint64_t blocks = s->dist == DIST_ZONED_ABS ? s->zone_size[ddir][i] / s->bs : w->nblocks * s->zone_size[ddir][i] / 100;
    if (pick < access || i + 1 == s->nzones[ddir]) {
      if (from >= w->nblocks) from = w->nblocks - 1;
      uint64_t to = from + blocks;
      if (to <= from) to = from + 1;
      if (to > w->nblocks) to = w->nblocks;
      return from + next_random(&w->rand_state) % (to - from);
    }
    from += blocks;
  }
  return 0;
}

uint64_t dist_next_block(struct worker *w, int ddir) {
  const struct job_spec *s = w->spec;
  if (s->dist == DIST_ZONED || s->dist == DIST_ZONED_ABS) return zoned_block(w, ddir);
  if (s->dist == DIST_NORMAL) return normal_block(w);
  uint64_t rank = s->dist == DIST_ZIPF ? zipf_rank(w) : pareto_rank(w);
  if (rank >= w->nblocks) rank = w->nblocks - 1;
  if (s->dist_center < 0) return hash64(rank) % w->nblocks;
  return (rank + (uint64_t)(s->dist_center * (double)w->nblocks)) % w->nblocks;
}
