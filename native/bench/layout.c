/* The test file: created and laid out (verify pattern) when missing or short, like fio does.
 * Files iolab creates carry an xattr mark (user.iolab) so later runs may reuse and overwrite
 * them; a file without the mark is never written unless the job says force. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "job.h"
#include "pattern.h"

#define MARK_NAME "user.iolab"
#define MARK_PATTERN "iolab-v1 pattern"  /* every word holds the verify pattern */
#define MARK_WRITTEN "iolab-v1 written"  /* iolab's file, but a job wrote other data into it */
#define LAYOUT_CHUNK (1u << 20)

static int user_error(struct job_error *e, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->message, sizeof(e->message), fmt, ap);
  va_end(ap);
  e->kind = JOB_USER;
  return -1;
}

static int errno_error(struct job_error *e, int err, const char *syscall) {
  e->kind = JOB_ERRNO;
  e->err = err;
  e->syscall = syscall;
  e->offset = UINT64_MAX;
  return -1;
}

static int read_mark(const char *path, char *mark, size_t len) {
  ssize_t n = getxattr(path, MARK_NAME, mark, len - 1);
  if (n <= 0) return 0;
  mark[n] = '\0';
  return strncmp(mark, "iolab-v1 ", 9) == 0;
}

static void set_mark(const char *path, const char *mark) {
  /* best effort: a filesystem without user xattrs just makes the file look foreign next time */
  (void)setxattr(path, MARK_NAME, mark, strlen(mark), 0);
}

void layout_mark_written(const char *path) {
  char mark[64];
  if (read_mark(path, mark, sizeof(mark)) && strcmp(mark, MARK_WRITTEN) != 0) set_mark(path, MARK_WRITTEN);
}

static int job_reads(enum rw_mode rw) { return rw != RW_WRITE && rw != RW_RANDWRITE; }
static int job_writes(enum rw_mode rw) { return rw != RW_READ && rw != RW_RANDREAD; }

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int block_device_size(const struct job_spec *spec, uint64_t *size, struct job_error *e) {
  int fd = open(spec->filename, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno_error(e, errno, "open");
  uint64_t bytes = 0;
  int ret = ioctl(fd, BLKGETSIZE64, &bytes);
  int err = errno;
  close(fd);
  if (ret < 0) return errno_error(e, err, "ioctl");
  if (job_writes(spec->rw) && !spec->force)
    return user_error(e, "refusing to write to block device '%s' (use --force)", spec->filename);
  if (spec->verify && !job_writes(spec->rw))
    return user_error(e, "--verify on a read-only job needs a file iolab laid out, not block device '%s'", spec->filename);
  if (bytes < spec->bs)
    return user_error(e, "'%s' is smaller than one block (%llu bytes < bs %u)", spec->filename,
                      (unsigned long long)bytes, spec->bs);
  if (*size > bytes) *size = bytes;
  *size -= *size % spec->bs;
  return 0;
}

static int write_pattern(int fd, uint64_t from, uint64_t to, uint64_t *written,
                         struct job_error *e, job_progress_fn progress, void *arg) {
  char *buf = malloc(LAYOUT_CHUNK);
  if (buf == NULL) return errno_error(e, ENOMEM, "malloc");
  uint64_t start = now_ns(), last = start;
  for (uint64_t off = from; off < to;) {
    size_t len = to - off < LAYOUT_CHUNK ? (size_t)(to - off) : LAYOUT_CHUNK;
    pattern_fill(buf, off, (len + 7) & ~(size_t)7, PATTERN_SEED);
    ssize_t n = pwrite(fd, buf, len, (off_t)off);
    if (n < 0) {
      if (errno == EINTR) continue;
      free(buf);
      errno_error(e, errno, "pwrite");
      e->offset = off;
      return -1;
    }
    off += (uint64_t)n;
    *written += (uint64_t)n;
    uint64_t t = now_ns();
    if (progress != NULL && t - last > 200000000ull) {
      progress(arg, PHASE_LAYOUT, 0, *written, t - start);
      last = t;
    }
  }
  free(buf);
  if (fdatasync(fd) < 0) return errno_error(e, errno, "fdatasync");
  return 0;
}

int layout_prepare(const struct job_spec *spec, uint64_t *size, uint64_t *laid_out, struct job_error *e,
                   job_progress_fn progress, void *arg) {
  const char *path = spec->filename;
  struct stat st;
  int exists = 1;
  *laid_out = 0;
  if (stat(path, &st) < 0) {
    if (errno != ENOENT) return errno_error(e, errno, "stat");
    exists = 0;
  }
  if (exists && S_ISDIR(st.st_mode)) return errno_error(e, EISDIR, "open");
  if (exists && S_ISBLK(st.st_mode)) return block_device_size(spec, size, e);
  if (exists && !S_ISREG(st.st_mode))
    return user_error(e, "'%s' is neither a regular file nor a block device", path);

  char mark[64] = "";
  int owned = exists && read_mark(path, mark, sizeof(mark));
  int pattern_ok = owned && strcmp(mark, MARK_PATTERN) == 0;
  int need_pattern = spec->verify && job_reads(spec->rw);
  uint64_t current = exists ? (uint64_t)st.st_size : 0;

  if (exists && !owned && !spec->force) {
    if (job_writes(spec->rw))
      return user_error(e, "refusing to write into '%s': iolab did not create it (use --force to allow)", path);
    if (need_pattern)
      return user_error(e, "--verify needs a file iolab laid out; '%s' was not created by iolab "
                        "(use another --filename, or --force to overwrite it)", path);
    if (current < spec->bs)
      return user_error(e, "'%s' is smaller than one block (%llu bytes < bs %u)", path,
                        (unsigned long long)current, spec->bs);
    if (*size > current) *size = current;  /* read what is there, like fio */
  }
  *size -= *size % spec->bs;
  if (*size < spec->bs) return user_error(e, "size is smaller than one block (bs %u)", spec->bs);

  uint64_t from = need_pattern && !pattern_ok ? 0 : current & ~(uint64_t)7;
  if (from >= *size) return 0;

  uint64_t growth = *size > current ? *size - current : 0;
  if (growth > 0) {
    struct statvfs vfs;
    char *copy = strdup(path);
    if (copy == NULL) return errno_error(e, ENOMEM, "strdup");
    int ret = statvfs(exists ? path : dirname(copy), &vfs);
    int err = errno;
    free(copy);
    if (ret < 0) return errno_error(e, err, "statvfs");
    uint64_t avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
    if (avail < growth)
      return user_error(e, "not enough free space to lay out '%s': needs %llu MiB more, %llu MiB free", path,
                        (unsigned long long)(growth >> 20), (unsigned long long)(avail >> 20));
  }
  int fd = open(path, O_WRONLY | O_CLOEXEC | (exists ? 0 : O_CREAT | O_EXCL), 0644);
  if (fd < 0) return errno_error(e, errno, "open");
  if (!exists) set_mark(path, MARK_WRITTEN);  /* ours from now on; pattern once complete */
  int ret = write_pattern(fd, from, *size, laid_out, e, progress, arg);
  close(fd);
  if (ret < 0) return -1;
  if (!exists || owned) set_mark(path, from == 0 || pattern_ok ? MARK_PATTERN : MARK_WRITTEN);
  return 0;
}
