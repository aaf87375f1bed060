// RingSocket's options: below both the class (duplex.ts) and its public face (socket.ts), which
// import them, so that neither imports the other's types round a circle.
import type { BufferRing } from './ring.js';

export interface RingSocketOptions {
  /** The buffer ring the chunks arrive in (one may serve every socket of the Ring). */
  bufferRing: BufferRing;
  /** Keep the writable side open after the peer's EOF (net.Socket's option). Default false:
   * the socket ends its side too once everything written is sent. */
  allowHalfOpen?: boolean;
  /** destroy() closes the fd. Default true; false when the caller owns it. */
  closeFd?: boolean;
  /** The readable side's highWaterMark in bytes (Node's default otherwise): past it, receiving
   * pauses until the consumer reads. */
  readableHighWaterMark?: number;
  /** The writable side's highWaterMark in bytes (Node's default otherwise). */
  writableHighWaterMark?: number;
}
