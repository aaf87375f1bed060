/* Writing and checking iolab's mark on its files (layout_mark.h). */
#include "layout_mark.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "job.h"
#include "pattern.h"

#define MARK_NAME "user.iolab"
#define SAMPLES 16
#define SAMPLE_BYTES 4096u

static const char *const state_names[] = {"none", "pattern", "written"};

/* Offset and length of the i-th sample of a file of size bytes (8-aligned, within the file). */
static void sample_at(uint64_t size, unsigned i, uint64_t *off, size_t *len) {
  uint64_t piece = size < SAMPLE_BYTES ? size & ~(uint64_t)7 : SAMPLE_BYTES;
  *len = (size_t)piece;
  *off = piece == 0 ? 0 : ((size - piece) * i / (SAMPLES - 1)) & ~(uint64_t)7;
}

/* Walks the samples: the checksum of their bytes, and whether each holds the layout pattern.
 * -1 when the file cannot be read. */
static int sample_file(const char *path, uint64_t size, uint64_t *sum, int *pattern) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  uint64_t *buf = malloc(SAMPLE_BYTES);
  if (buf == NULL) {
    close(fd);
    return -1;
  }
  uint64_t h = 0xcbf29ce484222325ULL;
  *pattern = 1;
  int ret = 0;
  for (unsigned i = 0; i < SAMPLES && ret == 0; i++) {
    uint64_t off;
    size_t len;
    sample_at(size, i, &off, &len);
    if (len == 0) break;
    if (pread(fd, buf, len, (off_t)off) != (ssize_t)len) {
      ret = -1;
      break;
    }
    if (pattern_check(buf, off, len, PATTERN_KEY) >= 0) *pattern = 0;
    for (size_t w = 0; w < len / 8; w++) h = (h ^ buf[w]) * 0x100000001b3ULL;
  }
  free(buf);
  close(fd);
  *sum = h;
  return ret;
}

enum mark_state layout_mark_check(const char *path, const struct stat *st) {
  char mark[160], state[16];
  ssize_t n = getxattr(path, MARK_NAME, mark, sizeof(mark) - 1);
  if (n <= 0) return MARK_NONE;
  mark[n] = '\0';
  unsigned long long ino, size, sum;
  long long sec;
  long nsec;
  if (sscanf(mark, "iolab-v2 %15s ino=%llu size=%llu mtime=%lld.%ld sum=%llx", state, &ino, &size, &sec, &nsec,
             &sum) != 6)
    return MARK_NONE;
  if (ino != (unsigned long long)st->st_ino || size != (unsigned long long)st->st_size ||
      sec != (long long)st->st_mtim.tv_sec || nsec != st->st_mtim.tv_nsec)
    return MARK_NONE;
  uint64_t now_sum;
  int pattern;
  if (sample_file(path, (uint64_t)st->st_size, &now_sum, &pattern) < 0) return MARK_NONE;
  if (strcmp(state, state_names[MARK_STATE_PATTERN]) == 0) return pattern ? MARK_STATE_PATTERN : MARK_NONE;
  if (strcmp(state, state_names[MARK_STATE_WRITTEN]) == 0) return now_sum == sum ? MARK_STATE_WRITTEN : MARK_NONE;
  return MARK_NONE;
}

void layout_mark_set(const char *path, enum mark_state state) {
  struct stat st;
  uint64_t sum;
  int pattern;
  if (stat(path, &st) < 0 || sample_file(path, (uint64_t)st.st_size, &sum, &pattern) < 0) return;
  char mark[160];
  int n = snprintf(mark, sizeof(mark), "iolab-v2 %s ino=%llu size=%llu mtime=%lld.%09ld sum=%016llx",
                   state_names[state], (unsigned long long)st.st_ino, (unsigned long long)st.st_size,
                   (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec, (unsigned long long)sum);
  (void)setxattr(path, MARK_NAME, mark, (size_t)n, 0);
}

void layout_mark_written(const char *path, int pattern) {
  /* the caller ran a job on a file iolab owned: the mark's inode (unchanged by writes) says so */
  char mark[160], state[16];
  ssize_t n = getxattr(path, MARK_NAME, mark, sizeof(mark) - 1);
  if (n <= 0) return;
  mark[n] = '\0';
  unsigned long long ino;
  struct stat st;
  if (sscanf(mark, "iolab-v2 %15s ino=%llu", state, &ino) != 2 || stat(path, &st) < 0 ||
      ino != (unsigned long long)st.st_ino)
    return;
  int was_pattern = strcmp(state, state_names[MARK_STATE_PATTERN]) == 0;
  layout_mark_set(path, pattern && was_pattern ? MARK_STATE_PATTERN : MARK_STATE_WRITTEN);
}
