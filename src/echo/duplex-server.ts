// The `duplex` engine: the `node` engine's echo (echo-socket.ts: a 'data' handler that writes
// each chunk back, pausing on backpressure) on RingSocket, the node:stream Duplex over a Ring
// stream, instead of net.Socket. Beside the `ring` engine (the same Ring, buffer ring and
// accepts, no streams API) its cost per request is what node:stream adds on the Ring.
// Written on iolab's public API only (test/echo-public-api.test.ts holds it to that).
import { close, RingSocket } from '../index.js';
import { serveEchoSocket } from './echo-socket.js';
import { BUFFER_COUNT, BUFFER_SIZE, openRingListener, ringSetupWord, serveOnRing } from './ring-listener.js';
import type { EchoServer, EchoServerOptions, EchoServerStats } from './types.js';

export async function startDuplexServer(options: EchoServerOptions): Promise<EchoServer> {
  const listener = await openRingListener(options);
  const { ring, pool } = listener;
  const stats: EchoServerStats = {
    connections: 0, refused: 0, bytesEchoed: 0, peakConnections: 0, idleClosed: 0, acceptPauses: 0,
    setup: `RingSocket (node:stream Duplex) on a Ring (${ringSetupWord(ring)}), multishot recv into ${BUFFER_COUNT} x ${BUFFER_SIZE} B provided buffers copied out, a send per write, pause on backpressure`,
  };
  const sockets = new Set<RingSocket>();
  return serveOnRing(listener, stats, {
    serve(fd) {
      if (options.maxConns && sockets.size >= options.maxConns) {
        close(fd); // accepted, then closed at once
        stats.refused++;
        return;
      }
      let socket: RingSocket;
      try {
        socket = new RingSocket(ring, fd, { bufferRing: pool, allowHalfOpen: true });
      } catch {
        close(fd); // the Ring closed meanwhile
        return;
      }
      serveEchoSocket(socket, sockets, stats, options.idleTimeoutMs);
    },
    // The Ring's close ends every socket (RingClosedError): each is destroyed and closes its fd.
    beforeRingClose: () => Promise.all([...sockets].map((s) => new Promise((r) => s.once('close', r)))), // once() of node:events would reject on 'error'
  });
}
