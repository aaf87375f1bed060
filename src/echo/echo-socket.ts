// What the echo servers on node:stream sockets do per connection (node-server.ts on net.Socket,
// duplex-server.ts on RingSocket): the echo a Node user would write, with backpressure.
import type { EchoServerStats } from './types.js';

/** A stream socket with net.Socket's idle timeout and destroy (net.Socket, RingSocket). */
export interface EchoSocket extends NodeJS.ReadWriteStream {
  setTimeout(ms: number, callback?: () => void): this;
  destroy(): this;
}

/** Counts a new connection in stats and in `open` (until it closes), then echoes on it: every
 * chunk back, pausing reading while a write waits (backpressure); the peer's EOF answered with
 * its own once everything is sent; a reset or an idle timeout destroys it. */
export function serveEchoSocket<S extends EchoSocket>(socket: S, open: Set<S>, stats: EchoServerStats, idleTimeoutMs: number | undefined): void {
  stats.connections++;
  open.add(socket);
  stats.peakConnections = Math.max(stats.peakConnections, open.size);
  socket.on('close', () => open.delete(socket));
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
