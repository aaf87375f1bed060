// The receiver's claim on its socket path. A lock file beside the path (PATH.lock, flock'ed)
// makes two receivers agree on who owns it: the one holding the lock may replace a stale socket
// file, the other is told the path is in use, and neither can remove the other's socket between
// looking at the path and binding it. The socket is created world-writable by bind(2) itself
// (under a umask), so no chmod can be sent through a symlink swapped in after the bind. Nothing
// is made under /dev, /proc or /sys.
import { closeSync, constants, fstatSync, lstatSync, openSync, unlinkSync, type Stats } from 'node:fs';
import { isErrnoException, native } from '../native.js';
import { dirname } from 'node:path';
import { UserError } from '../cli-util.js';
import { showText } from '../show-bytes.js';
import { refuseKernelFolder } from '../write-target.js';

const { O_RDONLY, O_CREAT, O_EXCL, O_NOFOLLOW } = constants;

export interface BoundPath {
  path: string;
  /** Removes the socket file (if it is still the one bound here) and the lock file, then unlocks. */
  release(): void;
}

/** The folder the user named in --socket is missing (the lock file is iolab's, not theirs to know). */
function noFolder(socketPath: string, code: 'ENOENT' | 'ENOTDIR'): UserError {
  return new UserError(`${showText(dirname(socketPath))} ${code === 'ENOENT' ? 'does not exist' : 'is not a folder'} (the folder of --socket ${showText(socketPath)})`);
}

/** Opens the lock file beside `socketPath`, creating it (0644) when missing; never through a symlink. */
function openLockFile(lockPath: string, socketPath: string): number {
  for (;;) {
    try {
      return openSync(lockPath, O_RDONLY | O_NOFOLLOW);
    } catch (err) {
      if (isErrnoException(err) && err.code === 'ELOOP') {
        throw new UserError(`${showText(lockPath)} is a symbolic link; left untouched (choose another --socket)`);
      }
      if (isErrnoException(err) && err.code === 'ENOTDIR') throw noFolder(socketPath, err.code);
      if (!isErrnoException(err) || err.code !== 'ENOENT') throw err;
    }
    try {
      return openSync(lockPath, O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o644);
    } catch (err) {
      if (isErrnoException(err) && (err.code === 'ENOENT' || err.code === 'ENOTDIR')) throw noFolder(socketPath, err.code);
      if (!isErrnoException(err) || err.code !== 'EEXIST') throw err; // made by another receiver just now
    }
  }
}

/** Holds PATH.lock exclusively, or says the path is in use. */
function lockPath(path: string): { fd: number; lockFile: string } {
  const lockFile = `${path}.lock`;
  for (;;) {
    const fd = openLockFile(lockFile, path);
    let held = false;
    try {
      const st = fstatSync(fd);
      if (!st.isFile()) throw new UserError(`${showText(lockFile)} exists and is not a lock file; left untouched (choose another --socket)`);
      if (!native.flock(fd, 'exclusive')) throw inUse(path);
      // A receiver that just exited removes its lock file before unlocking it: if ours is no
      // longer the one at the path, start again with the file that is there now.
      const now = lstatSync(lockFile, { throwIfNoEntry: false });
      if (now === undefined || now.ino !== st.ino || now.dev !== st.dev) continue;
      held = true;
      return { fd, lockFile };
    } finally {
      if (!held) closeSync(fd);
    }
  }
}

function inUse(path: string): UserError {
  return new UserError(`${showText(path)} is in use: another receiver is listening on it; left untouched (choose another --socket)`);
}

/** With the lock held: a socket file nobody is bound to is removed; a live one or any other file stays. */
function removeStaleSocket(path: string): void {
  const st = lstatSync(path, { throwIfNoEntry: false });
  if (st === undefined) return;
  if (!st.isSocket()) throw new UserError(`${showText(path)} exists and is not a socket; left untouched (choose another --socket)`);
  // A program that takes no lock may still listen there. A datagram probe connects without
  // side effects: a stream listener is not handed a connection.
  const probe = native.socket('unix', 'dgram', { nonBlocking: true });
  try {
    native.connect(probe, path);
  } catch (err) {
    if (isErrnoException(err) && (err.code === 'ECONNREFUSED' || err.code === 'ENOENT')) {
      try { unlinkSync(path); } catch (e) { if (!isErrnoException(e) || e.code !== 'ENOENT') throw e; }
      return;
    }
    if (!isErrnoException(err) || err.code !== 'EPROTOTYPE') throw err;
  } finally {
    native.close(probe);
  }
  throw inUse(path);
}

/** bind(2) with a umask that leaves the new socket file rw for everyone (0666). */
function bindWorldWritable(sock: number, path: string): void {
  const previous = process.umask(0o111);
  try {
    native.bind(sock, path);
  } finally {
    process.umask(previous);
  }
}

/**
 * Claims `path` for `sock`: takes the lock beside it, replaces a stale socket file, binds. Anyone
 * may connect (mode 0666): the receiver's credential check, not the file mode, decides who is
 * heard, so a sender of another user gets a clear refusal instead of EACCES.
 */
export function bindReceiverPath(sock: number, path: string): BoundPath {
  // a mistyped path under /dev would get a lock file and a socket there
  if (!lstatSync(path, { throwIfNoEntry: false })) refuseKernelFolder(path, '--socket: ');
  const lock = lockPath(path);
  let bound: Stats | undefined;
  const release = () => {
    if (bound) removeOwnSocket(path, bound);
    try { unlinkSync(lock.lockFile); } catch { /* already gone */ }
    closeSync(lock.fd); // unlocks
  };
  try {
    removeStaleSocket(path);
    bindWorldWritable(sock, path);
    bound = lstatSync(path);
  } catch (err) {
    release();
    throw err;
  }
  return { path, release };
}

/** Removes the socket file if it is still the one this receiver bound. */
function removeOwnSocket(path: string, bound: Stats): void {
  const now = lstatSync(path, { throwIfNoEntry: false });
  if (now && now.ino === bound.ino && now.dev === bound.dev) {
    try { unlinkSync(path); } catch { /* already gone */ }
  }
}
