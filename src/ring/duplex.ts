// RingSocket's implementation: a node:stream Duplex over a connected socket on a Ring, with
// enough of net.Socket's surface that code written for sockets (node:http, stream.pipeline,
// tls) runs on it. Reading is a RingStream (one multishot recv into a shared BufferRing);
// writing goes through the same stream's one send path (the stream core). Its public face and type are
// socket.ts's. See docs/api.md.
import type { DuplexOptions } from 'node:stream';
import { close, shutdown } from '../syscalls.js';
import type { BufferRing, Ring, RingStream } from './ring.js';
import { copyChunk, inBatch, writeLater, writeText } from './stream.js';
import type { RingSocketOptions } from './socket-options.js';
import { SocketSurface } from './socket-surface.js';
import { throwLater } from './stream-errors.js';

type Callback = (err?: Error | null) => void;

/** A node:stream Duplex over a connected stream socket `fd`, receiving and sending through
 * `ring`. Each chunk is copied out of the buffer ring and the buffer released at once, so a
 * consumer may keep chunks and the pool never waits on one. */
export class RingSocketDuplex extends SocketSurface {
  /** The socket. */
  readonly fd: number;
  /** The server that accepted it (onRing's), as net.Socket's `server`; null otherwise. */
  server: object | null = null;
  readonly #ring: Ring;
  readonly #pool: BufferRing;
  readonly #stream: RingStream;
  readonly #closeFd: boolean;
  #bytesRead = 0;
  #bytesWritten = 0;
  #paused = false; // the RingStream was paused because push() said the buffer is full
  #parked: number[] = []; // chunks that came while paused, still in the pool: id, length, ...
  #drained: Callback | undefined; // a write's or _final's callback, once the queue drains
  #eofPending = false;
  #inData = false; // a chunk of this socket is being handed to its readers
  #acking = false; // a write's callback runs from #runAcks
  #ack: Callback | undefined; // a write the kernel took, told once the handler that made it returns
  #sends = 0; // writes given to the stream so far
  #laterWaiting = false; // #drained is a write sent later (writeLater), not one the socket refused
  #sendAtOnce = false; // a peer that pipelines: its replies are never sent later
  #eofParked = false; // the EOF came behind parked chunks: told once they are pushed
  #timeoutMs = 0;
  #timer: NodeJS.Timeout | undefined; // armed for #timerMs; fires to no effect while #timeoutMs is 0
  #timerMs = 0;

  constructor(ring: Ring, fd: number, options: RingSocketOptions) {
    if (options === null || typeof options !== 'object') {
      throw Object.assign(new TypeError('The "options" argument must be of type object'), { code: 'ERR_INVALID_ARG_TYPE' });
    }
    const duplexOptions: DuplexOptions = { allowHalfOpen: options.allowHalfOpen ?? false, decodeStrings: false };
    if (options.readableHighWaterMark !== undefined) duplexOptions.readableHighWaterMark = options.readableHighWaterMark;
    if (options.writableHighWaterMark !== undefined) duplexOptions.writableHighWaterMark = options.writableHighWaterMark;
    super(duplexOptions);
    // Readable's maybeReadMore (a nextTick after each push, which calls read(0) and so _read) is
    // of no use here: chunks come whether _read is called or not, and _read only resumes a
    // paused stream, which a reader's read() calls anyway. Marked as running for good, it is
    // never scheduled: two nextTicks less per chunk (the second, 'readable''s, followed it).
    (this as unknown as { _readableState: { readingMore: boolean } })._readableState.readingMore = true;
    this.fd = fd;
    this.#ring = ring;
    this.#pool = options.bufferRing;
    this.#closeFd = options.closeFd ?? true;
    const pool = this.#pool;
    this.#stream = ring.recvMultishot(fd, pool, {
      data: (id, length) => {
        this.#bytesRead += length;
        if (this.#timeoutMs > 0) this.#timer?.refresh();
        if (!this.#paused) {
          // (nothing is parked then)
          this.#inData = true;
          try {
            this.#deliver(id, length);
          } finally {
            this.#inData = false;
          }
          return void this.#runAcks();
        }
        // Paused: what the kernel took before the pause landed (a burst can be megabytes, all
        // reaped at once) stays in the pool, uncopied, so JS holds at most the highWaterMark and
        // the chunk that crossed it; but the pool keeps half its buffers for the other sockets:
        // past that, the oldest parked chunks are copied out.
        const parked = this.#parked;
        parked.push(id, length);
        while (parked.length > 0 && pool.heldBuffers > pool.count >> 1) {
          const [oldest, bytes] = parked.splice(0, 2);
          this.#deliver(oldest, bytes);
        }
      },
      end: (err) => {
        if (err !== null) this.destroy(err);
        // The peer's EOF is handled once the loop turns, as net.Socket hears it in a libuv
        // callback of its own after the data's: the nextTicks the data's handlers queued run
        // first. In the same dispatch, node:http would see the socket end before the request it
        // just parsed did ('end' takes a few ticks), and abort it unanswered.
        else setImmediate(() => this.#peerEnded());
      },
      drained: () => {
        const callback = this.#drained;
        this.#drained = undefined;
        if (this.#eofPending) this.#tellEofWhenSent();
        const wasLater = this.#laterWaiting;
        this.#laterWaiting = false;
        const sends = this.#sends;
        this.#ack = callback;
        this.#runAcks();
        // The reply sent later let another write go at once (node:http's next pipelined reply):
        // this peer pipelines, and its replies waiting for a submit would make each chunk's
        // second reply wait a reap. They are offered at once from now on.
        if (wasLater && this.#sends !== sends) this.#sendAtOnce = true;
      },
    });
  }

  /** The peer's EOF, a loop turn after it came (see `end` above). */
  #peerEnded(): void {
    if (this.destroyed) return;
    if (this.#parked.length > 0) this.#eofParked = true;
    else if (this.#queued() === 0) this.#eof();
    // EOF while bytes wait to be sent: a peer's reset reads as EOF once the failing send
    // took the socket's error. The end is told once they are sent; a failed send makes it
    // an error instead, never an end (as net.Socket: 'error', 'close', no 'end').
    else {
      this.#eofPending = true;
      this.#tellEofWhenSent();
    }
  }

  // The EOF that waited for the queued bytes: told now if they are sent, else at the drain (a
  // write waiting for the highWaterMark hears it then too, a little later).
  #tellEofWhenSent(): void {
    let waiting = false;
    try {
      waiting = this.#stream.drainTo(0);
    } catch { /* the stream is closed: nothing waits */ }
    if (waiting) return;
    this.#eofPending = false;
    if (!this.destroyed) this.#eof();
  }

  // As net's: read(0) after the EOF, so that 'end' comes (and a socket that is done both ways
  // is destroyed) even when nobody reads what is buffered, or nothing is.
  #eof(): void {
    this.push(null);
    this.read(0);
  }

  /** Copies a chunk out of the pool (the buffer goes back at once: a consumer may keep the
   * chunk for good) and pushes it; false when the readable buffer is full (receiving pauses). */
  #deliver(id: number, length: number): boolean {
    const chunk = chunkBuffer(length);
    copyChunk(this.#pool, id, length, chunk);
    if (this.push(chunk)) return true;
    if (!this.#paused && !this.destroyed) {
      this.#paused = true;
      this.#stream.pause();
    }
    return false;
  }

  override _read(): void {
    const parked = this.#parked;
    let at = 0;
    let full = false;
    while (at < parked.length && !full && !this.destroyed) {
      full = !this.#deliver(parked[at], parked[at + 1]);
      at += 2;
    }
    parked.splice(0, at);
    if (full || this.destroyed) return;
    if (this.#eofParked) {
      this.#eofParked = false;
      if (this.#queued() === 0) this.#eof();
      else {
        this.#eofPending = true;
        this.#tellEofWhenSent();
      }
    } else if (this.#paused) {
      this.#paused = false;
      this.#stream.resume();
    }
  }

  // Parked chunks go back to the pool unread (the socket is done with).
  #releaseParked(): void {
    const parked = this.#parked;
    this.#parked = [];
    for (let i = 0; i < parked.length; i += 2) {
      try {
        this.#pool.release(parked[i]);
      } catch { /* the Ring or the pool is closed: it took them back */ }
    }
  }

  override _write(chunk: Buffer | string, encoding: BufferEncoding, callback: Callback): void {
    this.#send(callback, chunk, encoding);
  }

  override _writev(chunks: { chunk: Buffer | string; encoding: BufferEncoding }[], callback: Callback): void {
    this.#send(callback, undefined, undefined, chunks);
  }

  // Every write goes through the stream's one send path (the stream core's send policy: in
  // order, one send in flight; what nothing is ahead of is offered to the socket at once, the
  // rest copied into its queue). Writable hears the write is done once the kernel has every
  // byte of it, as net's callback says: at once when the socket took it all, else when the
  // queue drained. Bytes in the queue are not called written, since destroy() drops them.
  // Writable gathers what is written meanwhile and gives it to _writev as one send.
  //
  // A reply written while this socket's own chunk is read, in a dispatch of several sockets'
  // events (a loaded server), goes to the kernel with the others' when the dispatch returns: one
  // io_uring_enter for all their sends where each would be a send(2). Its callback comes once
  // the kernel took it, a reap later in the same loop turn. A reply to a lone chunk, or one
  // made later (after an await, or a pipelined one let go by the previous reply's callback),
  // is offered at once: at one connection that saves an SQE, a CQE and a call into JS.
  //
  // Strings in UTF-8 or Latin-1 (node:http's headers and bodies) are encoded by the addon, as
  // net.Socket's native handle writes them: no Buffer per write (decodeStrings: false).
  #send(callback: Callback, chunk?: Buffer | string, encoding?: BufferEncoding, chunks?: { chunk: Buffer | string; encoding: BufferEncoding }[]): void {
    let queued = 0;
    const batch = inBatch(this.#stream);
    const later = batch && this.#inData && !this.#sendAtOnce;
    this.#sends++;
    try {
      if (chunks === undefined) {
        queued = Math.max(0, this.#put(chunk!, encoding!, later));
      } else {
        for (const c of chunks) {
          const now = this.#put(c.chunk, c.encoding, later);
          if (now >= 0) queued = now;
        }
      }
    } catch (err) {
      callback(err as Error); // the Ring or the stream is closed, or a view could not be read
      return;
    }
    if (this.#timeoutMs > 0) this.#timer?.refresh();
    if (queued !== 0 && this.#stream.drainTo(0)) {
      this.#drained = callback;
      this.#laterWaiting = later;
    }
    else if (batch && (this.#inData || this.#acking)) this.#ack = callback;
    else callback();
  }

  // In a dispatch of several sockets' events, the callbacks of writes the kernel took while this
  // socket's events were handled, each once the handler that wrote returned: Writable then goes
  // on at once (what it buffered, node:http's next pipelined reply), where a callback inside
  // _write would wait for a nextTick, which runs only after the whole dispatch: every socket's
  // pipelined requests would be parsed and held before any second reply went (net.Socket's
  // nextTicks run after each socket's read). Alone in its dispatch, a socket's callbacks come as
  // net.Socket's, on the nextTick after the write. One that throws is reported as dispatch
  // reports one.
  #runAcks(): void {
    for (let callback = this.#ack; callback !== undefined; callback = this.#ack) {
      this.#ack = undefined;
      this.#acking = true;
      try {
        callback();
      } catch (err) {
        throwLater(err);
      } finally {
        this.#acking = false;
      }
    }
  }

  // One chunk to the stream; the bytes queued after it, or -1 for an empty chunk (node:http's
  // end() writes one), which is not sent.
  #put(chunk: Buffer | string, encoding: BufferEncoding, later: boolean): number {
    if (typeof chunk === 'string') {
      const latin1 = encoding === 'latin1' || encoding === 'binary';
      if (latin1 || encoding === 'utf8' || encoding === 'utf-8') {
        if (chunk.length === 0) return -1;
        const queued = writeText(this.#stream, chunk, latin1, later);
        this.#bytesWritten += latin1 ? chunk.length : Buffer.byteLength(chunk, 'utf8');
        return queued;
      }
      chunk = Buffer.from(chunk, encoding);
    }
    if (chunk.length === 0) return -1;
    const queued = later ? writeLater(this.#stream, chunk) : this.#stream.write(chunk);
    this.#bytesWritten += chunk.length;
    return queued;
  }

  override _final(callback: Callback): void {
    const shut = () => {
      try {
        shutdown(this.fd, 'write');
      } catch (err) {
        // The peer is gone already (as net.Socket, ENOTCONN is no error here).
        if ((err as { code?: string }).code !== 'ENOTCONN') return callback(err as Error);
      }
      callback();
    };
    // the FIN after every queued byte
    try {
      if (!this.#stream.drainTo(0)) return shut();
    } catch (err) {
      return callback(err as Error);
    }
    this.#drained = shut;
  }

  override _destroy(error: Error | null, callback: Callback): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#releaseParked();
    const waiting = this.#drained;
    this.#drained = undefined;
    // a write the socket did not finish: as Writable says of a destroyed stream's writes
    waiting?.(codeError('ERR_STREAM_DESTROYED', 'Cannot call write after a stream was destroyed'));
    if (this.#queued() > 0) {
      // bytes waiting for a peer that does not read would wait for good: dropped, as net's
      try {
        this.#ring.cancelFd(this.fd).catch(() => {});
      } catch { /* the Ring is closed: its ops are cancelled already */ }
    }
    // The fd is closed only once the kernel holds no op of it: a number closed under an op not
    // yet submitted could be reused by another file meanwhile.
    Promise.allSettled([this.#stream.close()]).then(() => {
      if (this.#closeFd) {
        try {
          close(this.fd);
        } catch (err) {
          error ??= err as Error;
        }
      }
      callback(error);
    }, callback);
  }

  // 'close' with net.Socket's argument: whether the socket ended with an error (Duplex's own
  // 'close' has none).
  override emit(event: string | symbol, ...args: unknown[]): boolean {
    if (event === 'close' && args.length === 0) return super.emit(event, this.errored !== null);
    return super.emit(event, ...args);
  }

  // Bytes waiting to be sent; none once the Ring is closed (its sends are cancelled).
  #queued(): number {
    try {
      return this.#stream.queuedBytes;
    } catch {
      return 0;
    }
  }

  /** Bytes received so far. */
  get bytesRead(): number {
    return this.#bytesRead;
  }
  /** Bytes sent so far (not counting what waits to be sent). */
  get bytesWritten(): number {
    return this.#bytesWritten;
  }

  /** Emits 'timeout' after `ms` without a byte received or sent (0: never), as net.Socket;
   * the socket stays open: the listener decides. Over 2^31-1 ms is that (a warning, as
   * net's); a negative, NaN or infinite `ms` is a RangeError. */
  setTimeout(ms: number, callback?: () => void): this {
    ms = timerDuration(ms);
    if (callback !== undefined && typeof callback !== 'function') {
      throw Object.assign(new TypeError('The "callback" argument must be of type function'), { code: 'ERR_INVALID_ARG_TYPE' });
    }
    this.#timeoutMs = ms;
    if (callback !== undefined) {
      if (ms === 0) this.removeListener('timeout', callback);
      else this.once('timeout', callback);
    }
    if (ms > 0 && !this.destroyed) {
      // kept after it fires: activity (refresh()) arms it again, as net.Socket's. node:http sets
      // its keep-alive timeout after every response and 0 at every request: the timer of the
      // same duration is armed again (refresh, no allocation), and one set to 0 stays as it is,
      // firing to no effect once.
      if (this.#timer !== undefined && this.#timerMs === ms) {
        this.#timer.refresh();
      } else {
        clearTimeout(this.#timer);
        this.#timerMs = ms;
        this.#timer = setTimeout(() => { if (this.#timeoutMs > 0) this.emit('timeout'); }, ms);
        this.#timer.unref();
      }
    }
    return this;
  }

  /** The idle timeout set by setTimeout(), in ms (0: none). */
  get timeout(): number {
    return this.#timeoutMs;
  }

  /** The socket keeps the event loop alive while it receives (the default). */
  ref(): this {
    if (!this.destroyed) this.#stream.ref();
    return this;
  }

  /** The socket no longer keeps the event loop alive: a process with nothing else to do exits,
   * as with net.Socket's unref() (an http.Agent's idle keep-alive sockets are unref()'d). */
  unref(): this {
    if (!this.destroyed) this.#stream.unref();
    return this;
  }

}

// Chunks are cut from shared slabs, as Buffer.allocUnsafe cuts small Buffers from its pool: an
// allocation of its own per chunk costs several times the copy (docs/api.md has the figures).
// A chunk kept keeps its slab alive.
const SLAB_SIZE = 64 << 10;
let slab = Buffer.allocUnsafeSlow(SLAB_SIZE);
let slabUsed = 0;

/** A Buffer of `length` bytes to copy a chunk into. */
function chunkBuffer(length: number): Buffer {
  if (length > SLAB_SIZE >> 1) return Buffer.allocUnsafeSlow(length);
  if (slabUsed + length > SLAB_SIZE) {
    slab = Buffer.allocUnsafeSlow(SLAB_SIZE);
    slabUsed = 0;
  }
  const chunk = slab.subarray(slabUsed, slabUsed + length);
  slabUsed = (slabUsed + length + 7) & ~7; // 8-byte aligned, as Buffer's pool
  return chunk;
}

const TIMEOUT_MAX = 2 ** 31 - 1;

/** setTimeout's `ms` as net.Socket takes it. */
function timerDuration(ms: unknown): number {
  if (typeof ms !== 'number') {
    throw Object.assign(new TypeError(`The "msecs" argument must be of type number. Received type ${typeof ms}`), { code: 'ERR_INVALID_ARG_TYPE' });
  }
  if (ms < 0 || !Number.isFinite(ms)) {
    throw Object.assign(new RangeError(`The value of "msecs" is out of range. It must be a non-negative finite number. Received ${ms}`), { code: 'ERR_OUT_OF_RANGE' });
  }
  if (ms > TIMEOUT_MAX) {
    process.emitWarning(`${ms} does not fit into a 32-bit signed integer.\nTimer duration was truncated to ${TIMEOUT_MAX}.`, 'TimeoutOverflowWarning');
    return TIMEOUT_MAX;
  }
  return ms;
}

function codeError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}
