// A TLS socket over a RingSocket has the RingSocket's addresses. node:tls wraps a Duplex that is
// no net.Socket in a stream whose handle has no getpeername/getsockname, so its remoteAddress,
// remotePort, localAddress... would be undefined (node's own https server, over a net.Socket,
// has them); net.Socket reads them from `_peername` and `_sockname` once set, which is what
// this sets.
import { RingSocketDuplex } from './duplex.js';

interface TlsSocketLike {
  _handle?: { _parentWrap?: { stream?: unknown } } | null;
  _peername?: object;
  _sockname?: object;
}

/** Sets the addresses of `tlsSocket` from the RingSocket under it (`raw`, or the one its
 * handle wraps); nothing where it has none. */
export function tlsAddressesFrom(tlsSocket: unknown, raw?: unknown): void {
  const s = tlsSocket as TlsSocketLike | null;
  const under = raw ?? s?._handle?._parentWrap?.stream;
  if (s === null || typeof s !== 'object' || !(under instanceof RingSocketDuplex)) return;
  if (under.remoteAddress !== undefined) s._peername = { address: under.remoteAddress, family: under.remoteFamily, port: under.remotePort };
  const local = under.address();
  if ('address' in local) s._sockname = { ...local };
}
