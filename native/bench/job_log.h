/* fio's per-job logs (write_lat_log, write_bw_log, write_iops_log, log_avg_msec) as the text fio
 * writes: one line per entry, "time, value, direction, block size, priority", time in ms since the
 * job began. Without log_avg_msec a line per I/O (lat/clat/slat in ns; bw in KB/s over the I/O's
 * clat, as fio computes it; iops 1); with it, a line per direction each window (the latencies'
 * mean, bw in KiB/s, IOPS; block size 0). Plain C. */
#ifndef IOLAB_BENCH_JOB_LOG_H
#define IOLAB_BENCH_JOB_LOG_H

#include <stddef.h>
#include <stdint.h>

enum log_kind { LOG_LAT = 0, LOG_CLAT, LOG_SLAT, LOG_BW, LOG_IOPS, LOG_KINDS };
#define LOG_MASK_LAT (1u << LOG_LAT | 1u << LOG_CLAT | 1u << LOG_SLAT)
#define LOG_MASK_BW (1u << LOG_BW)
#define LOG_MASK_IOPS (1u << LOG_IOPS)

struct log_text {
  char *buf;
  size_t len, cap;
};

/* One job thread's logs and the window being averaged (log_avg_msec). */
struct job_logs {
  unsigned mask, avg_ms;
  int log_prio;               /* fio's log_prio: the priority column is the value (0x2000), not 1 for realtime */
  int log_offset;             /* fio's log_offset: each line has the I/O's offset after its block size */
  uint64_t epoch_ns;          /* when the job began: time 0 of the lines */
  int failed;                 /* out of memory: the logs stop growing (the job goes on) */
  struct log_text text[LOG_KINDS];
  uint64_t win_from_ns;
  uint64_t win_sum[LOG_KINDS][2], win_ios[2], win_bytes[2];
};

void job_logs_init(struct job_logs *l, unsigned mask, unsigned avg_ms, uint64_t epoch_ns);
/* A completed I/O of bs bytes at offset: lat (queue -> reaped), clat, slat (0 for a synchronous
 * engine: no slat line), at I/O priority prio (an averaged line has none: 0, as fio's). */
void job_logs_io(struct job_logs *l, uint64_t t, int ddir, uint32_t bs, uint64_t offset, uint64_t lat, uint64_t clat,
                 uint64_t slat, int async, unsigned prio);
/* The job's end: the window in progress, as fio writes its last averaged entry. */
void job_logs_finish(struct job_logs *l, uint64_t t);
/* Appends one thread's text to the job's (then frees it). */
void log_text_move(struct log_text *into, struct log_text *from);
void log_text_free(struct log_text *t);

#endif
