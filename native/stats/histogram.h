/* The latency histogram of every benchmark (storage jobs, echo load): fio's log-linear buckets,
 * values below 128 ns are counted exactly, above that each power of two is split into 64 equal
 * buckets (error < 1/64 = 1.6%). min/max/mean/stddev are exact (Welford's running mean and
 * variance). Plain C. */
#ifndef IOLAB_STATS_HISTOGRAM_H
#define IOLAB_STATS_HISTOGRAM_H

#include <stdint.h>

#define HIST_BITS 6                                   /* 64 buckets per power of two */
#define HIST_EXACT (2u << HIST_BITS)                  /* 128: exact below */
#define HIST_BUCKETS ((64 - HIST_BITS - 1) * (1u << HIST_BITS) + HIST_EXACT)

struct histogram {
  uint64_t n;
  uint64_t min, max;
  double mean, m2;  /* Welford */
  uint64_t counts[HIST_BUCKETS];
};

/* fio's default percentile list (17 values). */
#define HIST_NPERCENTILES 17
extern const double hist_percentile_list[HIST_NPERCENTILES];

void hist_init(struct histogram *h);
void hist_add(struct histogram *h, uint64_t value);
/* Adds all of src into dst. */
void hist_merge(struct histogram *dst, const struct histogram *src);
double hist_stddev(const struct histogram *h);
/* The p-th percentile (0 < p <= 100): the smallest value with p% of the samples at or below it. */
uint64_t hist_percentile(const struct histogram *h, double p);
/* counts[i] = samples below edges[i] and at or above edges[i-1] (0 for i = 0), counts[n] = the
 * rest; each bucket counts at its midpoint. edges ascending. */
void hist_bins(const struct histogram *h, const uint64_t *edges, int n, uint64_t *counts);
/* values[i] = the p-th percentile for p = percentiles[i] (ascending), 0 when empty. */
void hist_percentiles(const struct histogram *h, const double *percentiles, int n, uint64_t *values);
/* Bucket of a value and the value a bucket stands for (its midpoint). */
unsigned hist_bucket(uint64_t value);
uint64_t hist_bucket_value(unsigned bucket);

#endif
