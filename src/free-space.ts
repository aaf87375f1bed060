// The check every command that fills a file of a size the user chose makes before writing a
// byte: the folder is there, and its file system has room (gen, bench api's temporary file;
// bench iops and latency lay out in C, native/bench/layout.c, with the same rule).
import { statfsSync } from 'node:fs';
import { formatBytes } from './format.js';
import { showText } from './show-bytes.js';
import { errnoText, UserError } from './user-error.js';

/** Bytes an unprivileged writer may still put in `folder`'s file system. */
export function freeBytes(folder: string): number {
  const fs = statfsSync(folder);
  return fs.bavail * fs.bsize;
}

/**
 * Throws the one-line refusal when `size` bytes for `what` (a user's word for the file) do not
 * fit in `folder`, or `folder` is missing: said in a user's words, not the syscall's.
 */
export function checkFreeSpace(what: string, folder: string, size: number): void {
  let free: number;
  try {
    free = freeBytes(folder);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') throw new UserError(`cannot write ${what}: no folder '${showText(folder)}'`);
    throw new UserError(`cannot write ${what}: folder '${showText(folder)}' (${errnoText(err)})`);
  }
  if (free < size) {
    throw new UserError(`not enough free space for ${what} in ${showText(folder)}: ${formatBytes(free)} free, ` +
      `${formatBytes(size)} needed`);
  }
}
