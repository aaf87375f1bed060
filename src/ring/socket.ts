// RingSocket's public face (duplex.ts is the class): its type is written here so that the
// package's types need no @types/node. It extends NodeJS.ReadStream, @types/node's global name
// for process.stdin's type (tty.ReadStream, a net.Socket, a stream.Duplex), the one path to
// net.Socket that needs no import of 'node:net'. Where a project has Node's types, a RingSocket
// is a net.Socket to the compiler (net's events and their listeners' arguments, accepted where a
// net.Socket or a Duplex is asked for); where it has none, that interface is the empty one below
// and a RingSocket has its own members only. At run time it is a node:stream Duplex.
import type { AddressInfo } from '../native.js';
import { RingSocketDuplex } from './duplex.js';
import type { Ring } from './ring.js';
import type { RingSocketOptions } from './socket-options.js';

export type { RingSocketOptions };

declare global {
  namespace NodeJS {
    interface ReadStream {}
  }
}

/** A node:stream Duplex over a connected stream socket, receiving and sending through a Ring,
 * with net.Socket's members. Chunks are copies: a consumer may keep them. */
export interface RingSocket extends NodeJS.ReadStream, SocketMembers {
  /** The socket. */
  readonly fd: number;
  // net.Socket's and tty.ReadStream's members that a RingSocket has not: never, so that a use is
  // refused while a RingSocket still goes where a net.Socket is asked for.
  /** None: the socket is connected when it is made. */
  readonly connect: never;
  readonly autoSelectFamilyAttemptedAddresses: never;
  readonly isTTY: never;
  readonly isRaw: never;
  readonly setRawMode: never;
}

/** Where the program has Node's types, net.Socket's own declarations of these members (their
 * overloads differ between @types/node versions, and a declaration of ours could conflict with
 * one); where it has none, RingSocket's. */
type SocketMembers = NodeJS.ReadStream extends { setKeepAlive: unknown } ? {} : RingSocketMembers;

/** RingSocket's net.Socket members, declared without Node's types. */
interface RingSocketMembers {
  /** Bytes received so far. */
  readonly bytesRead: number;
  /** Bytes sent so far (not counting what waits to be sent). */
  readonly bytesWritten: number;
  readonly remoteAddress: string | undefined;
  readonly remotePort: number | undefined;
  readonly remoteFamily: string | undefined;
  readonly localAddress: string | undefined;
  readonly localPort: number | undefined;
  readonly localFamily: string | undefined;
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
