// RingSocket's public face (duplex.ts is the class): its type is written here without Node's
// own types, so that the package's types need no @types/node. Where a project has them,
// NodeJS.ReadWriteStream is theirs (merged with the empty one below): a RingSocket then has
// every member of a readable and writable stream, and stream.pipeline takes it. At run time it
// is a node:stream Duplex (instanceof Duplex).
import type { AddressInfo } from '../native.js';
import { RingSocketDuplex } from './duplex.js';
import type { Ring } from './ring.js';
import type { RingSocketOptions } from './socket-options.js';

declare global {
  namespace NodeJS {
    interface ReadWriteStream {}
  }
}

export type { RingSocketOptions };

/** A node:stream Duplex over a connected stream socket, receiving and sending through a Ring,
 * with net.Socket's members below. Chunks are copies: a consumer may keep them. */
export interface RingSocket extends NodeJS.ReadWriteStream {
  /** The socket. */
  readonly fd: number;
  /** Bytes received so far. */
  readonly bytesRead: number;
  /** Bytes sent so far (not counting what waits to be sent). */
  readonly bytesWritten: number;
  readonly remoteAddress: string | undefined;
  readonly remotePort: number | undefined;
  readonly remoteFamily: string | undefined;
  readonly localAddress: string | undefined;
  readonly localPort: number | undefined;
  /** Always false: the socket is connected when it is made. */
  readonly connecting: boolean;
  readonly readyState: 'open' | 'readOnly' | 'writeOnly' | 'closed';
  /** The idle timeout set by setTimeout(), in ms (0: none). */
  readonly timeout: number;
  readonly destroyed: boolean;
  /** The local address (getsockname), as net.Socket's address(). */
  address(): AddressInfo | Record<string, never>;
  /** TCP_NODELAY (ignored on a socket that has none). */
  setNoDelay(noDelay?: boolean): this;
  /** SO_KEEPALIVE; the delay before the first probe stays the system's. */
  setKeepAlive(enable?: boolean, initialDelay?: number): this;
  /** Emits 'timeout' after `ms` without a byte received or sent (0: never); the socket stays open. */
  setTimeout(ms: number, callback?: () => void): this;
  /** Stops receiving, cancels a waiting send, closes the fd (unless closeFd: false) once the
   * kernel holds no op of it; 'error' (when given one), then 'close'. */
  destroy(error?: Error): this;
  /** Ends the writable side, then destroys the socket once that is done. */
  destroySoon(): void;
  /** Destroys it and resets the TCP connection (SO_LINGER 0): the peer reads ECONNRESET. */
  resetAndDestroy(): this;
  /** Its receiving keeps the event loop alive (the default). */
  ref(): this;
  /** Its receiving no longer keeps the event loop alive, as net.Socket's unref(). */
  unref(): this;
  /** Bytes written and not yet sent. */
  readonly bufferSize: number;
  /** Always false: the socket is connected when it is made. */
  readonly pending: boolean;
}

export interface RingSocketConstructor {
  /** Arms a stream on `fd` (a connected stream socket) into `options.bufferRing`. */
  new (ring: Ring, fd: number, options: RingSocketOptions): RingSocket;
  readonly prototype: RingSocket;
}

export const RingSocket: RingSocketConstructor = RingSocketDuplex as unknown as RingSocketConstructor;
