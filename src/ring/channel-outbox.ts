// The sending half of a Channel (src/ring/channel.ts): a message copied into the queue at once
// when it fits, and otherwise kept, with every later one, until the other side frees room. A
// list given to sendMany goes in one call into the addon (native/channel_messages.cc), which
// copies its messages in and tells the other side once for all of them.
import type { NativeChannelEnd } from '../native.js';

/** A message: one view, or views sent together as one message. */
export type ChannelMessage = ArrayBufferView | readonly ArrayBufferView[];

/** A send waiting for room: one message, or the rest of a sendMany's list from `next` on. */
interface PendingSend {
  messages: readonly ChannelMessage[];
  next: number;
  /** sendMany's: its error says how many of the list were sent. */
  many: boolean;
  resolve(): void;
  reject(err: Error): void;
}

function byteLength(message: ChannelMessage | undefined): number {
  if (!Array.isArray(message)) return (message as ArrayBufferView | undefined)?.byteLength ?? 0;
  let n = 0;
  for (const view of message as ArrayBufferView[]) n += view?.byteLength ?? 0;
  return n;
}

export class Outbox {
  readonly #end: NativeChannelEnd;
  readonly #sends: PendingSend[] = [];
  /** The other side wrote over the queue: the channel ends (before the error is thrown). */
  readonly #corrupt: (err: Error) => void;

  constructor(end: NativeChannelEnd, corrupt: (err: Error) => void) {
    this.#end = end;
    this.#corrupt = corrupt;
  }

  /** Sends wait for room. */
  get waiting(): boolean {
    return this.#sends.length > 0;
  }

  /** The bytes of the first message waiting: the room to wait for. */
  get nextBytes(): number {
    const s = this.#sends[0];
    return s === undefined ? 0 : byteLength(s.messages[s.next]);
  }

  // (no closure per call here: trySend is the per-message hot path)
  trySend(message: ChannelMessage): boolean {
    if (this.#sends.length > 0) return false;
    try {
      return this.#end.send(message);
    } catch (err) {
      this.#failed(err);
      throw err;
    }
  }

  trySendMany(messages: readonly ChannelMessage[]): number {
    if (this.#sends.length > 0) return 0;
    try {
      return this.#end.sendMany(messages, 0);
    } catch (err) {
      this.#failed(err);
      throw err;
    }
  }

  /** Keeps messages[next...] until room comes (flush); many: they came from sendMany. */
  wait(messages: readonly ChannelMessage[], next: number, many: boolean): Promise<void> {
    return new Promise((resolve, reject) => this.#sends.push({ messages, next, many, resolve, reject }));
  }

  /** Sends what waits, in order, while it fits; a send that fails rejects and the next goes on,
   * unless the failure ended the channel (closed() then says so). */
  flush(closed: () => boolean): void {
    while (this.#sends.length > 0) {
      const s = this.#sends[0];
      try {
        s.next += s.many ? this.#end.sendMany(s.messages, s.next) : Number(this.#end.send(s.messages[0]));
      } catch (err) {
        this.#failed(err);
        this.#sends.shift();
        if (s.many) (err as { sent?: number }).sent = s.next + ((err as { sent?: number }).sent ?? 0);
        s.reject(err as Error);
        if (closed()) return;
        continue;
      }
      if (s.next < s.messages.length) return;
      this.#sends.shift();
      s.resolve();
    }
  }

  /** Fails every send that waits. */
  fail(err: Error): void {
    for (const s of this.#sends.splice(0)) s.reject(err);
  }

  /** A send threw: a queue the other side wrote over ends the channel. */
  #failed(err: unknown): void {
    if ((err as { code?: string }).code === 'ERR_CHANNEL_PROTOCOL') this.#corrupt(err as Error);
  }
}
