// The Ring's public face (src/index.ts re-exports it) and the one module the rest of iolab
// imports it from: class Ring and its errors (ring.ts), buffer rings and streams (stream.ts),
// the Duplex over a stream (socket.ts: its public face; duplex.ts: the class).
export { Ring, RingClosedError, BufferRing, RingStream, isIoUringUnavailable, ringTestRefuseCancelAny } from './ring.js';
export type { RingOptions, RingFeatures, RingStats, RingAddress, ReadvRequest, RecvHandlers, RecvMultishotOptions } from './ring.js';
export { RingSocket } from './socket.js';
export type { RingSocketOptions, RingSocketConstructor } from './socket.js';
