// The one check every writing command (writev, gen; shm checks the object it opened) makes of
// the path a user named, before it writes: nothing there, or a regular file (touched only as
// the command's flags allow), or a symlink (refused; --force replaces the link itself, never
// its target). Anything else (a device node, a FIFO, a socket, a folder) is refused whatever
// the flags: replacing one is never what a user meant (/dev/null), and opening a FIFO to write
// waits for a reader.
import { lstatSync, readlinkSync, type Stats } from 'node:fs';
import { UserError } from './cli-util.js';
import { showText } from './show-bytes.js';

/** What the command was told it may do to an existing file. */
export interface WriteFlags {
  /** --force: replace an existing file, or a symlink itself. */
  replace?: boolean;
  /** --append: add to an existing file. */
  append?: boolean;
  /** The refusal for an existing regular file the flags do not allow touching. */
  existsMessage: string;
}

/** What kind of thing `st` is, as a user calls it ("a character device"); undefined for a
 * regular file or a symlink. */
function otherKind(st: Stats): string | undefined {
  if (st.isFile() || st.isSymbolicLink()) return undefined;
  if (st.isDirectory()) return 'a directory';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isSocket()) return 'a Unix socket';
  return 'not a file';
}

/** The refusal of anything that is not a regular file (no flag makes iolab write it); `why`
 * for a command that reads one. */
export function notRegularFile(path: string, st: Stats, why = 'iolab writes only regular files'): UserError | undefined {
  const kind = otherKind(st);
  if (kind === undefined) return undefined;
  if (st.isDirectory()) return new UserError(`${showText(path)} is a directory, not a file`);
  return new UserError(`${showText(path)} is ${kind}, not a regular file; left untouched (${why})`);
}

/** The same words for a symlink in every writing command (bench iops says them too). */
export function symlinkRefused(path: string): UserError {
  let target = '?';
  try { target = readlinkSync(path); } catch { /* replaced again meanwhile */ }
  return new UserError(`refusing to write through symlink '${showText(path)}' -> '${showText(target)}' ` +
    '(use --force to replace the link with a new file; its target is never written)');
}

/**
 * Checks what is at `path` before a command writes it. Returns its lstat (undefined when
 * nothing is there) or throws the one-line refusal. A command that then opens an existing path
 * checks the opened fd again with notRegularFile (the path may change in between).
 */
export function checkWriteTarget(path: string, flags: WriteFlags): Stats | undefined {
  let st: Stats;
  try {
    st = lstatSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const refusal = notRegularFile(path, st);
  if (refusal) throw refusal;
  if (st.isSymbolicLink()) {
    if (flags.replace) return st;
    throw symlinkRefused(path);
  }
  if (!flags.replace && !flags.append) throw new UserError(flags.existsMessage);
  return st;
}
