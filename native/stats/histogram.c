#include "histogram.h"

#include <math.h>
#include <string.h>

const double hist_percentile_list[HIST_NPERCENTILES] = {1,  5,  10, 20, 30,   40,   50,    60,   70,
                                                        80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99};

void hist_init(struct histogram *h) {
  memset(h, 0, sizeof(*h));
  h->min = UINT64_MAX;
}

unsigned hist_bucket(uint64_t v) {
  if (v < HIST_EXACT) return (unsigned)v;
  unsigned msb = 63u - (unsigned)__builtin_clzll(v);  /* >= 7 */
  unsigned shift = msb - HIST_BITS;
  return (msb - HIST_BITS + 1) * (1u << HIST_BITS) + (unsigned)((v >> shift) & ((1u << HIST_BITS) - 1));
}

uint64_t hist_bucket_value(unsigned bucket) {
  if (bucket < HIST_EXACT) return bucket;
  unsigned shift = bucket / (1u << HIST_BITS) - 1;
  uint64_t low = (uint64_t)((1u << HIST_BITS) + bucket % (1u << HIST_BITS)) << shift;
  return low + (((uint64_t)1 << shift) - 1) / 2;
}

void hist_add(struct histogram *h, uint64_t v) {
  h->n++;
  if (v < h->min) h->min = v;
  if (v > h->max) h->max = v;
  double delta = (double)v - h->mean;
  h->mean += delta / (double)h->n;
  h->m2 += delta * ((double)v - h->mean);
  h->counts[hist_bucket(v)]++;
}

void hist_merge(struct histogram *dst, const struct histogram *src) {
  if (src->n == 0) return;
  if (dst->n == 0) {
    memcpy(dst, src, sizeof(*dst));
    return;
  }
  double n1 = (double)dst->n, n2 = (double)src->n, n = n1 + n2;
  double delta = src->mean - dst->mean;
  dst->mean += delta * n2 / n;
  dst->m2 += src->m2 + delta * delta * n1 * n2 / n;
  dst->n += src->n;
  if (src->min < dst->min) dst->min = src->min;
  if (src->max > dst->max) dst->max = src->max;
  for (unsigned i = 0; i < HIST_BUCKETS; i++) dst->counts[i] += src->counts[i];
}

double hist_stddev(const struct histogram *h) {
  return h->n > 1 ? sqrt(h->m2 / (double)(h->n - 1)) : 0.0;
}

void hist_percentiles(const struct histogram *h, const double *percentiles, int n, uint64_t *values) {
  unsigned bucket = 0;
  uint64_t seen = 0;
  for (int i = 0; i < n; i++) {
    if (h->n == 0) {
      values[i] = 0;
      continue;
    }
    /* the smallest value with at least p% of the samples at or below it */
    uint64_t rank = (uint64_t)ceil(percentiles[i] / 100.0 * (double)h->n - 1e-9);
    if (rank < 1) rank = 1;
    if (rank > h->n) rank = h->n;
    while (seen + h->counts[bucket] < rank) seen += h->counts[bucket++];
    uint64_t v = hist_bucket_value(bucket);
    if (v < h->min) v = h->min;
    if (v > h->max) v = h->max;
    values[i] = v;
  }
}

uint64_t hist_percentile(const struct histogram *h, double p) {
  uint64_t v;
  hist_percentiles(h, &p, 1, &v);
  return v;
}

void hist_bins(const struct histogram *h, const uint64_t *edges, int n, uint64_t *counts) {
  for (int i = 0; i <= n; i++) counts[i] = 0;
  if (h->n == 0) return;
  int bin = 0;
  for (unsigned b = 0; b < HIST_BUCKETS; b++) {
    if (h->counts[b] == 0) continue;
    uint64_t v = hist_bucket_value(b);
    while (bin < n && v >= edges[bin]) bin++;
    counts[bin] += h->counts[b];
  }
}
