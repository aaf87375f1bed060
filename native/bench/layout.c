/* The test file: created and laid out (verify pattern) when missing or short, like fio does.
 * A file counts as iolab's only while its mark (xattr user.iolab) still describes it: the
 * inode, size and mtime iolab left, and the content at 16 sampled offsets (the layout pattern,
 * or the checksum of what a job wrote there). A copy (cp --preserve=xattr), a file whose
 * contents were replaced, or any other file is foreign: a job never writes into it without
 * --force. New files are laid out under a temp name in the same directory and renamed into
 * place at the end; a symlink is never written through (--force replaces the link itself). */
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
#include <sys/sysmacros.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "layout_mark.h"
#include "pattern.h"
#include "worker.h"

#define LAYOUT_CHUNK (1u << 20)

/* A file name as one line of the CLI's text, as it shows every name (show-bytes.ts): a backslash
 * doubled, tab, newline and carriage return as \t \n \r, any other control byte or byte of no
 * whole UTF-8 character as \xHH. A name with a newline must not break the message's line. */
const char *shown_name(char *buf, size_t len, const char *s) {
  static const char hex[] = "0123456789abcdef";
  size_t o = 0;
  const unsigned char *p = (const unsigned char *)s;
  while (*p != '\0' && o + 5 < len) {
    unsigned char b = *p;
    size_t n = b < 0x80 ? 1 : (b & 0xe0) == 0xc0 ? 2 : (b & 0xf0) == 0xe0 ? 3 : (b & 0xf8) == 0xf0 ? 4 : 0;
    for (size_t i = 1; i < n; i++)
      if ((p[i] & 0xc0) != 0x80) n = 0;
    if (b == '\\' || b == '\t' || b == '\n' || b == '\r') {
      buf[o++] = '\\';
      buf[o++] = b == '\\' ? '\\' : b == '\t' ? 't' : b == '\n' ? 'n' : 'r';
      p++;
    } else if (n == 0 || (n == 1 && (b < 0x20 || b == 0x7f))) {
      buf[o++] = '\\';
      buf[o++] = 'x';
      buf[o++] = hex[b >> 4];
      buf[o++] = hex[b & 15];
      p++;
    } else {
      if (o + n >= len) break;
      memcpy(buf + o, p, n);
      o += n;
      p += n;
    }
  }
  buf[o] = '\0';
  return buf;
}

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

static int stopped(const struct job_spec *spec) {
  return spec->stop != NULL && __atomic_load_n(spec->stop, __ATOMIC_RELAXED);
}

static int block_device_size(const struct job_spec *spec, uint64_t *size, struct job_error *e) {
  int fd = open(spec->filename, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno_error(e, errno, "open");
  uint64_t bytes = 0;
  int ret = ioctl(fd, BLKGETSIZE64, &bytes);
  int err = errno;
  close(fd);
  if (ret < 0) return errno_error(e, err, "ioctl");
  char name[256];
  if (job_writes(spec->rw))
    return user_error(e, "refusing to write to block device '%s': iolab reads block devices, it never writes "
                      "into what it did not create", shown_name(name, sizeof(name), spec->filename));
  if (spec->verify && !job_writes(spec->rw))
    return user_error(e, "--verify on a read-only job needs a file iolab laid out, not block device '%s'", shown_name(name, sizeof(name), spec->filename));
  if (bytes < spec->bs)
    return user_error(e, "'%s' is smaller than one block (%llu bytes < bs %u)", shown_name(name, sizeof(name), spec->filename),
                      (unsigned long long)bytes, spec->bs);
  /* fio's default size: the device's from the job's offset on; never past its end */
  uint64_t left = bytes > spec->offset ? bytes - spec->offset : 0;
  if (*size > left || spec->size_is_default) *size = left;
  if (*size < spec->bs)
    return user_error(e, "offset %llu leaves less than one block of '%s' (%llu bytes)", (unsigned long long)spec->offset,
                      shown_name(name, sizeof(name), spec->filename), (unsigned long long)bytes);
  *size -= *size % spec->bs;
  return 0;
}

/* 1048576 -> "1M": the shortest exact spelling, as the CLI's formatSize. */
static const char *size_text(char *buf, size_t len, uint64_t n) {
  static const char suffix[] = "TGMk";
  for (int i = 0; i < 4; i++) {
    uint64_t unit = 1ull << (10 * (4 - i));
    if (n >= unit && n % unit == 0) {
      snprintf(buf, len, "%llu%c", (unsigned long long)(n / unit), suffix[i]);
      return buf;
    }
  }
  snprintf(buf, len, "%llu", (unsigned long long)n);
  return buf;
}

/* Writes the pattern over [from, to). A short write may leave off unaligned: the pattern is
 * computed from the 8-byte word that holds off, and written from off's byte in it.
 * 0, -1 (error set) or -2 (stopped). */
static int write_pattern(const struct job_spec *spec, int fd, uint64_t from, uint64_t to, uint64_t *written,
                         struct job_error *e, job_progress_fn progress, void *arg) {
  char *buf = malloc(LAYOUT_CHUNK + 8);
  if (buf == NULL) return errno_error(e, ENOMEM, "malloc");
  uint64_t start = now_ns(), last = start;
  int ret = 0;
  for (uint64_t off = from; off < to;) {
    if (stopped(spec)) {
      ret = -2;
      break;
    }
    uint64_t word = off & ~(uint64_t)7;
    size_t skip = (size_t)(off - word);
    size_t len = to - off < LAYOUT_CHUNK ? (size_t)(to - off) : LAYOUT_CHUNK;
    if (spec->layout_write_cap != 0 && len > spec->layout_write_cap) len = spec->layout_write_cap;
    pattern_fill(buf, word, (skip + len + 7) & ~(size_t)7, PATTERN_KEY);
    ssize_t n = pwrite(fd, buf + skip, len, (off_t)off);
    if (n < 0) {
      if (errno == EINTR) continue;
      ret = errno_error(e, errno, "pwrite");
      e->offset = off;
      break;
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
  if (ret == 0 && fdatasync(fd) < 0) return errno_error(e, errno, "fdatasync");
  return ret;
}

static int check_space(const char *path, int exists, uint64_t growth, struct job_error *e) {
  struct statvfs vfs;
  char *copy = strdup(path);
  if (copy == NULL) return errno_error(e, ENOMEM, "strdup");
  int ret = statvfs(exists ? path : dirname(copy), &vfs);
  int err = errno;
  free(copy);
  if (ret < 0) return errno_error(e, err, "statvfs");
  uint64_t avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
  char name[256];
  if (avail < growth)
    return user_error(e, "not enough free space to lay out '%s': needs %llu MiB more, %llu MiB free", shown_name(name, sizeof(name), path),
                      (unsigned long long)((growth + (1 << 20) - 1) >> 20), (unsigned long long)(avail >> 20));
  return 0;
}

static int refuse_link(const char *path, struct job_error *e) {
  char target[4096];
  ssize_t n = readlink(path, target, sizeof(target) - 1);
  target[n < 0 ? 0 : n] = '\0';
  char name[128], to[128];
  return user_error(e, "refusing to write through symlink '%s' -> '%s' (use --force to replace the link "
                    "with a new file; its target is never written)", shown_name(name, sizeof(name), path),
                    shown_name(to, sizeof(to), target));
}

/* A new file (or the replacement of a symlink): laid out under a temp name, marked, renamed. */
static int create_file(const struct job_spec *spec, uint64_t size, struct job_result *res,
                       int replace_link, job_progress_fn progress, void *arg) {
  struct job_error *e = &res->error;
  char temp[4096];
  char *copy = strdup(spec->filename);
  if (copy == NULL) return errno_error(e, ENOMEM, "strdup");
  char *base = basename(copy);
  char *dcopy = strdup(spec->filename);
  if (dcopy == NULL) {
    free(copy);
    return errno_error(e, ENOMEM, "strdup");
  }
  int n = snprintf(temp, sizeof(temp), "%s/.%s.iolab-%ld.tmp", dirname(dcopy), base, (long)getpid());
  free(copy);
  free(dcopy);
  if (n >= (int)sizeof(temp)) return errno_error(e, ENAMETOOLONG, "open");
  int fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return errno_error(e, errno, "open");
  int ret = write_pattern(spec, fd, 0, size, &res->laid_out_bytes, e, progress, arg);
  close(fd);
  if (ret == 0) {
    layout_mark_set(temp, MARK_STATE_PATTERN);
    res->owned = 1;
    if (replace_link) ret = rename(temp, spec->filename) < 0 ? errno_error(e, errno, "rename") : 0;
    else ret = renameat2(AT_FDCWD, temp, AT_FDCWD, spec->filename, RENAME_NOREPLACE) < 0 ? errno_error(e, errno, "rename") : 0;
  }
  if (ret != 0) {
    unlink(temp);  /* nothing of this run stays behind */
    if (ret == -2) res->layout_removed = 1;
    return ret == -2 ? -2 : -1;
  }
  return 0;
}

int layout_prepare(const struct job_spec *spec, uint64_t *size, struct job_result *res,
                   job_progress_fn progress, void *arg) {
  struct job_error *e = &res->error;
  const char *path = spec->filename;
  struct stat st, lst;
  int exists = 1, is_link = lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode);
  res->laid_out_bytes = 0;
  char name[256];
  if (stat(path, &st) < 0) {
    if (errno != ENOENT) return errno_error(e, errno, "stat");
    exists = 0;
  }
  if (exists && S_ISDIR(st.st_mode)) return errno_error(e, EISDIR, "open");
  if (exists && S_ISBLK(st.st_mode)) return block_device_size(spec, size, e);
  /* fio's steadystate example writes /dev/null and reads /dev/zero: nothing to lay out, nothing a
   * write can harm, any size (major 1: the kernel's memory devices, minor 3 null, 5 zero) */
  if (exists && S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 && (minor(st.st_rdev) == 3 || minor(st.st_rdev) == 5)) {
    *size -= *size % spec->bs;
    return *size < spec->bs ? user_error(e, "size is smaller than one block (bs %u)", spec->bs) : 0;
  }
  if (exists && !S_ISREG(st.st_mode))
    return user_error(e, "'%s' is neither a regular file nor a block device", shown_name(name, sizeof(name), path));

  if (is_link && job_writes(spec->rw) && !spec->force) return refuse_link(path, e);

  enum mark_state state = exists ? layout_mark_check(path, &st) : MARK_NONE;
  int owned = state != MARK_NONE;
  res->owned = owned;
  /* a verify_pattern job checks the bytes a job wrote, never the layout's offset pattern */
  int need_pattern = spec->verify && job_reads(spec->rw) && spec->verify_pattern_len == 0;
  uint64_t current = exists ? (uint64_t)st.st_size : 0;
  /* no size asked for: a file iolab did not create is used at its own size from the job's offset
   * on, as fio takes it, --force or not (--force lets a job write into it, never grow it unasked) */
  if (exists && !owned && spec->size_is_default) *size = current > spec->offset ? current - spec->offset : 0;

  if (exists && !owned && !spec->force) {
    if (job_writes(spec->rw))
      return user_error(e, "refusing to write into '%s': iolab did not create it, or it changed since "
                        "(use --force to allow)", shown_name(name, sizeof(name), path));
    if (need_pattern)
      return user_error(e, "--verify needs a file iolab laid out; '%s' was not created by iolab, or it changed "
                        "since (use another --filename, or --force to overwrite it)", shown_name(name, sizeof(name), path));
    if (current < spec->bs)
      return user_error(e, "'%s' is smaller than one block (%llu bytes < bs %u)", shown_name(name, sizeof(name), path),
                        (unsigned long long)current, spec->bs);
    if (!spec->size_is_default && *size > current) {
      /* measuring the few blocks there are would print a rate for a job nobody asked for */
      char asked[32];
      return user_error(e, "'%s' holds %llu bytes, less than --size %llu (%s): iolab lays out only files it "
                        "created (give --size %llu or less, or a --filename iolab may create)", shown_name(name, sizeof(name), path),
                        (unsigned long long)current, (unsigned long long)*size, size_text(asked, sizeof(asked), *size),
                        (unsigned long long)current);
    }
  }
  /* the file is laid out at the size asked for, as fio does (size=10000 bs=4k: 10000 bytes);
   * the job's I/O covers its whole blocks */
  uint64_t file_size = spec->file_size != 0 ? spec->file_size : *size + spec->offset;
  if (*size + spec->offset > file_size) *size = file_size > spec->offset ? file_size - spec->offset : 0;  /* filesize below size */
  *size -= *size % spec->bs;
  if (*size < spec->bs) return user_error(e, "size is smaller than one block (bs %u)", spec->bs);

  uint64_t from = need_pattern && state != MARK_STATE_PATTERN ? 0 : current & ~(uint64_t)7;
  int needs_write = job_writes(spec->rw) || from < file_size;
  if (is_link && needs_write) {
    if (!spec->force) return refuse_link(path, e);
    if (check_space(path, 0, file_size, e) < 0) return -1;
    return create_file(spec, file_size, res, 1, progress, arg);
  }
  if (from >= file_size) return 0;
  if (!exists) {
    if (check_space(path, 0, file_size, e) < 0) return -1;
    return create_file(spec, file_size, res, 0, progress, arg);
  }
  if (file_size > current && check_space(path, 1, file_size - current, e) < 0) return -1;
  int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return errno_error(e, errno, "open");
  int ret = write_pattern(spec, fd, from, file_size, &res->laid_out_bytes, e, progress, arg);
  if (ret == -2 && from >= current) {
    /* stopped while extending: give the file back its former size, which still holds its data */
    if (ftruncate(fd, (off_t)current) == 0) res->layout_removed = 1;
  }
  close(fd);
  if (owned) {
    enum mark_state now = from == 0 && ret == 0 ? MARK_STATE_PATTERN :
                          state == MARK_STATE_PATTERN && (ret == 0 || res->layout_removed) ? MARK_STATE_PATTERN :
                          MARK_STATE_WRITTEN;
    layout_mark_set(path, now);
  }
  return ret;
}

/* Lays out the job's file, or each of its files (fio's filename=a:b) at an equal share of its
 * size, as fio's size / nr_files; the job then addresses what the shortest one holds in each.
 * A stop removes the files this call created before the one being laid out, too. */
int layout_job(const struct job_spec *spec, uint64_t *size, struct job_result *res, job_progress_fn progress,
                      void *arg) {
  if (spec->ops->flags & ENGINE_DISKLESS) {  /* a diskless engine (null) addresses its size with no file behind it, as fio's */
    *size -= *size % spec->bs;
    return 0;
  }
  if (spec->nfiles < 2) return layout_prepare(spec, size, res, progress, arg);
  uint64_t least = UINT64_MAX, laid = 0;
  int owned = 1;
  int created[spec->nfiles];
  for (unsigned i = 0; i < spec->nfiles; i++) {
    struct job_spec one = *spec;
    one.filename = spec->filenames[i];
    one.filenames = NULL;
    one.nfiles = 0;
    one.size = spec->size / spec->nfiles;
    uint64_t got = one.size;
    created[i] = access(one.filename, F_OK) != 0;
    int r = layout_prepare(&one, &got, res, progress, arg);
    laid += res->laid_out_bytes;
    res->laid_out_bytes = laid;
    if (r == -2 && res->layout_removed)
      for (unsigned k = 0; k < i; k++)
        if (created[k]) (void)unlink(spec->filenames[k]);
    if (r != 0) return r;
    owned &= res->owned;
    if (got < least) least = got;
  }
  res->owned = owned;
  *size = least * spec->nfiles;
  return 0;
}
