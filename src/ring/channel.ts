// A shared-memory channel between two processes or threads (docs/channel.md): one side creates a
// sealed memfd holding a queue per direction and passes it over a Unix stream socket; the other
// joins (channel-setup.ts). Messages are copied into the queue by C (native/channel/), many per
// call (channel-outbox.ts), and taken out many per call (channel-inbox.ts). A side that waits
// looks at the queue for a few microseconds, then sleeps in a Ring recv on its copy of the
// socket (channel-sleep.ts): the other side sends it a byte only when it finds it asleep, and
// the socket's end, without the closed flag in the region, says the other side's process or
// thread is gone. This file is the public face: listeners, receive(), and the loop that moves
// what can move and then waits.
import type { NativeChannelEnd } from '../native.js';
import type { Ring } from './ring.js';
import { channelError, createEnd, joinEnd, releaseRing, type ChannelOptions, type Setup } from './channel-setup.js';
import { ChannelListeners, rethrow, type ChannelEvents, type Listener } from './channel-events.js';
import { Inbox } from './channel-inbox.js';
import { Outbox, type ChannelMessage } from './channel-outbox.js';
import { Sleeper } from './channel-sleep.js';

export type { ChannelOptions, ChannelEvents, ChannelMessage };

/** Messages 'message' listeners get in one go before the event loop has a turn. */
const burst = 1024;

const closedError = () => channelError('ERR_CHANNEL_CLOSED', 'the channel is closed');
const closedByPeer = () => channelError('ERR_CHANNEL_CLOSED', 'the other side closed the channel');
const peerGone = () => channelError('ERR_CHANNEL_PEER_GONE', 'the other side of the channel is gone: its process or thread ended without closing it');

/** One side of a shared-memory channel. */
export class Channel {
  /** Creates a channel and passes it over `socket`, a connected Unix stream socket (the caller
   * keeps its fd: the channel uses a copy). The other side calls Channel.join. `signal` and
   * `timeout` bound the wait for room to send it. */
  static async create(socket: number, options?: ChannelOptions): Promise<Channel> {
    const setup = await createEnd(socket, options);
    return new Channel(setup, true);
  }

  /** Joins the channel the other side creates over `socket` (a connected Unix stream socket;
   * the caller keeps its fd). Resolves once the other side's region is mapped here. Rejects
   * with an AbortError when `signal` aborts, ETIMEDOUT after `timeout` ms, and
   * ERR_CHANNEL_PEER_GONE when the process at the other end of the socket ends first. */
  static async join(socket: number, options?: Omit<ChannelOptions, 'capacity'>): Promise<Channel> {
    const setup = await joinEnd(socket, options);
    return new Channel(setup, false);
  }

  readonly #end: NativeChannelEnd;
  readonly #ring: Ring;
  readonly #inbox: Inbox;
  /** Messages as views of the queue (valid until the next is asked for), not copies. */
  readonly #zeroCopy: boolean;
  readonly #outbox: Outbox;
  #receiver?: { resolve(message: Uint8Array | null): void; reject(err: Error): void };
  readonly #handlers = new ChannelListeners();
  #paused = false;
  readonly #sleeper: Sleeper;
  /** Set once the socket ended: why sends fail from then on (received messages still come),
   * and this side sleeps no more. */
  #peerEnded?: Error;
  #closed = false;
  #closing?: Promise<void>;
  /** Why the channel ended, for the next receive() when none was waiting then. */
  #endError?: Error;
  /** A zeroCopy view went out and no next message was asked for since. */
  #viewOut = false;

  private constructor({ end, ring, zeroCopy, spinNs }: Setup, creator: boolean) {
    this.#end = end;
    this.#ring = ring;
    this.#inbox = new Inbox(end, zeroCopy);
    this.#outbox = new Outbox(end, (err) => this.#shutdown(err));
    this.#sleeper = new Sleeper(ring, end, creator, spinNs, {
      woken: () => this.#service(),
      ended: () => this.#onSocketEnd(),
      failed: (err) => this.#shutdown(err),
    });
    this.#zeroCopy = zeroCopy;
  }

  /** Adds a listener: 'message' (each message, a copy lent while the listener runs: its bytes
   * are reused by later messages, so copy what you keep; while there are such listeners
   * receive() is refused), 'error' (the error the channel ended with), 'close'. */
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
    return this.#outbox.trySend(message);
  }

  /** Copies messages into the ring now, in order, until one does not fit: how many it copied
   * (0 while sends are waiting for room). One call for them all, and the other side is told
   * once. A message that cannot be sent (as trySend throws) throws, the messages before it
   * sent: the error's `sent` says how many. */
  trySendMany(messages: readonly ChannelMessage[]): number {
    this.#checkSend();
    return this.#outbox.trySendMany(messages);
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
    return this.#wait([message], 0, false);
  }

  /** Sends every message of the list, in order, waiting for room as send() does (leave them
   * unchanged until this resolves). A message that cannot be sent rejects with the error
   * trySendMany throws (`sent`: how many of the list went before it). */
  sendMany(messages: readonly ChannelMessage[]): Promise<void> {
    let sent: number;
    try {
      sent = this.trySendMany(messages);
    } catch (err) {
      return Promise.reject(err);
    }
    return sent === messages.length ? Promise.resolve() : this.#wait(messages, sent, true);
  }

  #wait(messages: readonly ChannelMessage[], next: number, many: boolean): Promise<void> {
    const waiting = this.#outbox.wait(messages, next, many);
    this.#service();
    return waiting;
  }

  /** The next message, a copy of its own (with `zeroCopy`, a view of the queue valid until the
   * next receive() or close()). null once the other side has closed and every message was
   * received. Rejects with ERR_CHANNEL_PEER_GONE when the other side ended without closing
   * (after the messages it sent before). */
  receive(): Promise<Uint8Array | null> {
    if (this.#listeners > 0) return Promise.reject(channelError('ERR_CHANNEL_BUSY', "the channel gives its messages to its 'message' listeners"));
    if (this.#receiver !== undefined) return Promise.reject(channelError('ERR_CHANNEL_BUSY', 'a receive() is already waiting: ask for the next message once the last one came'));
    const got = this.#take(false);
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

  /** Each message as receive() gives it; ends when the other side closes. Leaving the loop early
   * leaves the channel open. */
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

  /** The next message (lent: for a listener, valid while it runs); null when the channel has
   * ended (now or before: #shutdown settled a waiting receive); undefined when none is there yet. */
  #take(lent: boolean): Uint8Array | null | undefined {
    if (this.#closed) return null;
    const got = this.#inbox.next(lent);
    if (typeof got !== 'number') {
      this.#viewOut = this.#zeroCopy;
      return got;
    }
    if (got === 0 && this.#peerEnded === undefined) return undefined;
    // the other side closed and all was read (-1), its socket ended and all was read (0: gone,
    // unless it closed), or it wrote over the ring (-2)
    const gone = got === 0 && (this.#peerEnded as { code?: string }).code === 'ERR_CHANNEL_PEER_GONE';
    this.#shutdown(got === -2 ? channelError('ERR_CHANNEL_PROTOCOL', 'the queue holds a record no channel writes: the other side wrote over it')
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
      const wantRoom = this.#outbox.waiting;
      // after the socket's end there is nothing to wait for: #take and #flushSends end it all
      if ((!wantMessage && !wantRoom) || this.#peerEnded !== undefined) {
        this.#sleeper.idle();
        return;
      }
      const pending = this.#outbox.nextBytes;
      if (this.#sleeper.spin(wantMessage, wantRoom, pending)) continue;
      // also when asleep already: a new reason to wait needs its flag set, or no wake-up comes for it
      if (this.#end.prepareSleep(wantMessage, wantRoom, pending)) {
        this.#sleeper.sleep();
        return;
      }
    }
  }

  #flushSends(): void {
    if (this.#peerEnded !== undefined || this.#end.peerClosed()) this.#outbox.fail(this.#peerEnded ?? closedByPeer());
    else this.#outbox.flush(() => this.#closed);
  }

  #deliver(): void {
    if (this.#receiver !== undefined) {
      const got = this.#take(false); // null: the end, which settled the receive
      if (got === undefined || got === null) return;
      const r = this.#receiver;
      this.#receiver = undefined;
      r.resolve(got);
      return;
    }
    if (this.#listeners === 0 || this.#paused) return;
    for (let n = 0; n < burst; n++) {
      const got = this.#take(true);
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

  /** The last 'message' listener went: nothing should keep the process waiting for messages. */
  #stopFlowing(): void {
    if (this.#receiver === undefined && !this.#outbox.waiting) this.#sleeper.stop();
  }

  /** The other side's socket closed: it closed the channel (its flag set), or it is gone. */
  #onSocketEnd(): void {
    if (this.#closed || this.#peerEnded !== undefined) return;
    this.#peerEnded = this.#end.peerClosed() ? closedByPeer() : peerGone();
    this.#service(); // waiting sends fail; a waiting receive or listeners get what is left, then the end
    // nobody receives and nothing is left to: the channel ends now, unless that would detach a
    // zeroCopy view just handed out (valid until the next receive(), which then ends it)
    if (!this.#closed && this.#receiver === undefined && this.#listeners === 0 && !this.#viewOut && !this.#inbox.hasUnread()) this.#take(false);
  }

  /** Ends the channel: error is why (none: closed by either side). A waiting receive gets the
   * error (or null); else the next receive() does. */
  #shutdown(error?: Error): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#endError = error;
    this.#end.markClosed();
    this.#outbox.fail(error ?? this.#peerEnded ?? closedError());
    const r = this.#receiver;
    this.#receiver = undefined;
    if (r !== undefined) this.#settleEnded(r);
    this.#closing = this.#sleeper.close().then(() => {
      this.#inbox.close();
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

