// What both sides of `iolab fdpass` agree on: the socket types, where they meet, and how long a
// message may be.
import { existsSync } from 'node:fs';
import { UserError } from '../cli-util.js';
import { showText } from '../show-bytes.js';
import { native } from '../native.js';
import { plural } from '../numbers.js';

export type FdpassType = 'dgram' | 'stream';
/** Longest message text either side handles (it also travels in the socket message). */
export const maxMessageBytes = 64 * 1024;
/** Unix socket paths: sun_path holds 108 bytes including the terminating NUL. */
export const maxSocketPathBytes = native.constants.UNIX_PATH_MAX;

/** Where both sides meet when no --socket is given. */
export function defaultSocketPath(): string {
  const runtimeDir = process.env.XDG_RUNTIME_DIR;
  // Only a folder that exists (an inherited XDG_RUNTIME_DIR after su/sudo may not).
  if (runtimeDir && existsSync(runtimeDir)) return `${runtimeDir.replace(/\/+$/, '')}/iolab-fdpass.sock`;
  return `/tmp/iolab-fdpass-${process.getuid?.() ?? 0}.sock`;
}

export function checkSocketPath(path: string): void {
  if (path === '') throw new UserError('the socket path is empty');
  const bytes = Buffer.byteLength(path);
  if (bytes > maxSocketPathBytes) {
    throw new UserError(`socket path is ${plural(bytes, 'byte')} long; Unix socket paths must be at most ${plural(maxSocketPathBytes, 'byte')}: ${showText(path)}`);
  }
}
