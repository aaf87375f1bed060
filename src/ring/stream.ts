// Provided-buffer rings and streams on a Ring (native/ring/bufring.{h,cc}): class BufferRing
// (the buffers, as views of one ArrayBuffer over the kernel's memory) and class RingStream (a
// multishot recv and its ordered sends). No Promise per chunk or per send: the addon hands
// every stream's events of one reap to `dispatch` below in one call, through an Int32Array.
// ring.ts makes them (Ring.setupBufRing, Ring.recvMultishot). See docs/ring.md.
import { badId, errnoError, illegalConstructor, throwLater } from './stream-errors.js';

/** The addon's methods this module calls (on the ring object, as ring.ts's NativeRing). */
export interface NativeStreamMethods {
  setupBufRing(count: number, size: number): [number, ArrayBuffer];
  streamsInit(dispatch: (this: object, count: number, fromLoop: boolean) => void, events: Int32Array): void;
  recvMultishot(fd: number, bufferRing: number, pauseAt: number): number;
  bufRelease(bufferRing: number, id: number): void;
  bufReleaseList(bufferRing: number, ids: Int32Array): void;
  bufReleaseMany(bufferRing: number, count: number): void;
  bufRingClose(bufferRing: number): boolean;
  streamSend(stream: number, id: number, length: number): void;
  streamWrite(stream: number, data: ArrayBufferView | string, later?: boolean, latin1?: boolean): number;
  streamDrain(stream: number, bytes: number): boolean;
  streamClose(stream: number): boolean;
  streamQueued(stream: number): number;
  streamHold(stream: number, paused: boolean): void;
  streamRef(stream: number, ref: boolean): void;
}

/** A Buffer where the program has Node's types (@types/node), a Uint8Array where it has none:
 * the package's types need none. */
export type NodeBuffer = typeof globalThis extends { Buffer: { alloc(size: number): infer B } } ? B : Uint8Array;

/** What a stream calls: `data` for each chunk, `end` once when receiving is over. */
export interface RecvHandlers {
  /** `length` bytes arrived in buffer `id` of the buffer ring: JS holds it from now until it
   * calls `bufferRing.release(id)` or `stream.send(id, ...)`. */
  data(id: number, length: number): void;
  /** Receiving is over: null at EOF; an Error otherwise (errno, with `syscall` 'recv' or
   * 'send' when a send failed; RingClosedError when the Ring closed). Called once. */
  end(err: Error | null): void;
  /** The bytes queued to send fell to what `stream.drainTo(bytes)` asked for. */
  drained?(): void;
}

export interface RecvMultishotOptions {
  /** Bytes queued to send on the stream above which receiving pauses (the recv is cancelled)
   * until half of them went out. Default 65536. */
  pauseAt?: number;
}

const DEFAULT_PAUSE_AT = 65536;
const EVENTS = 1024; // events per call into JS (more come in further calls)
const enum Event { Data = 1, End = 2, Closed = 3, Drained = 4 }
const END_CLOSED = -(1 << 30);

interface StreamTable {
  events: Int32Array;
  /** ring.close() was called: chunks not handed out yet go nowhere (the Ring takes their memory). */
  closing: boolean;
  streams: (RingStream | undefined)[];
  closedError: () => Error;
  /** A dispatch is running: chunks copied out (copyChunk) go back to the kernel at its end. */
  dispatching: boolean;
  /** Events the dispatch under way hands out (0 outside one). */
  batch: number;
  /** Pools with such buffers waiting to go back. */
  releasing: BufferRing[];
}
const tables = new WeakMap<object, StreamTable>();
let deliver: (s: RingStream, type: number, a: number, b: number) => void;
// Only ring.ts makes these (through makeBufferRing and makeRingStream): their constructors take
// this token, and throw ERR_ILLEGAL_CONSTRUCTOR without it, as Node's internal classes do.
const internal = Symbol('iolab.internal');
type BufferRingArgs = [ring: NativeStreamMethods & object, count: number, size: number, closedError: () => Error];
type RingStreamArgs = [ring: NativeStreamMethods & object, fd: number, pool: BufferRing, handlers: RecvHandlers, options: RecvMultishotOptions | undefined, closedError: () => Error];
let newBufferRing: (args: BufferRingArgs) => BufferRing;
let newRingStream: (args: RingStreamArgs) => RingStream;
/** ring.setupBufRing's BufferRing. */
export const makeBufferRing = (...args: BufferRingArgs): BufferRing => newBufferRing(args);
/** ring.recvMultishot's RingStream. */
export const makeRingStream = (...args: RingStreamArgs): RingStream => newRingStream(args);
let heldOf: (pool: BufferRing) => Uint8Array;
let heldCountOf: (pool: BufferRing) => Uint32Array;
let copyOut: (pool: BufferRing, id: number, length: number, into: Uint8Array) => void;
let releaseWaiting: (pool: BufferRing) => void;
let closedOf: (pool: BufferRing) => boolean;
let ringOf: (pool: BufferRing) => NativeStreamMethods;
let batchOf: (stream: RingStream) => number;
let writeOf: (stream: RingStream, data: ArrayBufferView | string, later: boolean, latin1: boolean) => number;

// One event to its stream. A handler that throws surfaces as an uncaught exception (on the next
// tick, so whatever called it goes on: the rest of a dispatch, the other streams' ends).
function deliverReporting(s: RingStream, type: number, a: number, b: number): void {
  try {
    deliver(s, type, a, b);
  } catch (err) {
    throwLater(err);
  }
}

// process._tickCallback: the nextTick queue's and the microtasks' run that Node makes after each
// callback from libuv (in every line from 20 to 26; undocumented, so looked for).
const runTicks = (process as unknown as { _tickCallback?: () => void })._tickCallback;

// The addon calls this with the ring object as `this` once per reap with events to give;
// `fromLoop`: the reap is libuv's callback, with no JS below it.
function dispatch(this: object, count: number, fromLoop: boolean): void {
  const table = tables.get(this);
  if (table === undefined) return;
  const { events, streams } = table;
  table.dispatching = true;
  table.batch = count;
  // As after each socket's read callback with net.Socket: what a handler queued (nextTicks,
  // Promises) runs before the next event, not after the batch (node:http's ticks of 1,000
  // pipelined requests kept them all alive for the GC to copy). A tick that throws stops that
  // for the batch; the addon reports the throw once every event is handed out.
  let ticks = fromLoop && count > 1 && typeof runTicks === 'function';
  let thrown: { err: unknown } | undefined;
  try {
    for (let i = 0, end = count * 4; i < end; i += 4) {
      const s = streams[events[i]];
      if (s === undefined || (table.closing && events[i + 1] === Event.Data)) continue;
      deliverReporting(s, events[i + 1], events[i + 2], events[i + 3]);
      if (!ticks) continue;
      try {
        runTicks!();
      } catch (err) {
        ticks = false;
        thrown = { err };
      }
    }
  } finally {
    table.dispatching = false;
    table.batch = 0;
    const pools = table.releasing;
    table.releasing = [];
    for (const pool of pools) releaseWaiting(pool);
  }
  if (thrown !== undefined) throw thrown.err;
}

/** Copies the first `length` bytes of held buffer `id` into `into` and gives the buffer back:
 * at once, or inside a dispatch with the others it copied out, in one call at its end. The
 * chunk handlers of RingSocket take each chunk so: a copy, and no call into the addon, per chunk. */
export function copyChunk(pool: BufferRing, id: number, length: number, into: Uint8Array): void {
  copyOut(pool, id, length, into);
}

/** True while the stream's Ring hands JS several streams' events in one call (a loaded server). */
export const inBatch = (stream: RingStream): boolean => batchOf(stream) > 1;

/** stream.write(data), not offered to the socket inside the call: the bytes go with the Ring's
 * next submit, one io_uring_enter for every stream written meanwhile. Returns the bytes queued. */
export const writeLater = (stream: RingStream, data: ArrayBufferView): number => writeOf(stream, data, true, false);

/** stream.write() of a string the addon encodes (UTF-8, or Latin-1): no Buffer is made for it. */
export const writeText = (stream: RingStream, text: string, latin1: boolean, later: boolean): number =>
  writeOf(stream, text, later, latin1);

/** Makes the ring object's stream table (once per Ring). */
function streamTable(ring: NativeStreamMethods & object, closedError: () => Error): StreamTable {
  let table = tables.get(ring);
  if (table === undefined) {
    table = { events: new Int32Array(EVENTS * 4), closing: false, streams: [], closedError, dispatching: false, batch: 0, releasing: [] };
    ring.streamsInit(dispatch, table.events);
    tables.set(ring, table);
  }
  return table;
}

/** ring.close() begins: no chunk is handed out from here on. */
export function streamsClosing(ring: object): void {
  const table = tables.get(ring);
  if (table !== undefined) table.closing = true;
}

/** After ring.close(): every stream still open ends (RingClosedError) and is closed, each
 * whatever the others' handlers throw. */
export function endStreams(ring: object): void {
  const table = tables.get(ring);
  if (table === undefined) return;
  const streams = table.streams;
  table.streams = [];
  for (const s of streams) if (s !== undefined) deliverReporting(s, Event.Closed, END_CLOSED, 0);
}

/** A provided-buffer ring registered on a Ring (IORING_REGISTER_PBUF_RING): `count` buffers
 * of `size` bytes the kernel fills as chunks arrive on the Ring's streams. */
export class BufferRing {
  /** Buffers in the ring (a power of two, at most 32768). */
  readonly count: number;
  /** Bytes per buffer. */
  readonly size: number;
  /** Its buffer group id (bgid) on the Ring. */
  readonly id: number;
  readonly #ring: NativeStreamMethods;
  readonly #table: StreamTable;
  readonly #memory: ArrayBuffer;
  readonly #views: (Uint8Array | undefined)[];
  readonly #held: Uint8Array; // 1 while JS holds the buffer (mirrors the addon's state)
  readonly #heldCount = new Uint32Array(1); // how many are 1 there (its streams count too)
  #whole: Buffer | undefined; // a Buffer over the whole memory, to copy chunks out of
  #waiting: Int32Array | undefined; // ids copied out in a dispatch, given back at its end
  #waitingCount = 0;
  #closed = false;

  static {
    heldOf = (pool) => pool.#held;
    heldCountOf = (pool) => pool.#heldCount;
    copyOut = (pool, id, length, into) => {
      pool.#check(id);
      pool.#whole ??= Buffer.from(pool.#memory);
      const start = id * pool.size;
      pool.#whole.copy(into, 0, start, start + length);
      if (!pool.#table.dispatching) return pool.release(id);
      pool.#held[id] = 0;
      pool.#heldCount[0]--;
      let waiting = pool.#waiting;
      if (waiting === undefined) {
        waiting = pool.#waiting = new Int32Array(pool.count);
        pool.#ring.bufReleaseList(pool.id, waiting); // given once: the addon reads it at each flush
      }
      if (pool.#waitingCount === 0) pool.#table.releasing.push(pool);
      waiting[pool.#waitingCount++] = id;
    };
    releaseWaiting = (pool) => {
      const n = pool.#waitingCount;
      pool.#waitingCount = 0;
      // a pool closed meanwhile (or the Ring) took its buffers back already
      if (n === 0 || pool.#closed || pool.#table.closing || pool.#memory.byteLength === 0) return;
      pool.#ring.bufReleaseMany(pool.id, n);
    };
    closedOf = (pool) => pool.#closed;
    ringOf = (pool) => pool.#ring;
    newBufferRing = (args) => new BufferRing(internal, ...args);
  }

  /** Made by ring.setupBufRing() only. */
  private constructor(token: symbol, ...[ring, count, size, closedError]: BufferRingArgs) {
    if (token !== internal) throw illegalConstructor();
    const [id, memory] = ring.setupBufRing(count, size);
    this.#ring = ring;
    this.#table = streamTable(ring, closedError);
    this.count = count;
    this.size = size;
    this.id = id;
    this.#memory = memory;
    this.#views = new Array(count);
    this.#held = new Uint8Array(count);
  }

  /** True while JS holds buffer `id` (from its chunk until release or send). */
  held(id: number): boolean {
    return this.#held[id] === 1;
  }

  /** How many buffers JS holds now (chunks handed to `data` and not yet released or sent). */
  get heldBuffers(): number {
    return this.#heldCount[0];
  }

  #check(id: number): void {
    if ((id >>> 0) !== id || id >= this.count) throw badId(id, this.count);
    if (this.#closed) throw Object.assign(new Error(`buffer ring ${this.id} is closed`), { code: 'ERR_RING_BUFFER_RING_CLOSED' });
    // the Ring's close() takes the memory (it is detached once the Ring is gone)
    if (this.#table.closing || this.#memory.byteLength === 0) throw this.#table.closedError();
    if (this.#held[id] !== 1) {
      const err = new Error(`buffer ${id} is not held: it was released or sent, and belongs to the buffer ring again`);
      throw Object.assign(err, { code: 'ERR_RING_BUFFER_RETURNED' });
    }
  }

  /** Buffer `id`'s whole memory (`size` bytes; the chunk is its first `length`). The same view
   * each time: no allocation per chunk. Throws ERR_RING_BUFFER_RETURNED unless JS holds it,
   * RangeError for an id outside the ring, RingClosedError once the Ring's close() began. A
   * view kept after the buffer went back reads whatever the kernel puts there next; after the
   * Ring closed, nothing (its memory is detached). */
  view(id: number): Uint8Array {
    this.#check(id);
    let v = this.#views[id];
    if (v === undefined || v.byteLength === 0) v = this.#views[id] = new Uint8Array(this.#memory, id * this.size, this.size);
    return v;
  }

  /** The chunk as a Buffer of `length` bytes over buffer `id` (no copy; one small object). */
  bytes(id: number, length: number): NodeBuffer {
    this.#check(id);
    return Buffer.from(this.#memory, id * this.size, Math.min(length, this.size)) as NodeBuffer;
  }

  /** Gives buffer `id` back to the kernel. Throws ERR_RING_BUFFER_RETURNED unless JS holds it. */
  release(id: number): void {
    this.#check(id);
    this.#ring.bufRelease(this.id, id);
    this.#held[id] = 0;
    this.#heldCount[0]--;
  }

  /** Unregisters the buffer ring from the Ring and frees its memory: every view of it reads
   * nothing from then on, and a held buffer needs no release. Throws ERR_RING_BUFFER_RING_BUSY
   * while a stream on it is not finished (`await stream.close()` first). A second call, or one
   * after the Ring's close() began (which frees it anyway), does nothing. `using pool =
   * ring.setupBufRing(...)` calls it on leaving the block. */
  close(): void {
    if (this.#closed || this.#table.closing || this.#memory.byteLength === 0) return;
    if (!this.#ring.bufRingClose(this.id)) {
      const err = new Error(`buffer ring ${this.id} is in use by a stream that is not finished: await stream.close() first`);
      throw Object.assign(err, { code: 'ERR_RING_BUFFER_RING_BUSY' });
    }
    this.#closed = true;
    this.#held.fill(0);
    this.#heldCount[0] = 0;
  }

  /** `using pool = ring.setupBufRing(...)`: close() on leaving the block. */
  declare readonly [Symbol.dispose]: () => void;
}
Object.defineProperty(BufferRing.prototype, Symbol.dispose ?? Symbol.for('nodejs.dispose'), {
  value: function (this: BufferRing) { this.close(); }, writable: true, configurable: true,
});

/** A socket receiving into a buffer ring (IORING_OP_RECV, multishot, buffer select) and
 * sending in order, one send at a time. Made by ring.recvMultishot(). */
export class RingStream {
  /** The socket. The stream never closes it. */
  readonly fd: number;
  readonly bufferRing: BufferRing;
  readonly #ring: NativeStreamMethods;
  readonly #token: number;
  readonly #handlers: RecvHandlers;
  readonly #table: StreamTable;
  #held: Uint8Array;
  #heldCount: Uint32Array;
  #ended = false;
  #closed = false;
  #closing: Promise<void> | undefined;
  #settle: ((err: Error | null) => void) | undefined;

  /** `await using stream = ring.recvMultishot(...)` closes it on leaving the block: close(). */
  declare readonly [Symbol.asyncDispose]: () => Promise<void>;

  static {
    newRingStream = (args) => new RingStream(internal, ...args);
    batchOf = (s) => s.#table.batch;
    writeOf = (s, data, later, latin1) => {
      if (s.#closed) throw s.#closedErr();
      return s.#ring.streamWrite(s.#token, data, later, latin1);
    };
    // A stream keeps its place in the table after it is closed: the addon gives its slot to
    // another stream only once every event of it gathered so far was handed out here.
    deliver = (s, type, a, b) => {
      if (type === Event.Data) {
        // came before close() took effect: nobody wants it; a pool closed since (its stream
        // finished earlier in this batch) took the buffer back with the rest
        if (s.#closing !== undefined && closedOf(s.bufferRing)) return;
        s.#held[a] = 1;
        s.#heldCount[0]++;
        if (s.#closing === undefined) s.#handlers.data(a, b);
        else s.bufferRing.release(a);
      } else if (type === Event.End) {
        if (s.#closing === undefined) s.#end(a, b === 1 ? 'send' : 'recv'); // its owner asked for the end
      } else if (type === Event.Drained) {
        if (s.#closing === undefined) s.#handlers.drained?.();
      } else {
        s.#finish(a);
      }
    };
  }

  /** Made by ring.recvMultishot() only. */
  private constructor(token: symbol, ...[ring, fd, pool, handlers, options, closedError]: RingStreamArgs) {
    if (token !== internal) throw illegalConstructor();
    if (!(pool instanceof BufferRing) || ringOf(pool) !== ring) {
      throw Object.assign(new TypeError('The "bufferRing" argument must be a BufferRing of this Ring'), { code: 'ERR_INVALID_ARG_TYPE' });
    }
    if (handlers === null || typeof handlers !== 'object' || typeof handlers.data !== 'function' || typeof handlers.end !== 'function') {
      throw Object.assign(new TypeError('The "handlers" argument must be an object with data(id, length) and end(err) functions'), { code: 'ERR_INVALID_ARG_TYPE' });
    }
    this.#table = streamTable(ring, closedError);
    // a closed buffer ring is not the addon's any more: say so, not that it is not this Ring's
    if (closedOf(pool)) {
      if (this.#table.closing) throw this.#table.closedError();
      throw Object.assign(new Error(`buffer ring ${pool.id} is closed`), { code: 'ERR_RING_BUFFER_RING_CLOSED' });
    }
    this.#ring = ring;
    this.fd = fd;
    this.bufferRing = pool;
    this.#held = heldOf(pool);
    this.#heldCount = heldCountOf(pool);
    this.#handlers = handlers;
    this.#token = ring.recvMultishot(fd, pool.id, options?.pauseAt ?? DEFAULT_PAUSE_AT);
    this.#table.streams[this.#token] = this;
  }

  /** Sends the first `length` bytes of buffer `id` (which JS holds), after everything given to
   * send before it: from the buffer ring's memory when nothing is ahead (the buffer goes back to
   * the ring once sent), else copied into the stream's queue (the buffer goes back at once). A
   * short send goes on from where it stopped. No Promise: a failure ends the stream (`end`). */
  send(id: number, length: number): void {
    if (this.#closed) throw this.#closedErr();
    this.#ring.streamSend(this.#token, id, length);
    this.#held[id] = 0;
    this.#heldCount[0]--;
  }

  /** Sends a copy of `data` (taken now) in order with the stream's other sends; a view that
   * cannot be read (a mapping past its file's end) throws EFAULT and queues nothing. Returns
   * the bytes now queued to send. */
  write(data: ArrayBufferView): number {
    return writeOf(this, data, false, false);
  }

  /** Asks for `handlers.drained()` once at most `bytes` are queued to send; false (and no
   * call) when that is so already. */
  drainTo(bytes: number): boolean {
    if (this.#closed) throw this.#closedErr();
    return this.#ring.streamDrain(this.#token, bytes);
  }

  /** Stops receiving for now (the recv is cancelled; chunks the kernel took before that still
   * come to `data`; the rest waits in the socket) until resume(). Sends go on. */
  pause(): void {
    if (!this.#closed) this.#ring.streamHold(this.#token, true);
  }

  /** Receives again after pause(). */
  resume(): void {
    if (!this.#closed) this.#ring.streamHold(this.#token, false);
  }

  /** Its ops keep the event loop alive again (the default), after unref(). */
  ref(): void {
    if (!this.#closed) this.#ring.streamRef(this.#token, true);
  }

  /** Its ops no longer keep the event loop alive: a process whose only work left is this
   * stream's receiving may exit, as with an unref()'d socket. */
  unref(): void {
    if (!this.#closed) this.#ring.streamRef(this.#token, false);
  }

  /** Bytes queued to send and not yet sent. */
  get queuedBytes(): number {
    return this.#closed ? 0 : this.#ring.streamQueued(this.#token);
  }

  /** True once receiving is over (`end` was called). */
  get ended(): boolean {
    return this.#ended;
  }

  /** Stops receiving (chunks still in flight go back to the ring) and resolves once every
   * queued send is done and the kernel holds nothing of the stream; rejects with a send's
   * error that `end` did not already give. Idempotent. The socket stays open: close it after. */
  close(): Promise<void> {
    if (this.#closing !== undefined) return this.#closing;
    this.#closing = new Promise<void>((resolve, reject) => {
      this.#settle = (err) => (err === null ? resolve() : reject(err));
    });
    if (this.#closed) {
      this.#settle!(null);
    } else {
      let closedNow: boolean;
      try {
        closedNow = this.#ring.streamClose(this.#token);
      } catch {
        // the Ring closed meanwhile: `end` now, a throw of it reported as dispatch reports one
        deliverReporting(this, Event.Closed, END_CLOSED, 0);
        return this.#closing;
      }
      if (closedNow) this.#finish(0); // nothing was in flight
    }
    return this.#closing;
  }

  #closedErr(): Error {
    return Object.assign(new Error('the stream is closed'), { code: 'ERR_RING_STREAM_CLOSED' });
  }

  #end(res: number, syscall: string): void {
    if (this.#ended) return;
    this.#ended = true;
    const err = res === 0 ? null : res === END_CLOSED ? this.#table.closedError() : errnoError(res, syscall);
    this.#handlers.end(err);
  }

  // The addon freed the stream (kClosed), or the Ring closed: nothing more will come.
  #finish(res: number): void {
    if (this.#closed) return;
    this.#closed = true;
    try {
      if (res === END_CLOSED && !this.#ended) this.#end(END_CLOSED, 'recv');
    } finally {
      // settled whatever `end` throws (the throw goes on to be reported)
      this.#settle?.(res === 0 || res === END_CLOSED ? null : errnoError(res, 'send'));
    }
  }
}
Object.defineProperty(RingStream.prototype, Symbol.asyncDispose ?? Symbol.for('nodejs.asyncDispose'), {
  value: function (this: RingStream) { return this.close(); },
  writable: true,
  configurable: true,
});
