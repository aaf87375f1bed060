// The `node` server: the echo server a Node user would write with the net module, with
// backpressure (pause reading while a write is queued) and TCP_NODELAY.
import { createServer, type Socket } from 'node:net';
import type { EchoServer, EchoServerOptions, EchoServerStats } from './types.js';

export async function startNodeServer(options: EchoServerOptions): Promise<EchoServer> {
  const sockets = new Set<Socket>();
  const stats: EchoServerStats = {
    connections: 0, refused: 0, bytesEchoed: 0, peakConnections: 0, idleClosed: 0, acceptPauses: 0,
    setup: 'node:net, pause on backpressure',
  };
  const server = createServer({ noDelay: true, allowHalfOpen: true }, (socket) => {
    if (options.maxConns && sockets.size >= options.maxConns) {
      stats.refused++;
      socket.destroy(); // accepted, then closed at once
      return;
    }
    stats.connections++;
    sockets.add(socket);
    stats.peakConnections = Math.max(stats.peakConnections, sockets.size);
    socket.on('data', (chunk: Buffer) => {
      stats.bytesEchoed += chunk.length;
      if (!socket.write(chunk)) socket.pause();
    });
    socket.on('drain', () => socket.resume());
    socket.on('end', () => socket.end()); // half-close: finish echoing, then close our side
    socket.on('error', () => socket.destroy()); // resets are the peer's business
    socket.on('close', () => sockets.delete(socket));
    if (options.idleTimeoutMs) {
      // Node's socket timeout counts reads and completed writes: a peer that stopped reading
      // leaves a write pending and times out like one that went quiet.
      socket.setTimeout(options.idleTimeoutMs, () => {
        stats.idleClosed++;
        socket.destroy();
      });
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: options.host, port: options.port, backlog: 4096 }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  // After listening, an error is a failed accept; it must not end the server. (When fds run
  // out, libuv accepts and closes what it cannot keep, with a reserve fd, so it never pauses.)
  server.on('error', () => {});
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  let resolveClosed!: (stats: EchoServerStats) => void;
  const closed = new Promise<EchoServerStats>((resolve) => (resolveClosed = resolve));
  let stopping = false;
  return {
    port,
    closed,
    stop() {
      if (!stopping) {
        stopping = true;
        server.close(() => resolveClosed(stats));
        for (const s of sockets) s.destroy();
      }
      return closed;
    },
  };
}
