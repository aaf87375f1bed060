// The receiving half of a Channel (src/ring/channel.ts): messages come out of the queue many at
// a time, one call into the addon per batch (native/channel_messages.cc's take), and are handed
// out one by one. What a message is depends on who asks:
//   - zeroCopy: a view of the queue itself; the batch stays held in the queue until the next
//     batch is taken, so each view is valid at least until the next message is asked for;
//   - a 'message' listener (the default): a copy in the channel's pool, a buffer of its own that
//     the next batch reuses once the listeners have run, so a message kept past its listener
//     shows a later message's bytes (a fresh ArrayBuffer per batch, or a transfer of the pool's
//     to leave old views empty, made the pool slower than a copy of its own: V8 counts each as
//     new external memory and collects garbage for it);
//   - receive() and `for await` (the default): a copy of its own, kept as long as the caller
//     likes: small ones are cut from a shared slab, as Buffer's pool does (a slab is never
//     reused: it goes when no message over it is left), a large one gets a buffer of its own.
// Either way a copy is made by the addon in one pass per batch and the queue's room is let go
// of at once, so the writer never waits on what the reader keeps.
import type { NativeChannelEnd } from '../native.js';

/** Messages taken from the queue in one call at most. */
const batchMessages = 1024;
/** Bytes of a slab that receive()'s messages are cut from; a message over half of it gets a
 * buffer of its own instead. */
const slabBytes = 64 << 10;
/** The pool's first size; it grows to fit the largest message taken (to maxMessageBytes). */
const firstPoolBytes = 64 << 10;

/** What Inbox.next gives when it has no message: none there now (0), the other side closed and
 * every message was taken (-1), or the queue holds a record no channel writes (-2). */
export type NoMessage = 0 | -1 | -2;
const tooBig = -3;

const align8 = (n: number) => (n + 7) & ~7;

export class Inbox {
  readonly #end: NativeChannelEnd;
  readonly #region: ArrayBuffer;
  readonly #zeroCopy: boolean;
  /** The last batch: [offset, length] pairs into #batch, #count of them, #index handed out. */
  readonly #taken = new Uint32Array(2 * batchMessages);
  #count = 0;
  #index = 0;
  #batch: ArrayBuffer;
  /** The last batch is in the pool (listeners' copies), not a slab or the queue. */
  #inPool = false;
  #pool: ArrayBuffer | undefined;
  /** Views of the pool went out: close() leaves them empty. */
  #poolLent = false;
  #slab: ArrayBuffer | undefined;
  #slabUsed = 0;

  constructor(end: NativeChannelEnd, zeroCopy: boolean) {
    this.#end = end;
    this.#region = end.region;
    this.#batch = this.#region;
    this.#zeroCopy = zeroCopy;
  }

  /** The next message: for a listener (lent: valid while it runs) or for receive() (its own;
   * zeroCopy: a view either way), or why there is none. */
  next(lent: boolean): Uint8Array | NoMessage {
    if (this.#index === this.#count) {
      const got = this.#refill(lent);
      if (got <= 0) return got as NoMessage;
    }
    const i = this.#index++;
    const offset = this.#taken[2 * i], length = this.#taken[2 * i + 1];
    if (this.#inPool) {
      if (!lent) return new Uint8Array(this.#batch.slice(offset, offset + length)); // a listener left it: receive() owns it
      this.#poolLent = true;
    }
    return new Uint8Array(this.#batch, offset, length);
  }

  /** Whether a message is there that next() has not handed out. */
  hasUnread(): boolean {
    return this.#index < this.#count || this.#end.hasUnread();
  }

  /** Leaves every view of the pool empty (close(): as every view of the queue is left). */
  close(): void {
    if (this.#pool !== undefined && this.#poolLent) structuredClone(this.#pool, { transfer: [this.#pool] });
    this.#pool = this.#slab = undefined;
    this.#count = this.#index = 0;
  }

  #refill(lent: boolean): number {
    this.#count = this.#index = 0;
    this.#inPool = false;
    if (this.#zeroCopy) return this.#took(this.#end.take(null, 0, batchMessages, this.#taken), this.#region);
    return lent ? this.#intoPool() : this.#intoSlab();
  }

  #took(got: number, from: ArrayBuffer): number {
    if (got > 0) {
      this.#count = got;
      this.#batch = from;
    }
    return got;
  }

  #intoPool(): number {
    this.#pool ??= new ArrayBuffer(Math.min(firstPoolBytes, align8(this.#end.maxMessageBytes)));
    let got = this.#end.take(this.#pool, 0, batchMessages, this.#taken);
    if (got === tooBig) {
      // grown to fit, and kept at that size: the sizes a channel carries tend to repeat (the old
      // one stays whole for views kept of it)
      this.#pool = new ArrayBuffer(Math.max(2 * this.#pool.byteLength, align8(this.#taken[1])));
      got = this.#end.take(this.#pool, 0, batchMessages, this.#taken);
    }
    this.#inPool = got > 0;
    return this.#took(got, this.#pool);
  }

  #intoSlab(): number {
    this.#slab ??= new ArrayBuffer(slabBytes);
    let got = this.#end.take(this.#slab, this.#slabUsed, batchMessages, this.#taken);
    if (got === tooBig) {
      const length = this.#taken[1];
      if (align8(length) > slabBytes / 2) {
        // a message of its own size, and the slab kept for the small ones
        const own = new ArrayBuffer(align8(length));
        return this.#took(this.#end.take(own, 0, 1, this.#taken), own);
      }
      this.#slab = new ArrayBuffer(slabBytes);
      this.#slabUsed = 0;
      got = this.#end.take(this.#slab, 0, batchMessages, this.#taken);
    }
    if (got > 0) {
      const last = 2 * (got - 1);
      this.#slabUsed = this.#taken[last] + align8(this.#taken[last + 1]);
    }
    return this.#took(got, this.#slab);
  }
}
