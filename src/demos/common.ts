// Small helpers the demos share: looping vectored writes over short transfers, shm names, and
// Ctrl-C/SIGTERM during a wait. (Showing bytes on a terminal is src/show-bytes.ts.)
import { UserError } from '../cli-util.js';
import { interruptedBy, interruption, markInterrupted } from '../interrupt.js';
import { constants } from '../native.js';

/** How many buffers one readv/writev may take (Linux's IOV_MAX). */
export const iovMax = constants.IOV_MAX;

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
 * number of calls it took. `offsetNow`: where fd's offset is known to be (a new file: 0); the
 * calls after a short write then say where to write, since an io_uring write at the current
 * offset that came back short leaves the offset where it was (seen on a full tmpfs: the next
 * write went over the same bytes and reported them written).
 */
export async function writeAllVectored(write: VectoredWrite, fd: number, buffers: Uint8Array[],
  position?: number, offsetNow?: number): Promise<{ bytes: number; calls: number }> {
  let pending = buffers.filter((b) => b.byteLength > 0);
  let bytes = 0;
  let calls = 0;
  while (pending.length > 0) {
    const at = position ?? (calls > 0 && offsetNow !== undefined ? offsetNow : undefined);
    const n = await write(fd, pending.slice(0, iovMax), at === undefined ? undefined : at + bytes);
    calls++;
    if (n <= 0) throw new Error(`writev wrote ${n} bytes`);
    bytes += n;
    pending = remainingAfter(pending, n);
  }
  return { bytes, calls };
}

/** Shm names as the user typed them: a leading '/' is added when missing ("demo" -> "/demo"). */
export function shmName(name: string): string {
  // the name the user typed, not the '/' added to it
  if (name === '' || name === '/') throw new UserError('the shared-memory object\'s name is empty: name one, e.g. demo');
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
