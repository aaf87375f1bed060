// The listeners of a Channel (src/ring/channel.ts): 'message', 'error' and 'close', kept and called
// as an EventEmitter keeps and calls them, with no type of Node's in the Channel's own.

/** The events of a Channel and their listeners. */
export interface ChannelEvents {
  /** A message: a copy lent while the listener runs (the channel's pool: later messages reuse
   * its bytes, so copy what you keep); with `zeroCopy`, a view of the queue valid while the
   * listener runs. */
  message: (message: Uint8Array) => void;
  /** Why the channel ended, when it ended with an error. */
  error: (err: Error) => void;
  /** The channel is closed and its memory freed. */
  close: () => void;
}
export type Listener = (arg?: never) => void;
const events = ['message', 'error', 'close'];

/** Throws err: from process.nextTick, an uncaught exception, as an EventEmitter's throw is. */
export function rethrow(err: unknown): never {
  throw err;
}

export class ChannelListeners {
  readonly #lists: Record<keyof ChannelEvents, Listener[]> = { message: [], error: [], close: [] };

  /** Checks and adds: true when it is the first 'message' listener (messages start flowing). */
  add(event: keyof ChannelEvents, listener: unknown): boolean {
    if (!events.includes(event)) {
      throw Object.assign(new TypeError(`The "event" argument must be one of 'message', 'error', 'close'. Received ${String(event)}`), { code: 'ERR_INVALID_ARG_VALUE' });
    }
    if (typeof listener !== 'function') {
      throw Object.assign(new TypeError(`The "listener" argument must be of type function. Received type ${typeof listener}`), { code: 'ERR_INVALID_ARG_TYPE' });
    }
    this.#lists[event].push(listener as Listener);
    return event === 'message' && this.#lists.message.length === 1;
  }

  /** Removes the last one added that is listener (or a once wrapper of it): true when that was
   * the last 'message' listener (messages stop flowing). */
  remove(event: keyof ChannelEvents, listener: unknown): boolean {
    const list = this.#lists[event];
    if (list === undefined) return false;
    let at = list.length - 1;
    while (at >= 0 && list[at] !== listener && (list[at] as { listener?: unknown }).listener !== listener) at--;
    if (at < 0) return false;
    list.splice(at, 1);
    return event === 'message' && list.length === 0;
  }

  count(event: keyof ChannelEvents): number {
    return this.#lists[event].length;
  }

  /** Calls the listeners. A listener's throw is reported as an EventEmitter's reaches the
   * event loop: an uncaught exception (process 'uncaughtException'), after this call returns,
   * so the channel's own state stays whole and it keeps delivering. */
  emit<E extends keyof ChannelEvents>(event: E, ...arg: Parameters<ChannelEvents[E]>): void {
    const list = this.#lists[event];
    try {
      if (list.length === 1) (list[0] as (...a: unknown[]) => void)(...arg);
      else for (const l of list.slice()) (l as (...a: unknown[]) => void)(...arg);
    } catch (err) {
      process.nextTick(rethrow, err);
    }
  }
}
