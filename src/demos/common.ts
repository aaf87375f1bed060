// Small helpers the demos share: showing bytes safely on a terminal, looping vectored writes
// over short transfers, shm names, and Ctrl-C/SIGTERM during a wait.
import { UserError } from '../cli-util.js';
import { interruptedBy, interruption, markInterrupted } from '../interrupt.js';
import { constants } from '../native.js';

/** How many buffers one readv/writev may take (Linux's IOV_MAX). */
export const iovMax = constants.IOV_MAX;

const controlEscapes: Record<number, string> = { 0: '\\0', 9: '\\t', 10: '\\n', 13: '\\r', 92: '\\\\' };
// Characters that could garble or spoof a terminal: controls, format characters (bidi
// overrides, zero-width), unassigned/private code points and line/paragraph separators.
const invisible = /[\p{C}\p{Zl}\p{Zp}]/u;

/**
 * Bytes as one line of visible text. Printable ASCII stays as is; backslash becomes `\\`;
 * NUL, tab, newline and carriage return become `\0 \t \n \r`; a complete UTF-8 sequence of a
 * printable character stays as that character; every other byte becomes `\xHH`. So a binary
 * file never garbles the terminal, and the bytes can be told back exactly from the text.
 */
export function showBytes(bytes: Uint8Array): string {
  let out = '';
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i];
    if (b in controlEscapes) {
      out += controlEscapes[b];
      i++;
    } else if (b >= 0x20 && b < 0x7f) {
      out += String.fromCharCode(b);
      i++;
    } else {
      const ch = utf8CharAt(bytes, i);
      if (ch !== undefined && !invisible.test(ch.text)) {
        out += ch.text;
        i += ch.length;
      } else {
        out += `\\x${b.toString(16).padStart(2, '0')}`;
        i++;
      }
    }
  }
  return out;
}

/** Text as one safe terminal line (see showBytes). */
export function showText(text: string): string {
  return showBytes(new TextEncoder().encode(text));
}

/** The well-formed (shortest form, no surrogate) multi-byte UTF-8 character starting at i. */
function utf8CharAt(bytes: Uint8Array, i: number): { text: string; length: number } | undefined {
  const b = bytes[i];
  let length: number;
  let cp: number;
  let min: number;
  if (b >= 0xc2 && b <= 0xdf) { length = 2; cp = b & 0x1f; min = 0x80; }
  else if (b >= 0xe0 && b <= 0xef) { length = 3; cp = b & 0x0f; min = 0x800; }
  else if (b >= 0xf0 && b <= 0xf4) { length = 4; cp = b & 0x07; min = 0x10000; }
  else return undefined;
  if (i + length > bytes.length) return undefined;
  for (let k = 1; k < length; k++) {
    const c = bytes[i + k];
    if ((c & 0xc0) !== 0x80) return undefined;
    cp = (cp << 6) | (c & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return undefined;
  return { text: String.fromCodePoint(cp), length };
}

/** Views of `buffers` with the first `done` bytes removed (what is left after a short transfer). */
export function remainingAfter(buffers: Uint8Array[], done: number): Uint8Array[] {
  const rest: Uint8Array[] = [];
  let skip = done;
  for (const buf of buffers) {
    if (skip >= buf.byteLength) {
      skip -= buf.byteLength;
      continue;
    }
    rest.push(skip > 0 ? buf.subarray(skip) : buf);
    skip = 0;
  }
  return rest;
}

/** One vectored write call: resolves to the bytes written (may be short). */
export type VectoredWrite = (fd: number, buffers: Uint8Array[], position?: number) => Promise<number>;

/**
 * Writes every byte of `buffers`, calling `write` again with what is left after a short write
 * (the first call usually does it all: then the demo made exactly one writev). Returns the
 * number of calls it took.
 */
export async function writeAllVectored(write: VectoredWrite, fd: number, buffers: Uint8Array[],
  position?: number): Promise<{ bytes: number; calls: number }> {
  let pending = buffers.filter((b) => b.byteLength > 0);
  let bytes = 0;
  let calls = 0;
  while (pending.length > 0) {
    const n = await write(fd, pending.slice(0, iovMax), position === undefined ? undefined : position + bytes);
    calls++;
    if (n <= 0) throw new Error(`writev wrote ${n} bytes`);
    bytes += n;
    pending = remainingAfter(pending, n);
  }
  return { bytes, calls };
}

/** Shm names as the user typed them: a leading '/' is added when missing ("demo" -> "/demo"). */
export function shmName(name: string): string {
  return name.startsWith('/') ? name : `/${name}`;
}

// ---- Ctrl-C and SIGTERM ----

/** Thrown when SIGINT/SIGTERM ends a wait; the program prints one line and exits 130. */
export class InterruptedError extends UserError {
  constructor(readonly signal: NodeJS.Signals) {
    super(`interrupted by ${signal}`, 130);
  }
}

/**
 * Runs `body` with a signal that aborts on the first SIGINT/SIGTERM (src/interrupt.ts), so
 * waits end with InterruptedError and `finally` blocks clean up before the process exits 130.
 */
export async function withInterrupts<T>(body: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const shared = interruption();
  const controller = new AbortController();
  const onAbort = () => {
    markInterrupted();
    controller.abort(new InterruptedError(interruptedBy() ?? 'SIGINT'));
  };
  if (shared.aborted) onAbort();
  else shared.addEventListener('abort', onAbort, { once: true });
  try {
    return await body(controller.signal);
  } finally {
    shared.removeEventListener('abort', onAbort);
  }
}
