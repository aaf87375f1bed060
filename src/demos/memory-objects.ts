// Shared-memory objects and memfds as the demos use them: what an fd is (fstat type and size,
// the name /proc shows for it, its seals), reading the text at its start without ever risking
// SIGBUS, and checking that a size fits before an object is made that large.
//
// An object holds plain bytes: the text from offset 0, zero-filled to the object's size, so a
// C reader's printf("%s") of a mapping shows it. A reader takes the bytes up to the first NUL.
import { fstatSync, readlinkSync, statfsSync, type Stats } from 'node:fs';
import { freemem } from 'node:os';
import { UserError } from '../cli-util.js';
import { isErrnoException, native } from '../native.js';
import { formatBytes } from '../format.js';
import { plural } from '../numbers.js';
import type { DemoIo } from './io.js';

/** Bytes of the first pread while looking for the first NUL; each next one reads twice as
 * many, up to maxChunkBytes, so a short text costs one small read. */
const firstChunkBytes = 4096;
const maxChunkBytes = 1024 * 1024;

export interface FdDescription {
  /** The file type fstat reports: 'regular file', 'FIFO', 'socket', 'directory', ... */
  type: string;
  size: number;
  /** What /proc/self/fd shows for it: "/memfd:name (deleted)", "/dev/shm/x (deleted)", a path. */
  name: string;
  /** F_SEAL_* names in effect; undefined when the file cannot carry seals (or, for a file on
   * tmpfs that is no memfd, can never be sealed: only F_SEAL_SEAL). */
  seals?: string[];
}

function fileType(st: Stats): string {
  if (st.isFile()) return 'regular file';
  if (st.isDirectory()) return 'directory';
  if (st.isFIFO()) return 'FIFO';
  if (st.isSocket()) return 'socket';
  if (st.isCharacterDevice()) return 'character device';
  if (st.isBlockDevice()) return 'block device';
  return 'file of unknown type';
}

const sealNames = (): [number, string][] => [
  [native.seals.F_SEAL_SEAL, 'F_SEAL_SEAL'], [native.seals.F_SEAL_SHRINK, 'F_SEAL_SHRINK'],
  [native.seals.F_SEAL_GROW, 'F_SEAL_GROW'], [native.seals.F_SEAL_WRITE, 'F_SEAL_WRITE'],
  [native.seals.F_SEAL_FUTURE_WRITE, 'F_SEAL_FUTURE_WRITE'],
];

export function describeFd(fd: number): FdDescription {
  const st = fstatSync(fd);
  let name: string;
  try {
    name = readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    name = '?';
  }
  const bits = st.isFile() ? native.getSeals(fd) : undefined;
  const isMemfd = name.startsWith('/memfd:');
  const seals = bits === undefined || (bits === native.seals.F_SEAL_SEAL && !isMemfd) ? undefined
    : sealNames().filter(([bit]) => (bits & bit) !== 0).map(([, n]) => n);
  return { type: fileType(st), size: st.size, name, ...(seals ? { seals } : {}) };
}

export interface TextRead {
  /** The bytes from offset 0 up to the first NUL (not included), or all that was read. */
  text: Uint8Array;
  /** How the bytes were reached: a read-only mapping, pread(2), or not at all (why). */
  how: 'mmap' | 'pread' | 'not read';
  /** Bytes mapped, or read by pread. */
  bytes: number;
  /** What ended the text: its NUL, the end of the file, or the limit of what is read. */
  end: 'NUL' | 'end of file' | 'limit';
  /** Why it was read this way (one phrase), or why it was not read. */
  why: string;
}

/**
 * The text at the start of fd, at most `limit` bytes. Mapped (PROT_READ) only when the file is
 * sealed against shrinking, so no other process can cut it short under the mapping (touching a
 * mapped page past a file's end is a SIGBUS); read with pread otherwise, which a shrinking file
 * only makes short. Only regular files are read: a FIFO or socket could wait forever.
 */
export async function readText(fd: number, io: DemoIo, limit: number, about = describeFd(fd)): Promise<TextRead> {
  if (about.type !== 'regular file') {
    return { text: new Uint8Array(0), how: 'not read', bytes: 0, end: 'limit', why: `a ${about.type} is not read` };
  }
  if (about.seals?.includes('F_SEAL_SHRINK')) {
    // Sealed: the size can only stay or grow, so what fstat said is safe to map.
    const length = Math.min(about.size, limit);
    if (length === 0) return { text: new Uint8Array(0), how: 'not read', bytes: 0, end: 'end of file', why: 'it is empty' };
    const mapping = native.mmap(fd, length);
    try {
      const view = new Uint8Array(mapping);
      const nul = view.indexOf(0);
      return {
        text: view.slice(0, nul < 0 ? length : nul), how: 'mmap', bytes: length,
        end: nul >= 0 ? 'NUL' : length === about.size ? 'end of file' : 'limit', why: 'sealed against shrinking',
      };
    } finally {
      native.munmap(mapping);
    }
  }
  const why = about.seals ? 'not mapped: not sealed against shrinking' : 'not mapped: it cannot be sealed against shrinking';
  const parts: Uint8Array[] = [];
  let bytes = 0;
  for (let chunkBytes = firstChunkBytes; ; chunkBytes = Math.min(2 * chunkBytes, maxChunkBytes)) {
    const chunk = new Uint8Array(Math.min(chunkBytes, limit - bytes));
    if (chunk.byteLength === 0) return { text: join(parts), how: 'pread', bytes, end: 'limit', why };
    let n: number;
    try {
      n = await io.readv(fd, [chunk], bytes);
    } catch (err) {
      if (isErrnoException(err) && err.code === 'EBADF') {
        return { text: new Uint8Array(0), how: 'not read', bytes: 0, end: 'limit', why: 'the fd is not open for reading' };
      }
      throw err;
    }
    if (n === 0) return { text: join(parts), how: 'pread', bytes, end: 'end of file', why };
    bytes += n;
    const nul = chunk.subarray(0, n).indexOf(0);
    parts.push(chunk.subarray(0, nul < 0 ? n : nul));
    if (nul >= 0) return { text: join(parts), how: 'pread', bytes, end: 'NUL', why };
  }
}

function join(parts: Uint8Array[]): Uint8Array {
  return parts.length === 1 ? parts[0] : new Uint8Array(Buffer.concat(parts));
}

/** "mapped 4096 bytes read-only (sealed against shrinking)", "read 4096 bytes with pread (...)". */
export function describeRead(r: TextRead): string {
  if (r.how === 'not read') return `not read: ${r.why}`;
  const how = r.how === 'mmap' ? `mapped ${plural(r.bytes, 'byte')} read-only` : `read ${plural(r.bytes, 'byte')} with pread`;
  const ended = r.end === 'NUL' ? '' : r.end === 'end of file' ? ', no NUL before the end' : ', no NUL in them';
  return `${how} (${r.why})${ended}`;
}

/** "regular file, 4096 bytes (/memfd:x (deleted)), seals F_SEAL_SHRINK|F_SEAL_GROW" */
export function formatFd(d: FdDescription, show: (text: string) => string): string {
  const seals = d.seals === undefined ? '' : d.seals.length === 0 ? ', no seals' : `, seals ${d.seals.join('|')}`;
  return `${d.type}, ${plural(d.size, 'byte')} (${show(d.name)})${seals}`;
}

/** Free bytes of the tmpfs under /dev/shm (what shm_open objects are made of). */
export function shmFreeBytes(): number {
  const fs = statfsSync('/dev/shm');
  return fs.bavail * fs.bsize;
}

/**
 * Refuses an object size that could never be filled: above the free space of /dev/shm for a
 * shm_open object, above free memory for a memfd (which lives outside /dev/shm's limit).
 */
export function checkObjectSize(option: string, size: number, kind: 'shm' | 'memfd'): void {
  const free = kind === 'shm' ? shmFreeBytes() : freemem();
  if (size > free) {
    const where = kind === 'shm' ? '/dev/shm has' : 'this machine has';
    throw new UserError(`${option} ${formatBytes(size)} is more than ${where} free (${formatBytes(free)}); choose a smaller size`);
  }
}
