/* Latency histogram: exact below 64 ns, then 32 buckets per power of two (HdrHistogram's
 * idea in a few lines), so percentiles are within ~3% without storing samples. */
#include "echo.h"

static unsigned bucket_of(uint64_t v) {
  if (v < 64) return (unsigned)v;
  unsigned msb = 63u - (unsigned)__builtin_clzll(v);
  return 64u + (msb - 6u) * 32u + (unsigned)((v >> (msb - 5u)) & 31u);
}

static uint64_t bucket_value(unsigned idx) {
  if (idx < 64) return idx;
  unsigned k = (idx - 64u) / 32u, sub = (idx - 64u) % 32u;
  unsigned msb = k + 6u;
  return (uint64_t)(32u + sub) << (msb - 5u);
}

void echo_hist_add(struct echo_hist *h, uint64_t ns) {
  h->b[bucket_of(ns)]++;
  h->count++;
  if (ns > h->max) h->max = ns;
}

void echo_hist_merge(struct echo_hist *into, const struct echo_hist *from) {
  for (unsigned i = 0; i < ECHO_HIST_BUCKETS; i++) into->b[i] += from->b[i];
  into->count += from->count;
  if (from->max > into->max) into->max = from->max;
}

uint64_t echo_hist_percentile(const struct echo_hist *h, double p) {
  if (h->count == 0) return 0;
  uint64_t want = (uint64_t)(p / 100.0 * (double)h->count + 0.999999);
  if (want == 0) want = 1;
  uint64_t seen = 0;
  for (unsigned i = 0; i < ECHO_HIST_BUCKETS; i++) {
    seen += h->b[i];
    if (seen >= want) {
      uint64_t v = bucket_value(i);
      return v > h->max ? h->max : v;
    }
  }
  return h->max;
}
