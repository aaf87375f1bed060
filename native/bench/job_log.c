/* fio's log files' text (job_log.h). */
#include "job_log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void job_logs_init(struct job_logs *l, unsigned mask, unsigned avg_ms, uint64_t epoch_ns) {
  memset(l, 0, sizeof(*l));
  l->mask = mask;
  l->avg_ms = avg_ms;
  l->epoch_ns = epoch_ns;
  l->win_from_ns = epoch_ns;
}

static void append(struct job_logs *l, enum log_kind k, uint64_t t, uint64_t value, int ddir, uint32_t bs, uint64_t offset,
                   unsigned prio) {
  struct log_text *x = &l->text[k];
  if (l->failed) return;
  if (x->cap - x->len < 128) {
    size_t cap = x->cap ? x->cap * 2 : 1 << 16;
    char *buf = realloc(x->buf, cap);
    if (buf == NULL) {
      l->failed = 1;
      return;
    }
    x->buf = buf;
    x->cap = cap;
  }
  uint64_t ms = t > l->epoch_ns ? (t - l->epoch_ns) / 1000000u : 0;
  x->len += (size_t)snprintf(x->buf + x->len, x->cap - x->len, "%" PRIu64 ", %" PRIu64 ", %d, %u, ", ms, value, ddir, bs);
  if (l->log_offset) x->len += (size_t)snprintf(x->buf + x->len, x->cap - x->len, "%" PRIu64 ", ", offset);
  /* fio's last column: the priority value with log_prio, else whether the I/O was realtime */
  if (l->log_prio)
    x->len += (size_t)snprintf(x->buf + x->len, x->cap - x->len, "0x%04x\n", prio);
  else
    x->len += (size_t)snprintf(x->buf + x->len, x->cap - x->len, "%u\n", (prio >> 13) == 1 ? 1u : 0u);
}

static void close_window(struct job_logs *l, uint64_t t) {
  uint64_t ms = (t - l->win_from_ns) / 1000000u;
  for (int d = 0; d < 2; d++) {
    uint64_t n = l->win_ios[d];
    if (n == 0) continue;
    for (int k = LOG_LAT; k <= LOG_SLAT; k++) {
      if ((l->mask & (1u << k)) && (k != LOG_SLAT || l->win_sum[LOG_SLAT][d] != 0))
        append(l, (enum log_kind)k, t, l->win_sum[k][d] / n, d, 0, 0, 0);
    }
    if (ms == 0) ms = 1;
    if (l->mask & LOG_MASK_BW) append(l, LOG_BW, t, l->win_bytes[d] * 1000u / ms / 1024u, d, 0, 0, 0);
    if (l->mask & LOG_MASK_IOPS) append(l, LOG_IOPS, t, n * 1000u / ms, d, 0, 0, 0);
  }
  memset(l->win_sum, 0, sizeof(l->win_sum));
  memset(l->win_ios, 0, sizeof(l->win_ios));
  memset(l->win_bytes, 0, sizeof(l->win_bytes));
  l->win_from_ns = t;
}

void job_logs_io(struct job_logs *l, uint64_t t, int ddir, uint32_t bs, uint64_t offset, uint64_t lat, uint64_t clat,
                 uint64_t slat, int async, unsigned prio) {
  if (l->mask == 0) return;
  if (l->avg_ms == 0) {
    if (l->mask & (1u << LOG_LAT)) append(l, LOG_LAT, t, lat, ddir, bs, offset, prio);
    if (l->mask & (1u << LOG_CLAT)) append(l, LOG_CLAT, t, clat, ddir, bs, offset, prio);
    if ((l->mask & (1u << LOG_SLAT)) && async) append(l, LOG_SLAT, t, slat, ddir, bs, offset, prio);
    /* fio's per-I/O bandwidth: the I/O's bytes over its completion latency, in bytes per ms */
    if (l->mask & LOG_MASK_BW) append(l, LOG_BW, t, clat ? (uint64_t)bs * 1000000u / clat : 0, ddir, bs, offset, prio);
    if (l->mask & LOG_MASK_IOPS) append(l, LOG_IOPS, t, 1, ddir, bs, offset, prio);
    return;
  }
  if (t - l->win_from_ns >= (uint64_t)l->avg_ms * 1000000u) close_window(l, t);
  l->win_sum[LOG_LAT][ddir] += lat;
  l->win_sum[LOG_CLAT][ddir] += clat;
  l->win_sum[LOG_SLAT][ddir] += async ? slat : 0;
  l->win_ios[ddir]++;
  l->win_bytes[ddir] += bs;
}

void job_logs_finish(struct job_logs *l, uint64_t t) {
  if (l->mask != 0 && l->avg_ms != 0 && t > l->win_from_ns) close_window(l, t);
}

void log_text_move(struct log_text *into, struct log_text *from) {
  if (from->len == 0) {
    log_text_free(from);
    return;
  }
  if (into->buf == NULL) {
    *into = *from;
    memset(from, 0, sizeof(*from));
    return;
  }
  char *buf = realloc(into->buf, into->len + from->len);
  if (buf != NULL) {
    memcpy(buf + into->len, from->buf, from->len);
    into->buf = buf;
    into->len += from->len;
    into->cap = into->len;
  }
  log_text_free(from);
}

void log_text_free(struct log_text *t) {
  free(t->buf);
  memset(t, 0, sizeof(*t));
}
