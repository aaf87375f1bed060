// The `node` server: the echo server a Node user would write with the net module, with
// backpressure (pause reading while a write is queued; echo-socket.ts) and TCP_NODELAY.
import { createServer, type Socket } from 'node:net';
import { serveEchoSocket } from './echo-socket.js';
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
    serveEchoSocket(socket, sockets, stats, options.idleTimeoutMs);
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
