/* The verify of a job that writes: each read a verify job issues is checked against what was
 * written there, the blocks written lately are read back while the job runs (fio's
 * verify_backlog), and every block written is read back after it (verify_pass). A block that
 * fails names its first bad byte, and with fio's verify_dump is written out beside what was
 * expected, as fio dumps it. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pattern.h"
#include "worker.h"

/* -1 when buf holds what the job's verify expects at offset (its verify_pattern, else the offset
 * pattern); else the file offset of the first byte that differs. */
static int64_t verify_check(const struct job_spec *s, const void *buf, uint64_t offset, size_t len) {
  if (s->verify_pattern_len != 0) return fixed_pattern_check(buf, offset, len, s->verify_pattern, s->verify_pattern_len);
  return pattern_check(buf, offset, len, PATTERN_KEY);
}

/* The name of the job's file number i (its only one, but for fio's filename=a:b). */
static const char *file_name(const struct job_spec *s, unsigned i) {
  return s->nfiles > 1 ? s->filenames[i] : s->filename;
}

/* fio's verify_dump: NAME.OFFSET.received (the block as read) and .expected, NAME the file's
 * base name, in the current folder; a file already there is left alone (never overwritten). */
static int dump_block(const struct job_spec *s, const char *path, uint64_t off, const void *got, size_t len) {
  char *copy = strdup(path), name[512];
  if (copy == NULL) return -1;
  void *want = malloc(len);
  int ok = want != NULL;
  if (ok && s->verify_pattern_len != 0) fixed_pattern_fill(want, len, s->verify_pattern, s->verify_pattern_len);
  else if (ok) pattern_fill(want, off, len, PATTERN_KEY);
  const char *kinds[2] = {"received", "expected"};
  const void *bufs[2] = {got, want};
  for (int i = 0; ok && i < 2; i++) {
    snprintf(name, sizeof(name), "%s.%llu.%s", basename(copy), (unsigned long long)off, kinds[i]);
    int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    ok = fd >= 0 && write(fd, bufs[i], len) == (ssize_t)len;
    if (fd >= 0) close(fd);
  }
  free(want);
  free(copy);
  return ok ? 0 : -1;
}

static int fail_verify(struct worker *w, unsigned file, uint64_t block, int64_t bad, const void *buf, size_t len) {
  if (w->error.kind == JOB_OK) {
    char name[160];
    const char *path = file_name(w->spec, file);
    int dumped = w->spec->verify_dump && dump_block(w->spec, path, block, buf, len) == 0;
    w->error.kind = JOB_VERIFY;
    w->error.offset = (uint64_t)bad;
    snprintf(w->error.message, sizeof(w->error.message),
             "verify failed: block at offset %llu (bs %u) of '%s' does not hold what was written there "
             "(first bad byte at offset %llu)%s",
             (unsigned long long)block, w->spec->bs, shown_name(name, sizeof(name), path), (unsigned long long)bad,
             dumped ? "; written to NAME.OFFSET.received and .expected" : "");
  }
  return -1;
}

int verify_read_io(struct worker *w, const struct io_u *io) {
  int64_t bad = verify_check(w->spec, io->buf, io->offset, io->len);
  return bad >= 0 ? fail_verify(w, io->file, io->offset, bad, io->buf, io->len) : 0;
}

/* Reads one written block back and checks it. */
static int check_block(struct worker *w, unsigned file, int fd, uint64_t off, void *buf) {
  const struct job_spec *s = w->spec;
  memset(buf, VERIFY_POISON, s->bs);
  ssize_t n = pread(fd, buf, s->bs, (off_t)off);
  if (n < 0) return worker_fail_errno(w, errno, "pread", off);
  if (n != (ssize_t)s->bs) return worker_fail_errno(w, EIO, "pread", off);
  int64_t bad = verify_check(s, buf, off, s->bs);
  if (bad >= 0) return fail_verify(w, file, off, bad, buf, s->bs);
  w->verified++;
  return 0;
}

/* After a job that wrote with verify on: read back every block written and check it, file
 * after file. */
int verify_pass(struct worker *w, void *buf) {
  const struct job_spec *s = w->spec;
  w->phase = PHASE_VERIFY;
  unsigned nfiles = w->files != NULL ? w->nfiles : 1;
  for (unsigned f = 0; f < nfiles; f++) {
    int fd = w->files != NULL ? w->files[f].fd : w->fd;
    const unsigned char *written = w->files != NULL ? w->files[f].written : w->written;
    for (uint64_t b = 0; b < w->nblocks; b++) {
      if (!(written[b / 8] & (1u << (b % 8)))) continue;
      if (job_stopped(w)) return 0;
      if (check_block(w, f, fd, b * s->bs + s->offset, buf) < 0) return -1;
    }
  }
  return 0;
}

int backlog_init(struct worker *w) {
  const struct job_spec *s = w->spec;
  if (s->verify_backlog == 0 || !s->verify || !job_writes(s->rw)) return 0;
  w->backlog_off = calloc(s->verify_backlog, sizeof(*w->backlog_off));
  w->backlog_file = calloc(s->verify_backlog, sizeof(*w->backlog_file));
  if (w->backlog_off == NULL || w->backlog_file == NULL || posix_memalign(&w->backlog_buf, 4096, s->bs) != 0) return -1;
  return 0;
}

void backlog_free(struct worker *w) {
  free(w->backlog_off);
  free(w->backlog_file);
  free(w->backlog_buf);
  w->backlog_off = NULL;
  w->backlog_file = NULL;
  w->backlog_buf = NULL;
}

void backlog_note(struct worker *w, unsigned file, uint64_t offset) {
  if (w->backlog_off == NULL || w->backlog_n >= w->spec->verify_backlog) return;
  w->backlog_file[w->backlog_n] = file;
  w->backlog_off[w->backlog_n++] = offset;
}

int backlog_due(const struct worker *w) {
  return w->backlog_off != NULL && w->backlog_n >= w->spec->verify_backlog;
}

/* fio's verify_backlog: the writes in flight done, verify_backlog_batch of the blocks written
 * since the last check (all by default) are read back and checked, oldest first; a block checked
 * so is not checked again by the pass after the job unless written again, as fio's history. */
int backlog_verify(struct worker *w) {
  const struct job_spec *s = w->spec;
  unsigned batch = s->verify_backlog_batch != 0 && s->verify_backlog_batch < w->backlog_n ? s->verify_backlog_batch : w->backlog_n;
  for (unsigned i = 0; i < batch; i++) {
    unsigned f = w->backlog_file[i];
    int fd = w->files != NULL ? w->files[f].fd : w->fd;
    if (w->files != NULL && f == w->cur) fd = w->fd;  /* the current file's fd lives in the worker */
    if (check_block(w, f, fd, w->backlog_off[i], w->backlog_buf) < 0) return -1;
    uint64_t b = (w->backlog_off[i] - s->offset) / s->bs;
    unsigned char *written = w->files != NULL ? (f == w->cur ? w->written : w->files[f].written) : w->written;
    written[b / 8] &= (unsigned char)~(1u << (b % 8));
  }
  w->backlog_n = 0;
  return 0;
}
