// What every Promise-returning Ring method takes besides its own arguments, as fs.promises does:
// `signal` (an AbortSignal that cancels the method's ops in the kernel) and `timeout` (ms, a
// LINK_TIMEOUT linked to each op). The addon takes them through armOp just before the method
// is called and cancels through cancelOps (native/ring/js.cc); see docs/ring.md.
import { inspect } from 'node:util';

/** `signal` and `timeout`, taken by every Promise-returning Ring method. */
export interface OpOptions {
  /** Aborting it cancels the method's ops in the kernel (IORING_OP_ASYNC_CANCEL); the Promise
   * then rejects with an AbortError. One already aborted rejects at once, nothing queued. */
  signal?: AbortSignal;
  /** Milliseconds (> 0): each op gets an IORING_OP_LINK_TIMEOUT; one that fires rejects the
   * Promise with ETIMEDOUT. */
  timeout?: number;
  /** false: the op does not keep the event loop alive, as an unref()'d handle (default true). */
  ref?: boolean;
}

/** The rejection of an op whose AbortSignal was aborted: as fs.promises' (`name`
 * 'AbortError', `code` 'ABORT_ERR', `cause` the signal's reason). */
export class AbortError extends Error {
  readonly code = 'ABORT_ERR';
  constructor(message = 'The operation was aborted', options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'AbortError';
  }
}

/** The addon's side: armOp before the method, cancelOps when the signal fires. */
export interface Armable {
  armOp(ticket: number, timeoutMs: number, weak: boolean): void;
  cancelOps(ticket: number): void;
}

const abortError = (signal: AbortSignal) => new AbortError(undefined, { cause: signal.reason });

/** The end of Node's ERR_INVALID_ARG_TYPE message: what was received, in its words. */
export function received(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (typeof value === 'function') return `function ${value.name}`;
  if (typeof value === 'object') {
    const name = (value as object).constructor?.name;
    return name ? `an instance of ${name}` : inspect(value, { depth: -1 });
  }
  // a string over 28 characters is cut to 25 before it is quoted
  const cut = typeof value === 'string' && value.length > 28 ? `${value.slice(0, 25)}...` : value;
  return `type ${typeof value} (${inspect(cut, { colors: false })})`;
}

/** Node's ERR_INVALID_ARG_TYPE: a name with a dot is an options object's property. */
function invalidType(name: string, expected: string, value: unknown): TypeError {
  const kind = name.includes('.') ? 'property' : 'argument';
  return Object.assign(new TypeError(`The "${name}" ${kind} must be ${expected}. Received ${received(value)}`), { code: 'ERR_INVALID_ARG_TYPE' });
}

/** `signal` and `timeout` of `options`, each read once, checked as Node checks them. */
export function readOpOptions(options: unknown): { signal: AbortSignal | undefined; timeout: number; ref: boolean } {
  if (options === undefined) return { signal: undefined, timeout: 0, ref: true };
  if (options === null || typeof options !== 'object') throw invalidType('options', 'of type object', options);
  const { signal, timeout, ref } = options as OpOptions;
  if (ref !== undefined && typeof ref !== 'boolean') throw invalidType('options.ref', 'of type boolean', ref);
  if (signal !== undefined && (signal === null || typeof signal !== 'object' || !('aborted' in signal))) {
    throw invalidType('options.signal', 'an instance of AbortSignal', signal);
  }
  if (timeout !== undefined) {
    if (typeof timeout !== 'number') throw invalidType('options.timeout', 'of type number', timeout);
    if (!(timeout > 0 && timeout <= 2 ** 31 - 1)) {
      throw Object.assign(new RangeError(`The value of "options.timeout" is out of range. It must be > 0 and <= 2147483647. Received ${timeout}`), { code: 'ERR_OUT_OF_RANGE' });
    }
  }
  return { signal, timeout: timeout ?? 0, ref: ref ?? true };
}

let lastTicket = 0;

// The ops of one Ring under one signal share a ticket and one abort listener, which goes when the
// last of them settles: a long-lived signal over many ops at once gathers one listener per Ring
// (no MaxListenersExceededWarning), and one over ops in turn none.
interface SignalUse {
  ticket: number;
  pending: number;
  onAbort: () => void;
}
const uses = new WeakMap<Armable, WeakMap<AbortSignal, SignalUse>>();

function useSignal(ring: Armable, signal: AbortSignal): SignalUse {
  let bySignal = uses.get(ring);
  if (bySignal === undefined) uses.set(ring, (bySignal = new WeakMap()));
  let use = bySignal.get(signal);
  if (use === undefined) {
    const ticket = ++lastTicket;
    use = { ticket, pending: 0, onAbort: () => ring.cancelOps(ticket) };
    signal.addEventListener('abort', use.onAbort, { once: true });
    bySignal.set(signal, use);
  }
  use.pending++;
  return use;
}

function doneWithSignal(ring: Armable, signal: AbortSignal, use: SignalUse): void {
  if (--use.pending > 0) return;
  signal.removeEventListener('abort', use.onAbort);
  uses.get(ring)?.delete(signal);
}

/** `call` (one native method call, its arguments computed before: no user code may run
 * between armOp and the method) with `options`' signal and timeout: an aborted signal
 * rejects at once; else the addon is armed and the method called. An op that the kernel
 * cancelled after the abort (ECANCELED) rejects with an AbortError; one it had done by then
 * keeps its result. Never throws: whatever the call throws rejects. */
export function withOptions<T>(ring: Armable, options: unknown, call: () => Promise<T>): Promise<T> {
  let armed = false;
  let use: SignalUse | undefined;
  let signal: AbortSignal | undefined;
  try {
    const read = readOpOptions(options);
    signal = read.signal;
    if (signal?.aborted) return Promise.reject(abortError(signal));
    if (signal === undefined && read.timeout === 0 && read.ref) return call();
    use = signal === undefined ? undefined : useSignal(ring, signal);
    ring.armOp(use?.ticket ?? 0, read.timeout, !read.ref);
    armed = true;
    const promise = call();
    armed = false;
    if (signal === undefined || use === undefined) return promise;
    const s = signal;
    const u = use;
    return promise.then(
      (value) => {
        doneWithSignal(ring, s, u);
        return value;
      },
      (err: unknown) => {
        doneWithSignal(ring, s, u);
        if (!s.aborted || (err as { code?: unknown } | null)?.code !== 'ECANCELED') throw err;
        // a batch's error keeps its index and results: the reads done before the abort took
        // their bytes (and a recvmsg its fds), which are the caller's still
        const abort = abortError(s);
        const { index, results } = err as { index?: unknown; results?: unknown };
        if (Array.isArray(results)) {
          const mapped = results.map((r) => ((r as { code?: unknown } | null)?.code === 'ECANCELED' ? abort : r));
          Object.assign(abort, { index, results: mapped });
        }
        throw abort;
      },
    );
  } catch (err) {
    if (armed) ring.armOp(0, 0, false); // the call threw before its method took the control
    if (signal !== undefined && use !== undefined) doneWithSignal(ring, signal, use);
    return Promise.reject(err);
  }
}
