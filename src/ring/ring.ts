// The TypeScript face of io_uring: class Ring over the addon's ring object (native/ring/js.cc),
// which stays private to this module. Every op returns a Promise settled from Node's event loop.
// See docs/ring.md.
import { native, Received, type Credentials, type RecvResult } from '../native.js';
import { BufferRing, endStreams, RingStream, streamsClosing, type NativeStreamMethods, type RecvHandlers, type RecvMultishotOptions } from './stream.js';

export { BufferRing, RingStream };
export type { RecvHandlers, RecvMultishotOptions };

/** Rejection of ops cancelled by ring.close(), and the error thrown by a closed Ring's methods. */
export class RingClosedError extends Error {
  readonly code = 'ERR_RING_CLOSED';
  constructor(message = 'the Ring is closed') {
    super(message);
    this.name = 'RingClosedError';
  }
}
native.ringSetClosedErrorClass(RingClosedError);
const closedError = () => new RingClosedError();

export interface RingOptions {
  /** SQ entries (rounded up to a power of two by the kernel). Default 256. */
  entries?: number;
  /** CQ entries (>= entries); default twice the SQ. */
  cqEntries?: number;
  /** Ask for a kernel SQ polling thread (IORING_SETUP_SQPOLL). */
  sqpoll?: boolean;
}

/** Which setup flags the kernel accepted (the first of DEFER_TASKRUN, COOP_TASKRUN, none). */
export interface RingFeatures {
  deferTaskrun: boolean;
  singleIssuer: boolean;
  coopTaskrun: boolean;
  taskrunFlag: boolean;
  submitAll: boolean;
  sqpoll: boolean;
  sqEntries: number;
  cqEntries: number;
}

/** Counters for tests and benchmarks. */
export interface RingStats {
  /** io_uring_submit calls (each one io_uring_enter at most). */
  submitCalls: number;
  /** SQEs the kernel took. */
  sqesSubmitted: number;
  /** CQEs handled. */
  cqesReaped: number;
  /** Ops that waited in the native backlog because the SQ was full. */
  overflowQueued: number;
  /** Times the CQ had overflowed (kernel-side backlog) and was flushed. */
  cqOverflows: number;
  /** Cancels queued one per op by close() or env teardown, where the kernel refused
   * IORING_ASYNC_CANCEL_ANY (kernels before 5.19); 0 where one cancel took them all. */
  cancelOps: number;
  /** Stream recvs that ended with ENOBUFS: the buffer ring was empty (each waits for a buffer
   * to come back). */
  recvNoBuffers: number;
  /** Streams that took the slot of a finished stream (its events all handed out first). */
  streamSlotsReused: number;
}

export type RingAddress = string | { host: string; port: number };

/** One read of a readvBatch: IORING_OP_READV into `buffers` at `position` (omitted, null or -1:
 * the file position). */
export interface ReadvRequest {
  buffers: ArrayBufferView[];
  position?: number | bigint | null;
}

// The addon's ring object: its methods are the native entry points the class below calls.
// readvOne/writevOne take the one buffer of the common case (reading a list from C++ costs three
// calls back into JS per op); the batches' flat forms take every view in one Array and the
// fds and counts in Int32Arrays, and return a packed result, so that no property is read or set
// from C++ per message. The object forms (sendmsgBatch, recvmsgBatch) check everything and say
// what is wrong: what does not have the expected shape goes there.
type Packed = [Float64Array, ({ credentials?: Credentials; from?: string } | undefined)[] | undefined];
type Position = number | bigint | null | undefined;
interface NativeRing extends NativeStreamMethods {
  readonly features: RingFeatures;
  readonly stats: RingStats;
  readonly closed: boolean;
  readonly inFlight: number;
  nop(): Promise<void>;
  read(fd: number, buffer: ArrayBufferView, position: Position): Promise<number>;
  write(fd: number, buffer: ArrayBufferView, position: Position): Promise<number>;
  readv(fd: number, buffers: unknown, position: Position): Promise<number>;
  writev(fd: number, buffers: unknown, position: Position): Promise<number>;
  readvOne(fd: number, buffer: unknown, position: Position): Promise<number>;
  writevOne(fd: number, buffer: unknown, position: Position): Promise<number>;
  fsync(fd: number, options: unknown): Promise<void>;
  sendmsg(fd: number, buffers: unknown, options: unknown): Promise<number>;
  recvmsg(fd: number, buffers: unknown, options: unknown): Promise<RecvResult>;
  sendmsgBatch(fd: number, messages: unknown, options: unknown): Promise<number[]>;
  recvmsgBatch(fd: number, buffers: unknown, options: unknown): Promise<RecvResult[]>;
  sendmsgBatchFlat(fd: number, views: unknown[], viewCounts: Int32Array, fds: Int32Array, fdCounts: Int32Array, credentials: unknown): Promise<Packed>;
  recvmsgBatchFlat(fd: number, views: unknown[], viewCounts: Int32Array, maxFds: unknown, controlFds: unknown): Promise<Packed>;
  closeFds(fds: unknown): Promise<void>;
  readvBatch(fd: number, requests: unknown): Promise<Int32Array>;
  readvBatchFlat(fd: number, views: unknown[], viewCounts: Int32Array | undefined, positions: Float64Array, count: number, ...spread: unknown[]): Promise<Int32Array>;
  accept(fd: number): Promise<number>;
  connect(fd: number, address: unknown): Promise<void>;
  recv(fd: number, buffer: ArrayBufferView, flags: number | undefined): Promise<number>;
  send(fd: number, buffer: ArrayBufferView, flags: number | undefined): Promise<number>;
  closeFd(fd: number): Promise<void>;
  socket(family: unknown, type: unknown): Promise<number>;
  cancelFd(fd: number): Promise<number>;
  submit(): void;
  close(): Promise<void>;
}
const NativeRingClass = native.Ring as new (options?: RingOptions) => NativeRing;

/** An fd as the addon takes one: an integer in [0, 2^31-1]. */
function isFdNumber(f: unknown): f is number {
  return typeof f === 'number' && (f | 0) === f && f >= 0;
}

// A plain loop: cheaper than Array.from's iterator, and than setting elements from C++.
function toNumbers(bytes: Int32Array): number[] {
  const out: number[] = [];
  for (let i = 0; i < bytes.length; i++) out.push(bytes[i]);
  return out;
}

let nativeRingOf: (ring: Ring) => NativeRing;

/** One io_uring instance bound to this thread's event loop. */
export class Ring {
  readonly #ring: NativeRing;
  // readvBatch's scratch arrays, reused from call to call (the addon copies them).
  #positions: Float64Array | undefined = new Float64Array(32);
  #viewCounts: Int32Array | undefined = new Int32Array(32);

  static {
    nativeRingOf = (ring) => ring.#ring;
  }

  constructor(options?: RingOptions) {
    this.#ring = new NativeRingClass(options);
  }

  /** Which setup flags the kernel accepted. */
  get features(): RingFeatures {
    return this.#ring.features;
  }
  /** Counters for tests and benchmarks. */
  get stats(): RingStats {
    return this.#ring.stats;
  }
  /** True once close() was called (methods then throw RingClosedError). */
  get closed(): boolean {
    return this.#ring.closed;
  }
  /** Ops queued or in the kernel, not yet settled. */
  get inFlight(): number {
    return this.#ring.inFlight;
  }

  /** IORING_OP_NOP. */
  nop(): Promise<void> {
    return this.#ring.nop();
  }
  /** IORING_OP_READ at position (omitted or -1: the file position). Resolves with bytes read. */
  read(fd: number, buffer: ArrayBufferView, position?: number | bigint | null): Promise<number> {
    return this.#ring.read(fd, buffer, position);
  }
  /** IORING_OP_WRITE. Resolves with bytes written. */
  write(fd: number, buffer: ArrayBufferView, position?: number | bigint | null): Promise<number> {
    return this.#ring.write(fd, buffer, position);
  }
  /** IORING_OP_READV. Resolves with bytes read; short reads as is. */
  readv(fd: number, buffers: ArrayBufferView[], position?: number | bigint | null): Promise<number> {
    const ring = this.#ring;
    return Array.isArray(buffers) && buffers.length === 1 ? ring.readvOne(fd, buffers[0], position) : ring.readv(fd, buffers, position);
  }
  /** IORING_OP_WRITEV. Resolves with bytes written; short writes as is. */
  writev(fd: number, buffers: ArrayBufferView[], position?: number | bigint | null): Promise<number> {
    const ring = this.#ring;
    return Array.isArray(buffers) && buffers.length === 1 ? ring.writevOne(fd, buffers[0], position) : ring.writev(fd, buffers, position);
  }
  /** IORING_OP_FSYNC (datasync: IORING_FSYNC_DATASYNC). */
  fsync(fd: number, options?: { datasync?: boolean }): Promise<void> {
    return this.#ring.fsync(fd, options);
  }
  /** IORING_OP_SENDMSG: the buffers as one message, fds as SCM_RIGHTS, `credentials` attaches
   * this process's SCM_CREDENTIALS (as the sync sendmsg). Resolves with bytes sent. */
  sendmsg(fd: number, buffers: ArrayBufferView[], options?: { fds?: number[]; credentials?: boolean }): Promise<number> {
    return this.#ring.sendmsg(fd, buffers, options);
  }
  /** IORING_OP_RECVMSG with MSG_CMSG_CLOEXEC; fds, truncation, credentials and `from` as the
   * sync recvmsg reports them (control space for controlFds fds, default 253). */
  recvmsg(fd: number, buffers: ArrayBufferView[], options?: { maxFds?: number; controlFds?: number }): Promise<RecvResult> {
    return this.#ring.recvmsg(fd, buffers, options);
  }

  /** One IORING_OP_SENDMSG per message, all queued by this one call, settled together: resolves
   * with the bytes each message sent (in order), or rejects with the first error once every op
   * is done. Each distinct fd is dup'ed once for the whole batch. */
  sendmsgBatch(fd: number, messages: { buffers: ArrayBufferView[]; fds?: number[] }[], options?: { credentials?: boolean }): Promise<number[]> {
    const ring = this.#ring;
    if (!Array.isArray(messages) || (options !== undefined && (options === null || typeof options !== 'object'))) {
      return ring.sendmsgBatch(fd, messages, options);
    }
    // Each property and length is read once: a getter may return something else the next time.
    const n = messages.length;
    const views: unknown[] = [];
    const fds: number[] = [];
    const viewCounts = new Int32Array(n);
    const fdCounts = new Int32Array(n);
    for (let i = 0; i < n; i++) {
      const m = messages[i] as { buffers?: unknown; fds?: unknown } | null;
      if (m === null || typeof m !== 'object') return ring.sendmsgBatch(fd, messages, options);
      const list = m.buffers;
      const passed = m.fds;
      if (!Array.isArray(list) || (passed !== undefined && !Array.isArray(passed))) return ring.sendmsgBatch(fd, messages, options);
      const count = list.length;
      for (let k = 0; k < count; k++) views.push(list[k]);
      viewCounts[i] = count;
      if (passed !== undefined) {
        const nfds = passed.length;
        for (let k = 0; k < nfds; k++) {
          const f: unknown = passed[k];
          // anything but an fd number gets the object form's error
          if (!isFdNumber(f)) return ring.sendmsgBatch(fd, messages, options);
          fds.push(f);
        }
        fdCounts[i] = nfds;
      }
    }
    return ring.sendmsgBatchFlat(fd, views, viewCounts, new Int32Array(fds), fdCounts, options?.credentials).then(([bytes]) => Array.from(bytes));
  }

  /** One IORING_OP_RECVMSG per element of `buffers`, queued by one call and settled together:
   * resolves with each op's RecvResult (in order), or rejects with the first error once every op
   * is done; then the fds the others received are closed, not handed over. */
  recvmsgBatch(fd: number, buffers: ArrayBufferView[][], options?: { maxFds?: number; controlFds?: number }): Promise<RecvResult[]> {
    const ring = this.#ring;
    if (!Array.isArray(buffers) || (options !== undefined && (options === null || typeof options !== 'object'))) {
      return ring.recvmsgBatch(fd, buffers, options);
    }
    const n = buffers.length;
    const views: unknown[] = [];
    const viewCounts = new Int32Array(n);
    for (let i = 0; i < n; i++) {
      const list = buffers[i];
      if (!Array.isArray(list)) return ring.recvmsgBatch(fd, buffers, options);
      const count = list.length;
      for (let k = 0; k < count; k++) views.push(list[k]);
      viewCounts[i] = count;
    }
    const maxFds = options?.maxFds;
    const stride = 3 + (typeof maxFds === 'number' ? maxFds : 0);
    return ring.recvmsgBatchFlat(fd, views, viewCounts, maxFds, options?.controlFds).then(([numbers, extras]) => {
      const out: RecvResult[] = new Array(n);
      for (let i = 0, at = 0; i < out.length; i++, at += stride) {
        const count = numbers[at + 2];
        const fds = count === 0 ? [] : count === 1 ? [numbers[at + 3]] : Array.from(numbers.subarray(at + 3, at + 3 + count));
        const extra = extras?.[i];
        out[i] = new Received(numbers[at], fds, numbers[at + 1], extra?.credentials, extra?.from);
      }
      return out;
    });
  }

  /** One IORING_OP_READV per request, queued by this one call and settled together: resolves
   * with the bytes each read (in order; short reads as is). Every read that succeeded has been
   * copied into its buffers, also when another failed; then the Promise rejects with the first
   * failed op's error, with `index` (its place) and `results` (each op's bytes, or its Error). */
  readvBatch(fd: number, requests: ReadvRequest[]): Promise<number[]> {
    const ring = this.#ring;
    if (!Array.isArray(requests)) return ring.readvBatch(fd, requests).then(toNumbers);
    const n = requests.length;
    // The scratch arrays are this call's until the addon has copied them: a getter run below
    // that calls readvBatch again finds none and makes its own.
    let positions = this.#positions;
    let viewCounts = this.#viewCounts;
    this.#positions = this.#viewCounts = undefined;
    if (positions === undefined || viewCounts === undefined || positions.length < n) {
      positions = new Float64Array(Math.max(n, 32));
      viewCounts = new Int32Array(positions.length);
    }
    try {
      const views: unknown[] = [];
      let oneEach = true;
      for (let i = 0; i < n; i++) {
        const r = requests[i] as { buffers?: unknown; position?: unknown } | null;
        if (r === null || typeof r !== 'object') return ring.readvBatch(fd, requests).then(toNumbers);
        const list = r.buffers;
        const p = r.position;
        // anything else (a bigint position, no buffers array) gets the object form's checks
        if (!Array.isArray(list) || (typeof p !== 'number' && p !== undefined && p !== null)) return ring.readvBatch(fd, requests).then(toNumbers);
        positions[i] = typeof p === 'number' ? p : -1;
        const count = list.length;
        for (let k = 0; k < count; k++) views.push(list[k]);
        viewCounts[i] = count;
        if (count !== 1) oneEach = false;
      }
      const counts = oneEach ? undefined : viewCounts;
      // a small batch's views also as arguments: the addon gets them in one call, not one read each
      const flat = views.length <= 64 ? ring.readvBatchFlat(fd, views, counts, positions, n, ...views) : ring.readvBatchFlat(fd, views, counts, positions, n);
      return flat.then(toNumbers);
    } finally {
      this.#positions = positions;
      this.#viewCounts = viewCounts;
    }
  }

  /** One IORING_OP_CLOSE per fd, one Promise for all (rejects with the first error). */
  closeFds(fds: number[] | Int32Array): Promise<void> {
    return this.#ring.closeFds(Array.isArray(fds) && fds.every(isFdNumber) ? new Int32Array(fds) : fds);
  }
  /** IORING_OP_ACCEPT with SOCK_CLOEXEC. Resolves with the new fd (the caller owns it). */
  accept(fd: number): Promise<number> {
    return this.#ring.accept(fd);
  }
  /** IORING_OP_CONNECT to a Unix socket path ('\0'-prefixed: abstract) or a TCP { host, port }. */
  connect(fd: number, address: RingAddress): Promise<void> {
    return this.#ring.connect(fd, address);
  }
  /** IORING_OP_RECV. Resolves with bytes received (0: the peer closed a stream). */
  recv(fd: number, buffer: ArrayBufferView, flags?: number): Promise<number> {
    return this.#ring.recv(fd, buffer, flags);
  }
  /** IORING_OP_SEND (MSG_NOSIGNAL added). Resolves with bytes sent. */
  send(fd: number, buffer: ArrayBufferView, flags?: number): Promise<number> {
    return this.#ring.send(fd, buffer, flags);
  }
  /** IORING_OP_CLOSE of an fd (named closeFd so it does not clash with ring.close()). */
  closeFd(fd: number): Promise<void> {
    return this.#ring.closeFd(fd);
  }
  /** IORING_OP_SOCKET with SOCK_CLOEXEC. Resolves with the new fd. */
  socket(family: 'inet' | 'inet6' | 'unix', type?: 'stream' | 'dgram' | 'seqpacket'): Promise<number> {
    return this.#ring.socket(family, type);
  }
  /** Cancels every op waiting on fd (they reject with ECANCELED). Resolves with how many. */
  cancelFd(fd: number): Promise<number> {
    return this.#ring.cancelFd(fd);
  }
  /** Registers a provided-buffer ring of `count` buffers (a power of two, at most 32768, the
   * kernel's limit) of `size` bytes each, for recvMultishot. It lives as long as the Ring. */
  setupBufRing(options: { count: number; size: number }): BufferRing {
    if (options === null || typeof options !== 'object') {
      throw Object.assign(new TypeError('The "options" argument must be of type object'), { code: 'ERR_INVALID_ARG_TYPE' });
    }
    return new BufferRing(this.#ring, options.count, options.size, closedError);
  }
  /** A multishot recv on socket fd into bufferRing (re-armed when the kernel ends it; ENOBUFS
   * waits for a buffer to come back), with ordered sends on the same fd: handlers.data(id,
   * length) per chunk and handlers.end(err) once, called from the reap without a Promise. */
  recvMultishot(fd: number, bufferRing: BufferRing, handlers: RecvHandlers, options?: RecvMultishotOptions): RingStream {
    return new RingStream(this.#ring, fd, bufferRing, handlers, options, closedError);
  }
  /** Sends what is queued to the kernel now (otherwise done before the loop next polls). */
  submit(): void {
    this.#ring.submit();
  }
  /** Cancels what is in flight (those reject with RingClosedError), waits for the kernel to
   * give every op back, then frees the ring. Idempotent. */
  close(): Promise<void> {
    const ring = this.#ring;
    streamsClosing(ring);
    // Streams the addon freed with the ring end here (RingClosedError), their close() settled.
    return ring.close().then(() => endStreams(ring));
  }
}

/** Tests only (not part of the public API): this Ring's close() and env teardown cancel one op
 * at a time, as on kernels before 5.19 where IORING_ASYNC_CANCEL_ANY is refused. */
export function ringTestRefuseCancelAny(ring: Ring): void {
  native.ringTestRefuseCancelAny(nativeRingOf(ring));
}

/** True when err is the one-sentence refusal of io_uring (EPERM/ENOSYS from io_uring_setup). */
export function isIoUringUnavailable(err: unknown): err is Error & { code: 'ERR_IOURING_UNAVAILABLE' } {
  return err instanceof Error && (err as { code?: string }).code === 'ERR_IOURING_UNAVAILABLE';
}
