/* The mark that makes a file iolab's: xattr user.iolab = "iolab-v2 <state> ino=… size=… mtime=…
 * sum=…", written when iolab is done with the file. It is trusted only while the file still has
 * that inode, size and mtime and its content at 16 sampled offsets still is what iolab left
 * there (the layout pattern in state "pattern", the recorded checksum in state "written"). */
#ifndef IOLAB_BENCH_LAYOUT_MARK_H
#define IOLAB_BENCH_LAYOUT_MARK_H

#include <sys/stat.h>

enum mark_state { MARK_NONE = 0, MARK_STATE_PATTERN, MARK_STATE_WRITTEN };

/* The state of path's mark, or MARK_NONE when it has none or the mark no longer describes it.
 * st: path's stat (following links). */
enum mark_state layout_mark_check(const char *path, const struct stat *st);
/* Records path as it is now. Best effort: a file system without user xattrs makes the file look
 * foreign next time. */
void layout_mark_set(const char *path, enum mark_state state);

#endif
