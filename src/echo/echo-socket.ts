// What the echo servers on node:stream sockets do per connection (node-server.ts on net.Socket,
// duplex-server.ts on RingSocket): the echo a Node user would write, with backpressure.
import type { EchoServerStats } from './types.js';

/** A stream socket with net.Socket's idle timeout and destroy (net.Socket, RingSocket). */
export interface EchoSocket extends NodeJS.ReadWriteStream {
  setTimeout(ms: number, callback?: () => void): this;
  destroy(): this;
}

/** Echoes every chunk back, pausing reading while a write waits (backpressure); answers the
 * peer's EOF with its own once everything is sent; a reset or an idle timeout destroys it. */
export function echoSocket(socket: EchoSocket, stats: EchoServerStats, idleTimeoutMs: number | undefined): void {
  socket.on('data', (chunk: Buffer) => {
    stats.bytesEchoed += chunk.length;
    if (!socket.write(chunk)) socket.pause();
  });
  socket.on('drain', () => socket.resume());
  socket.on('end', () => socket.end()); // half-close: finish echoing, then close our side
  socket.on('error', () => socket.destroy()); // resets are the peer's business
  if (idleTimeoutMs) {
    // The timeout counts reads and completed writes: a peer that stopped reading leaves a
    // write pending and times out like one that went quiet.
    socket.setTimeout(idleTimeoutMs, () => {
      stats.idleClosed++;
      socket.destroy();
    });
  }
}
