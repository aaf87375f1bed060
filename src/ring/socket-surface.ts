// net.Socket's surface that only asks the kernel about the fd: addresses (getsockname,
// getpeername), TCP_NODELAY and SO_KEEPALIVE, resetAndDestroy and destroySoon, and the getters
// a connected socket answers the same way. RingSocketDuplex (duplex.ts) extends it with the
// reading and writing over a Ring.
import { Duplex } from 'node:stream';
import type { AddressInfo } from '../native.js';
import { getpeername, getsockname, setsockopt } from '../syscalls.js';

export abstract class SocketSurface extends Duplex {
  /** The socket. */
  abstract readonly fd: number;
  #peer: AddressInfo | string | undefined;
  #local: AddressInfo | string | undefined;

  /** Destroys the socket and resets the TCP connection (the peer reads ECONNRESET, not EOF):
   * SO_LINGER 0 before the close, as net.Socket's resetAndDestroy(). TCP only. */
  resetAndDestroy(): this {
    if (this.destroyed) return this; // as net.Socket's: nothing left to reset (its fd may name another socket now)
    const local = this.address();
    if (!('family' in local)) {
      throw Object.assign(new TypeError('Invalid handle type: resetAndDestroy() takes a TCP socket'), { code: 'ERR_INVALID_HANDLE_TYPE' });
    }
    try {
      setsockopt(this.fd, 'SO_LINGER', 0);
    } catch { /* not a socket the kernel knows now */ }
    return this.destroy();
  }

  /** Ends the writable side, then destroys the socket once that is done (net.Socket's). */
  destroySoon(): void {
    if (this.writable) this.end();
    if (this.writableFinished) this.destroy();
    else this.once('finish', () => this.destroy());
  }

  /** TCP_NODELAY (ignored on a socket that has none, as net.Socket does for pipes). */
  setNoDelay(noDelay = true): this {
    try {
      setsockopt(this.fd, 'TCP_NODELAY', noDelay);
    } catch { /* not TCP */ }
    return this;
  }

  /** SO_KEEPALIVE; the delay before the first probe stays the system's. */
  setKeepAlive(enable = false, _initialDelay?: number): this {
    try {
      setsockopt(this.fd, 'SO_KEEPALIVE', enable);
    } catch { /* not a socket with keep-alive */ }
    return this;
  }

  /** Bytes written and not yet sent (net.Socket's bufferSize: writableLength). */
  get bufferSize(): number {
    return this.writableLength;
  }

  /** Always false: the socket is connected when it is made (net.Socket's `pending`). */
  get pending(): boolean {
    return false;
  }

  /** The local address (getsockname), as net.Socket's address(): {} once destroyed, also when
   * it was read before (net's handle is gone then). */
  address(): AddressInfo | Record<string, never> {
    if (this.destroyed) return {};
    this.#local ??= nameOf(getsockname, this.fd, false);
    return typeof this.#local === 'object' ? this.#local : {};
  }

  get remoteAddress(): string | undefined {
    return this.#peerInfo()?.address;
  }
  get remotePort(): number | undefined {
    return this.#peerInfo()?.port;
  }
  get remoteFamily(): string | undefined {
    return this.#peerInfo()?.family;
  }
  get localAddress(): string | undefined {
    const a = this.address();
    return 'address' in a ? a.address : undefined;
  }
  get localPort(): number | undefined {
    const a = this.address();
    return 'port' in a ? a.port : undefined;
  }
  get localFamily(): string | undefined {
    const a = this.address();
    return 'family' in a ? a.family : undefined;
  }

  /** Always false: the socket is connected when it is made. */
  get connecting(): boolean {
    return false;
  }
  /** As net.Socket: 'open', 'readOnly', 'writeOnly' or 'closed'. */
  get readyState(): 'open' | 'readOnly' | 'writeOnly' | 'closed' {
    if (this.readable && this.writable) return 'open';
    if (this.readable) return 'readOnly';
    if (this.writable) return 'writeOnly';
    return 'closed';
  }

  #peerInfo(): AddressInfo | undefined {
    this.#peer ??= nameOf(getpeername, this.fd, this.destroyed);
    return typeof this.#peer === 'object' ? this.#peer : undefined;
  }
}

/** The name of the fd's socket or its peer; '' when it has none (or after destroy). */
function nameOf(get: (fd: number) => string | AddressInfo, fd: number, destroyed: boolean): AddressInfo | string {
  if (destroyed) return '';
  try {
    return get(fd);
  } catch {
    return '';
  }
}
