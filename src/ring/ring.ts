// The TypeScript face of io_uring: class Ring over the addon's ring object (native/ring/js.cc,
// typed in native-ring.ts), which stays private to this module. Every op returns a Promise
// settled from Node's event loop, and takes `{ signal, timeout }` (op-options.ts); an async
// method rejects, never throws, as fs.promises'. See docs/ring.md.
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { native, type RecvResult } from '../native.js';
import { getsockname } from '../syscalls.js';
import { readvBatch, recvmsgBatch, sendmsgBatch, isFdNumber, type ReadvRequest, type ReadvBatchError, type ReadvScratch } from './batch.js';
import type { NativeRing, RingFeatures, RingStats } from './native-ring.js';
import { AbortError, readOpOptions, withOptions, type OpOptions } from './op-options.js';
import { BufferRing, endStreams, RingStream, streamsClosing, makeBufferRing, makeRingStream, type RecvHandlers, type RecvMultishotOptions } from './stream.js';

export { BufferRing, RingStream, AbortError };
export type { RecvHandlers, RecvMultishotOptions, RingFeatures, RingStats, OpOptions, ReadvRequest, ReadvBatchError };

/** Rejection of ops cancelled by ring.close(), and the error of a closed Ring's methods (a
 * rejected Promise from the async ones, thrown by the sync ones). */
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

/** Where ring.connect goes: a Unix socket path ('\0'-prefixed: abstract), or an IP address
 * { host, port } whose host is numeric IPv4/IPv6 or a name looked up with dns.lookup first. */
export type RingAddress = string | { host?: string; port: number };

const NativeRingClass = native.Ring as new (options?: RingOptions) => NativeRing;
const asyncDispose: typeof Symbol.asyncDispose = Symbol.asyncDispose ?? Symbol.for('nodejs.asyncDispose');

let nativeRingOf: (ring: Ring) => NativeRing;

/** A name (not a numeric IPv4/IPv6 address) looked up as node:net looks one up: dns.lookup,
 * in the socket's family. */
async function resolved(fd: number, host: string, port: unknown): Promise<{ host: string; port: unknown }> {
  let family: 4 | 6 | undefined;
  try {
    const name = getsockname(fd);
    if (typeof name === 'object') family = name.family === 'IPv6' ? 6 : 4;
  } catch {
    // not a socket: the connect says so
  }
  const { address } = await lookup(host, family === undefined ? {} : { family });
  return { host: address, port };
}

/** `work`, or an AbortError as soon as `signal` aborts (a lookup cannot be cancelled: what it
 * finds later is dropped), as net.connect settles at the abort. */
function settleAtAbort<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return work;
  const aborted = () => new AbortError(undefined, { cause: signal.reason });
  if (signal.aborted) {
    work.catch(() => {});
    return Promise.reject(aborted());
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(aborted());
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** One io_uring instance bound to this thread's event loop. */
export class Ring {
  readonly #ring: NativeRing;
  readonly #scratch: ReadvScratch = { positions: new Float64Array(32), viewCounts: new Int32Array(32) };
  /** `await using ring = new Ring()` closes it on leaving the block (Node 24 on; elsewhere
   * call it: it is close()). */
  declare readonly [Symbol.asyncDispose]: () => Promise<void>;

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
  /** True once close() was called (async methods then reject, sync ones throw, RingClosedError). */
  get closed(): boolean {
    return this.#ring.closed;
  }
  /** Ops queued or in the kernel, not yet settled. */
  get inFlight(): number {
    return this.#ring.inFlight;
  }

  /** IORING_OP_NOP. */
  nop(options?: OpOptions): Promise<void> {
    const ring = this.#ring;
    if (options !== undefined) return withOptions(ring, options, () => ring.nop());
    try { return ring.nop(); } catch (err) { return Promise.reject(err); }
  }
  /** IORING_OP_READ at position (omitted, null or -1: the file position). Resolves with bytes read. */
  read(fd: number, buffer: ArrayBufferView, position?: number | bigint | null, options?: OpOptions): Promise<number> {
    const ring = this.#ring;
    if (options !== undefined) return withOptions(ring, options, () => ring.read(fd, buffer, position));
    try { return ring.read(fd, buffer, position); } catch (err) { return Promise.reject(err); }
  }
  /** IORING_OP_WRITE. Resolves with bytes written. */
  write(fd: number, buffer: ArrayBufferView, position?: number | bigint | null, options?: OpOptions): Promise<number> {
    const ring = this.#ring;
    if (options !== undefined) return withOptions(ring, options, () => ring.write(fd, buffer, position));
    try { return ring.write(fd, buffer, position); } catch (err) { return Promise.reject(err); }
  }
  /** IORING_OP_READV. Resolves with bytes read; short reads as is. */
  readv(fd: number, buffers: ArrayBufferView[], position?: number | bigint | null, options?: OpOptions): Promise<number> {
    const ring = this.#ring;
    try {
      if (Array.isArray(buffers) && buffers.length === 1) {
        const one = buffers[0];
        return options === undefined ? ring.readvOne(fd, one, position) : withOptions(ring, options, () => ring.readvOne(fd, one, position));
      }
      return options === undefined ? ring.readv(fd, buffers, position) : withOptions(ring, options, () => ring.readv(fd, buffers, position));
    } catch (err) {
      return Promise.reject(err);
    }
  }
  /** IORING_OP_WRITEV. Resolves with bytes written; short writes as is. */
  writev(fd: number, buffers: ArrayBufferView[], position?: number | bigint | null, options?: OpOptions): Promise<number> {
    const ring = this.#ring;
    try {
      if (Array.isArray(buffers) && buffers.length === 1) {
        const one = buffers[0];
        return options === undefined ? ring.writevOne(fd, one, position) : withOptions(ring, options, () => ring.writevOne(fd, one, position));
      }
      return options === undefined ? ring.writev(fd, buffers, position) : withOptions(ring, options, () => ring.writev(fd, buffers, position));
    } catch (err) {
      return Promise.reject(err);
    }
  }
  /** IORING_OP_FSYNC (datasync: IORING_FSYNC_DATASYNC). */
  fsync(fd: number, options?: { datasync?: boolean } & OpOptions): Promise<void> {
    const ring = this.#ring;
    return withOptions(ring, options, () => ring.fsync(fd, options));
  }
  /** IORING_OP_SENDMSG: the buffers as one message, fds as SCM_RIGHTS, `credentials` attaches
   * this process's SCM_CREDENTIALS (as the sync sendmsg). Resolves with bytes sent. */
  sendmsg(fd: number, buffers: ArrayBufferView[], options?: { fds?: number[]; credentials?: boolean } & OpOptions): Promise<number> {
    const ring = this.#ring;
    return withOptions(ring, options, () => ring.sendmsg(fd, buffers, options));
  }
  /** IORING_OP_RECVMSG with MSG_CMSG_CLOEXEC; fds, truncation, credentials and `from` as the
   * sync recvmsg reports them (control space for controlFds fds, default 253). */
  recvmsg(fd: number, buffers: ArrayBufferView[], options?: { maxFds?: number; controlFds?: number } & OpOptions): Promise<RecvResult> {
    const ring = this.#ring;
    return withOptions(ring, options, () => ring.recvmsg(fd, buffers, options));
  }

  /** One IORING_OP_SENDMSG per message, all queued by this one call, settled together: resolves
   * with the bytes each message sent (in order), or rejects with the first error once every op
   * is done. Each distinct fd is dup'ed once for the whole batch. */
  sendmsgBatch(fd: number, messages: { buffers: ArrayBufferView[]; fds?: number[] }[], options?: { credentials?: boolean } & OpOptions): Promise<number[]> {
    try { return sendmsgBatch(this.#ring, fd, messages, options); } catch (err) { return Promise.reject(err); }
  }
  /** One IORING_OP_RECVMSG per element of `buffers`, queued by one call and settled together:
   * resolves with each op's RecvResult (in order), or rejects with the first error once every op
   * is done; then the fds the others received are closed, not handed over. */
  recvmsgBatch(fd: number, buffers: ArrayBufferView[][], options?: { maxFds?: number; controlFds?: number } & OpOptions): Promise<RecvResult[]> {
    try { return recvmsgBatch(this.#ring, fd, buffers, options); } catch (err) { return Promise.reject(err); }
  }
  /** One IORING_OP_READV per request, queued by this one call and settled together: resolves
   * with the bytes each read (in order; short reads as is). Every read that succeeded has been
   * copied into its buffers, also when another failed; then the Promise rejects with the first
   * failed op's error, a ReadvBatchError (`index`: its place, `results`: each op's bytes or Error). */
  readvBatch(fd: number, requests: ReadvRequest[], options?: OpOptions): Promise<number[]> {
    try { return readvBatch(this.#ring, this.#scratch, fd, requests, options); } catch (err) { return Promise.reject(err); }
  }
  /** One IORING_OP_CLOSE per fd, one Promise for all (rejects with the first error). */
  closeFds(fds: number[] | Int32Array, options?: OpOptions): Promise<void> {
    const ring = this.#ring;
    try {
      const list = Array.isArray(fds) && fds.every(isFdNumber) ? new Int32Array(fds) : fds;
      return options === undefined ? ring.closeFds(list) : withOptions(ring, options, () => ring.closeFds(list));
    } catch (err) {
      return Promise.reject(err);
    }
  }
  /** IORING_OP_ACCEPT with SOCK_CLOEXEC. Resolves with the new fd (the caller owns it). */
  accept(fd: number, options?: OpOptions): Promise<number> {
    const ring = this.#ring;
    if (options !== undefined) return withOptions(ring, options, () => ring.accept(fd));
    try { return ring.accept(fd); } catch (err) { return Promise.reject(err); }
  }
  /** IORING_OP_CONNECT to a Unix socket path ('\0'-prefixed: abstract) or an IP { host, port }
   * (host left out: the family's loopback). A host that is not a numeric address is looked up
   * with dns.lookup first, in the socket's family, as node:net does (the timeout counts from the
   * connect, not the lookup). Errors carry `address` and `port` (a path: `path`). */
  connect(fd: number, address: RingAddress, options?: OpOptions): Promise<void> {
    const ring = this.#ring;
    try {
      let to: unknown = address;
      if (address !== null && typeof address === 'object') {
        const { host, port } = address; // read once: the addon gets a plain copy
        if (typeof host === 'string' && host !== '' && isIP(host) === 0) {
          // the options read once, here: the connect after the lookup gets a plain copy
          const { signal, timeout, ref } = readOpOptions(options);
          const copy: OpOptions = { ...(signal ? { signal } : {}), ...(timeout ? { timeout } : {}), ref };
          return settleAtAbort(resolved(fd, host, port), signal).then((ip) => this.connect(fd, ip as RingAddress, copy));
        }
        to = host === undefined ? { port } : { host, port };
      }
      return withOptions(ring, options, () => ring.connect(fd, to));
    } catch (err) {
      return Promise.reject(err);
    }
  }
  /** IORING_OP_RECV. Resolves with bytes received (0: the peer closed a stream). `flags`:
   * `constants.MSG_*`. */
  recv(fd: number, buffer: ArrayBufferView, flags?: number, options?: OpOptions): Promise<number> {
    const ring = this.#ring;
    if (options !== undefined) return withOptions(ring, options, () => ring.recv(fd, buffer, flags));
    try { return ring.recv(fd, buffer, flags); } catch (err) { return Promise.reject(err); }
  }
  /** IORING_OP_SEND (MSG_NOSIGNAL added). Resolves with bytes sent. */
  send(fd: number, buffer: ArrayBufferView, flags?: number, options?: OpOptions): Promise<number> {
    const ring = this.#ring;
    if (options !== undefined) return withOptions(ring, options, () => ring.send(fd, buffer, flags));
    try { return ring.send(fd, buffer, flags); } catch (err) { return Promise.reject(err); }
  }
  /** IORING_OP_CLOSE of an fd (named closeFd so it does not clash with ring.close()). */
  closeFd(fd: number, options?: OpOptions): Promise<void> {
    const ring = this.#ring;
    return withOptions(ring, options, () => ring.closeFd(fd));
  }
  /** IORING_OP_SOCKET with SOCK_CLOEXEC. Resolves with the new fd. */
  socket(family: 'inet' | 'inet6' | 'unix', type?: 'stream' | 'dgram' | 'seqpacket', options?: OpOptions): Promise<number> {
    const ring = this.#ring;
    return withOptions(ring, options, () => ring.socket(family, type));
  }
  /** Cancels every op waiting on fd (they reject with ECANCELED). Resolves with how many. */
  cancelFd(fd: number, options?: OpOptions): Promise<number> {
    const ring = this.#ring;
    return withOptions(ring, options, () => ring.cancelFd(fd));
  }
  /** Registers a provided-buffer ring of `count` buffers (a power of two, at most 32768, the
   * kernel's limit) of `size` bytes each, for recvMultishot. It lives as long as the Ring.
   * Synchronous: throws. */
  setupBufRing(options: { count: number; size: number }): BufferRing {
    if (options === null || typeof options !== 'object') {
      throw Object.assign(new TypeError('The "options" argument must be of type object'), { code: 'ERR_INVALID_ARG_TYPE' });
    }
    return makeBufferRing(this.#ring, options.count, options.size, closedError);
  }
  /** A multishot recv on socket fd into bufferRing (re-armed when the kernel ends it; ENOBUFS
   * waits for a buffer to come back), with ordered sends on the same fd: handlers.data(id,
   * length) per chunk and handlers.end(err) once, called from the reap without a Promise.
   * Synchronous: throws. */
  recvMultishot(fd: number, bufferRing: BufferRing, handlers: RecvHandlers, options?: RecvMultishotOptions): RingStream {
    return makeRingStream(this.#ring, fd, bufferRing, handlers, options, closedError);
  }
  /** Sends what is queued to the kernel now (otherwise done before the loop next polls).
   * Synchronous: throws RingClosedError on a closed Ring. */
  submit(): void {
    this.#ring.submit();
  }
  /** Cancels what is in flight (those reject with RingClosedError), waits for the kernel to
   * give every op back, then frees the ring. Idempotent. */
  close(): Promise<void> {
    const ring = this.#ring;
    try {
      streamsClosing(ring);
      // Streams the addon freed with the ring end here (RingClosedError), their close() settled.
      return ring.close().then(() => endStreams(ring));
    } catch (err) {
      return Promise.reject(err);
    }
  }
}
Object.defineProperty(Ring.prototype, asyncDispose, {
  value: function (this: Ring) { return this.close(); },
  writable: true,
  configurable: true,
});

/** Tests only (not part of the public API): this Ring's close() and env teardown cancel one op
 * at a time, as on kernels before 5.19 where IORING_ASYNC_CANCEL_ANY is refused. */
export function ringTestRefuseCancelAny(ring: Ring): void {
  native.ringTestRefuseCancelAny(nativeRingOf(ring));
}

/** Internal (the Channel watching its peer's pidfd; not part of the public API): resolves
 * with the events once fd is readable (IORING_OP_POLL_ADD, POLLIN). */
export function ringPollIn(ring: Ring, fd: number): Promise<number> {
  return nativeRingOf(ring).pollIn(fd);
}

/** True when err is the one-sentence refusal of io_uring (EPERM/ENOSYS from io_uring_setup). */
export function isIoUringUnavailable(err: unknown): err is Error & { code: 'ERR_IOURING_UNAVAILABLE' } {
  return err instanceof Error && (err as { code?: string }).code === 'ERR_IOURING_UNAVAILABLE';
}
