// A shared-memory channel between two processes or threads (docs/channel.md): one side creates a
// sealed memfd holding a ring per direction and passes it over a Unix stream socket; the other
// joins. Messages are copied into the ring by C (native/channel/) and read in place. A side that
// waits sleeps in a Ring recv on its copy of the socket: the other side sends it a byte only
// when it finds it asleep, and the socket's end, without the closed flag in the region, says
// the other side's process or thread is gone.
import type { NativeChannelEnd } from '../native.js';
import { ringPollIn, type Ring } from './ring.js';
import { native, type RecvResult } from '../native.js';
import { recvmsg } from '../syscalls.js';
import { channelError, createEnd, joinEnd, releaseRing, type ChannelOptions } from './channel-setup.js';
import { ChannelListeners, rethrow, type ChannelEvents, type Listener } from './channel-events.js';

export type { ChannelOptions, ChannelEvents };

/** Messages 'message' listeners get in one go before the event loop has a turn. */
const burst = 1024;
/** Wake-up bytes read at once (each is one wake-up; any number means "look again"). */
const wakeBytes = 64;

const closedError = () => channelError('ERR_CHANNEL_CLOSED', 'the channel is closed');
const closedByPeer = () => channelError('ERR_CHANNEL_CLOSED', 'the other side closed the channel');
const peerGone = () => channelError('ERR_CHANNEL_PEER_GONE', 'the other side of the channel is gone: its process or thread ended without closing it');

/** A message: one view, or views sent together as one message. */
export type ChannelMessage = ArrayBufferView | readonly ArrayBufferView[];

interface PendingSend {
  message: ChannelMessage;
  bytes: number;
  resolve(): void;
  reject(err: Error): void;
}

function byteLength(message: ChannelMessage): number {
  if (!Array.isArray(message)) return (message as ArrayBufferView).byteLength ?? 0;
  let n = 0;
  for (const view of message as ArrayBufferView[]) n += view?.byteLength ?? 0;
  return n;
}

/** One side of a shared-memory channel. */
export class Channel {
  /** Creates a channel and passes it over `socket`, a connected Unix stream socket (the caller
   * keeps its fd: the channel uses a copy). The other side calls Channel.join. `signal` and
   * `timeout` bound the wait for room to send it. */
  static async create(socket: number, options?: ChannelOptions): Promise<Channel> {
    const { end, ring, zeroCopy } = await createEnd(socket, options);
    return new Channel(end, ring, zeroCopy, true);
  }

  /** Joins the channel the other side creates over `socket` (a connected Unix stream socket;
   * the caller keeps its fd). Resolves once the other side's region is mapped here. Rejects
   * with an AbortError when `signal` aborts, ETIMEDOUT after `timeout` ms, and
   * ERR_CHANNEL_PEER_GONE when the process at the other end of the socket ends first. */
  static async join(socket: number, options?: Omit<ChannelOptions, 'capacity'>): Promise<Channel> {
    const { end, ring, zeroCopy } = await joinEnd(socket, options);
    return new Channel(end, ring, zeroCopy, false);
  }

  readonly #end: NativeChannelEnd;
  readonly #ring: Ring;
  readonly #bytes: Uint8Array;
  /** next()'s length: the one the addon checked, in private memory (never read from the queue). */
  readonly #nextLength: Uint32Array;
  /** Messages as views of the queue (valid until the next is asked for), not copies. */
  readonly #zeroCopy: boolean;
  readonly #wakes = Buffer.alloc(wakeBytes);
  readonly #sends: PendingSend[] = [];
  #receiver?: { resolve(message: Uint8Array | null): void; reject(err: Error): void };
  readonly #handlers = new ChannelListeners();
  #paused = false;
  #sleeping = false;
  /** Set once the socket ended: why sends fail from then on (received messages still come),
   * and this side sleeps no more. */
  #peerEnded?: Error;
  #closed = false;
  #closing?: Promise<void>;
  /** Why the channel ended, for the next receive() when none was waiting then. */
  #endError?: Error;
  /** This side made the region: it tells the joiner its pid (a byte) once it learns the joiner's. */
  readonly #creator: boolean;
  /** The other side's process: unknown until a byte from it comes with its credentials
   * (SO_PASSCRED); then a pidfd (-1: none, it is this process) polled while this side sleeps,
   * so its death ends the channel even while a copy of its socket is left open elsewhere. */
  #peerKnown = false;
  #pidfd = -1;
  #pidfdPolled = false;
  /** The Ring ops this side has out (settled after their handlers ran): close() waits for them
   * before it closes their fds, as the Ring is shared with this thread's other channels. */
  #sleepOp?: Promise<void>;
  /** A zeroCopy view went out and no next message was asked for since. */
  #viewOut = false;
  #pollOp?: Promise<void>;

  private constructor(end: NativeChannelEnd, ring: Ring, zeroCopy: boolean, creator: boolean) {
    this.#creator = creator;
    this.#end = end;
    this.#ring = ring;
    this.#bytes = new Uint8Array(end.region);
    this.#nextLength = new Uint32Array(end.nextLength);
    this.#zeroCopy = zeroCopy;
  }

  /** Adds a listener: 'message' (each message, while there are such listeners receive() is
   * refused), 'error' (the error the channel ended with), 'close'. */
  on<E extends keyof ChannelEvents>(event: E, listener: ChannelEvents[E]): this {
    if (this.#handlers.add(event, listener)) queueMicrotask(() => this.#service());
    return this;
  }

  /** Adds a listener called once. */
  once<E extends keyof ChannelEvents>(event: E, listener: ChannelEvents[E]): this {
    const once = ((arg?: never) => {
      this.off(event, once as ChannelEvents[E]);
      (listener as Listener)(arg);
    }) as Listener & { listener?: unknown };
    once.listener = listener;
    return this.on(event, once as ChannelEvents[E]);
  }

  /** Removes a listener (the last one added, if it was added twice). */
  off<E extends keyof ChannelEvents>(event: E, listener: ChannelEvents[E]): this {
    if (this.#handlers.remove(event, listener)) this.#stopFlowing();
    return this;
  }

  #emit<E extends keyof ChannelEvents>(event: E, ...arg: Parameters<ChannelEvents[E]>): void {
    this.#handlers.emit(event, ...arg);
  }

  get #listeners(): number {
    return this.#handlers.count('message');
  }

  /** Bytes of each direction's ring. */
  get capacity(): number {
    return this.#end.capacity;
  }
  /** The largest message: half the capacity, less 8 bytes. */
  get maxMessageBytes(): number {
    return this.#end.maxMessageBytes;
  }
  /** True once closed (by close(), or at the end of what the other side sent). */
  get closed(): boolean {
    return this.#closed;
  }

  /** Copies the message into the ring now: true; false when it does not fit now or sends are
   * waiting for room (nothing copied: `await send()` waits). */
  trySend(message: ChannelMessage): boolean {
    this.#checkSend();
    if (this.#sends.length > 0) return false;
    return this.#sendNow(message);
  }

  /** The addon's send; a queue the other side wrote over ends the channel. */
  #sendNow(message: ChannelMessage): boolean {
    try {
      return this.#end.send(message);
    } catch (err) {
      if ((err as { code?: string }).code === 'ERR_CHANNEL_PROTOCOL') this.#shutdown(err as Error);
      throw err;
    }
  }

  /** Copies the message into the ring; when it is full, waits for room first (the message's
   * buffers are read then: leave them unchanged until this resolves). In order with every
   * other send. */
  send(message: ChannelMessage): Promise<void> {
    try {
      if (this.trySend(message)) return Promise.resolve();
    } catch (err) {
      return Promise.reject(err);
    }
    return new Promise((resolve, reject) => {
      this.#sends.push({ message, bytes: byteLength(message), resolve, reject });
      this.#service();
    });
  }

  /** The next message, a copy of its own (with `zeroCopy`, a view of the queue valid until the
   * next receive() or close()). null once the other side has closed and every message was
   * received. Rejects with ERR_CHANNEL_PEER_GONE when the other side ended without closing
   * (after the messages it sent before). */
  receive(): Promise<Uint8Array | null> {
    if (this.#listeners > 0) return Promise.reject(channelError('ERR_CHANNEL_BUSY', "the channel gives its messages to its 'message' listeners"));
    if (this.#receiver !== undefined) return Promise.reject(channelError('ERR_CHANNEL_BUSY', 'a receive() is already waiting: ask for the next message once the last one came'));
    const got = this.#take();
    if (got !== undefined && got !== null) return Promise.resolve(got);
    return new Promise((resolve, reject) => {
      if (got === null) {
        this.#settleEnded({ resolve, reject });
        return;
      }
      this.#receiver = { resolve, reject };
      this.#service();
    });
  }

  /** Each message as receive() gives it; ends
   * when the other side closes. Leaving the loop early leaves the channel open. */
  [Symbol.asyncIterator](): AsyncIterableIterator<Uint8Array> {
    const done = { done: true, value: undefined } as const;
    return {
      next: () => this.receive().then((value) => (value === null ? done : { done: false, value })),
      return: () => Promise.resolve(done),
      [Symbol.asyncIterator]() {
        return this;
      },
    };
  }

  /** Tells the other side (its receives end once it has read what was sent), fails waiting
   * sends with ERR_CHANNEL_CLOSED, ends a waiting receive with null, detaches every view of
   * the rings and frees them and the socket copy. Idempotent. */
  close(): Promise<void> {
    this.#shutdown();
    return this.#closing!;
  }

  declare readonly [Symbol.asyncDispose]: () => Promise<void>;

  #checkSend(): void {
    if (this.#closed) throw this.#peerEnded ?? closedError();
    if (this.#peerEnded !== undefined) throw this.#peerEnded;
  }

  /** The next message (a view); null when the channel has ended (now or before: #shutdown
   * settled a waiting receive); undefined when none is there yet. */
  #take(): Uint8Array | null | undefined {
    if (this.#closed) return null;
    const at = this.#end.next();
    if (at > 0) {
      const end = at + this.#nextLength[0];
      this.#viewOut = this.#zeroCopy;
      return this.#zeroCopy ? this.#bytes.subarray(at, end) : this.#bytes.slice(at, end);
    }
    if (at === 0 && this.#peerEnded === undefined) return undefined;
    // the other side closed and all was read (-1), its socket ended and all was read (0: gone,
    // unless it closed), or it wrote over the ring (-2)
    const gone = at === 0 && (this.#peerEnded as { code?: string }).code === 'ERR_CHANNEL_PEER_GONE';
    this.#shutdown(at === -2 ? channelError('ERR_CHANNEL_PROTOCOL', 'the queue holds a record no channel writes: the other side wrote over it')
      : gone ? this.#peerEnded : undefined);
    return null;
  }

  /** Settles a receive after the end: with the error the channel ended with, once; else null. */
  #settleEnded(r: { resolve(message: null): void; reject(err: Error): void }): void {
    const err = this.#endError;
    this.#endError = undefined;
    if (err !== undefined) r.reject(err);
    else r.resolve(null);
  }

  /** Moves what can move (waiting sends, a waiting receive, 'message' listeners), then sleeps
   * when something still waits. */
  #service(): void {
    for (;;) {
      if (this.#closed) return;
      this.#flushSends();
      this.#deliver();
      if (this.#closed) return;
      const wantMessage = this.#receiver !== undefined || (this.#listeners > 0 && !this.#paused);
      const wantRoom = this.#sends.length > 0;
      // after the socket's end there is nothing to wait for: #take and #flushSends end it all
      if ((!wantMessage && !wantRoom) || this.#peerEnded !== undefined) {
        if (this.#pidfdPolled) setImmediate(this.#unwatchIfIdle);
        return;
      }
      // also when asleep already: a new reason to wait needs its flag set, or no wake-up comes for it
      if (this.#end.prepareSleep(wantMessage, wantRoom, wantRoom ? this.#sends[0].bytes : 0)) {
        if (!this.#sleeping) this.#sleep();
        return;
      }
    }
  }

  #flushSends(): void {
    if (this.#peerEnded !== undefined || this.#end.peerClosed()) {
      this.#failSends(this.#peerEnded ?? closedByPeer());
      return;
    }
    while (this.#sends.length > 0) {
      const s = this.#sends[0];
      let sent: boolean;
      try {
        sent = this.#sendNow(s.message);
      } catch (err) {
        this.#sends.shift();
        s.reject(err as Error);
        if (this.#closed) return;
        continue;
      }
      if (!sent) return;
      this.#sends.shift();
      s.resolve();
    }
  }

  #failSends(err: Error): void {
    for (const s of this.#sends.splice(0)) s.reject(err);
  }

  #deliver(): void {
    if (this.#receiver !== undefined) {
      const got = this.#take(); // null: the end, which settled the receive
      if (got === undefined || got === null) return;
      const r = this.#receiver;
      this.#receiver = undefined;
      r.resolve(got);
      return;
    }
    if (this.#listeners === 0 || this.#paused) return;
    for (let n = 0; n < burst; n++) {
      const got = this.#take();
      if (got === undefined || got === null) return;
      this.#emit('message', got);
      this.#viewOut = false; // a listener's view lives while it runs
      if (this.#closed || this.#listeners === 0) return;
    }
    // more may be there: let the event loop run first
    this.#paused = true;
    setImmediate(() => {
      this.#paused = false;
      this.#service();
    });
  }

  #sleep(): void {
    this.#sleeping = true;
    if (this.#pidfd >= 0 && !this.#pidfdPolled) {
      this.#pidfdPolled = true;
      this.#pollOp = ringPollIn(this.#ring, this.#pidfd).then(this.#peerDied, this.#pollEnded);
    }
    if (this.#peerKnown) this.#sleepOp = this.#ring.recv(this.#end.socket, this.#wakes).then(this.#woken, this.#wakeFailed);
    // A Ring recvmsg that waited gets SCM_CREDENTIALS with pid 0 (kernel 6.18), so the Ring
    // only peeks, and the byte that came is taken here with its sender's pid.
    else this.#sleepOp = this.#ring.recv(this.#end.socket, this.#wakes.subarray(0, 1), native.constants.MSG_PEEK).then(this.#peeked, this.#wakeFailed);
  }

  readonly #peeked = (bytes: number) => {
    if (bytes === 0 || this.#closed) {
      this.#woken(bytes);
      return;
    }
    let r: RecvResult;
    try {
      r = recvmsg(this.#end.socket, [this.#wakes]); // the peeked byte is there: no wait
    } catch (err) {
      this.#wakeFailed(err as Error);
      return;
    }
    const pid = r.credentials?.pid;
    if (pid !== undefined && pid > 0 && !this.#peerKnown) this.#learnPeer(pid);
    this.#woken(r.bytesRead);
  };

  #learnPeer(pid: number): void {
    this.#peerKnown = true;
    if (pid === process.pid) return; // a thread of this process: its end closes the socket
    if (this.#creator) this.#end.wake(); // the joiner learns this side's pid from the byte
    this.#pidfd = this.#end.watchPeer(pid);
    if (this.#pidfd < 0) queueMicrotask(this.#peerDied); // it has ended already
  }

  readonly #peerDied = () => {
    this.#pidfdPolled = false;
    if (!this.#closed) this.#onSocketEnd(); // as the socket's end, which a stray copy holds back
  };

  readonly #pollEnded = () => {
    this.#pidfdPolled = false;
  };

  /** Nothing waits: the pidfd's poll must not keep the process alive (looked at a turn later,
   * so a loop that waits again at once does not cancel and re-arm it per message). */
  readonly #unwatchIfIdle = () => {
    if (this.#pidfdPolled && !this.#sleeping && !this.#closed) this.#ring.cancelFd(this.#pidfd).catch(() => {});
  };

  readonly #woken = (bytes: number) => {
    this.#sleeping = false;
    if (this.#closed) return;
    this.#end.woken();
    if (bytes === 0) this.#onSocketEnd();
    else this.#service();
  };

  readonly #wakeFailed = (err: Error & { code?: string }) => {
    this.#sleeping = false;
    if (this.#closed) return;
    if (err.code === 'ECANCELED') this.#service(); // a listener came back meanwhile
    // the other side's process ended with wake-ups it had not read: the socket's end as well
    else if (err.code === 'ECONNRESET') this.#onSocketEnd();
    else this.#shutdown(err);
  };

  /** The last 'message' listener went: nothing should keep the process waiting for messages. */
  #stopFlowing(): void {
    if (this.#sleeping && this.#receiver === undefined && this.#sends.length === 0) {
      this.#ring.cancelFd(this.#end.socket).catch(() => {});
      if (this.#pidfdPolled) this.#ring.cancelFd(this.#pidfd).catch(() => {});
    }
  }

  /** The other side's socket closed: it closed the channel (its flag set), or it is gone. */
  #onSocketEnd(): void {
    if (this.#closed || this.#peerEnded !== undefined) return;
    this.#peerEnded = this.#end.peerClosed() ? closedByPeer() : peerGone();
    this.#service(); // waiting sends fail; a waiting receive or listeners get what is left, then the end
    // nobody receives and nothing is left to: the channel ends now, unless that would detach a
    // zeroCopy view just handed out (valid until the next receive(), which then ends it)
    if (!this.#closed && this.#receiver === undefined && this.#listeners === 0 && !this.#viewOut && !this.#end.hasUnread()) this.#take();
  }

  /** Cancels this side's ops on the shared Ring; resolves once each has settled. */
  #opsSettled(): Promise<unknown> {
    const pending: Promise<void>[] = [];
    if (this.#sleeping) {
      pending.push(this.#sleepOp!);
      this.#ring.cancelFd(this.#end.socket).catch(() => {});
    }
    if (this.#pidfdPolled) {
      pending.push(this.#pollOp!);
      this.#ring.cancelFd(this.#pidfd).catch(() => {});
    }
    return Promise.all(pending);
  }

  /** Ends the channel: error is why (none: closed by either side). A waiting receive gets the
   * error (or null); else the next receive() does. */
  #shutdown(error?: Error): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#endError = error;
    this.#end.markClosed();
    this.#failSends(error ?? this.#peerEnded ?? closedError());
    const r = this.#receiver;
    this.#receiver = undefined;
    if (r !== undefined) this.#settleEnded(r);
    this.#closing = this.#opsSettled().then(() => {
      this.#end.free();
      return releaseRing(this.#ring);
    }).then(() => this.#emit('close'));
    if (error === undefined) return;
    // as an EventEmitter does: to 'error' listeners; unheard, with 'message' listeners, thrown
    // (an uncaught exception once this returns: the channel's state is whole by then)
    if (this.#handlers.count('error') > 0) this.#emit('error', error);
    else if (this.#listeners > 0) process.nextTick(rethrow, error);
  }
}
Object.defineProperty(Channel.prototype, Symbol.asyncDispose ?? Symbol.for('nodejs.asyncDispose'), {
  value: function (this: Channel) { return this.close(); },
  writable: true,
  configurable: true,
});

