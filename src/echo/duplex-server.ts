// The `duplex` engine: the `node` engine's echo (echo-socket.ts: a 'data' handler that writes
// each chunk back, pausing on backpressure) on RingSocket, the node:stream Duplex over a Ring
// stream, instead of net.Socket. Beside the `ring` engine (the same Ring, buffer ring and
// accepts, no streams API) its cost per request is what node:stream adds on the Ring.
// Written on iolab's public API only (test/echo-public-api.test.ts holds it to that).
import { close, Ring, RingSocket } from '../index.js';
import { echoSocket } from './echo-socket.js';
import { listenTcp } from './listen.js';
import { ringAcceptLoops } from './ring-accept.js';
import type { EchoServer, EchoServerOptions, EchoServerStats } from './types.js';

// As the ring engine's: 8192 x 4 KiB buffers; each chunk is copied out and its buffer given
// back at once, so far fewer are in use at a time.
const BUFFER_SIZE = 4096;
const BUFFER_COUNT = 8192;
const ACCEPTS_IN_FLIGHT = 4;

export async function startDuplexServer(options: EchoServerOptions): Promise<EchoServer> {
  const ring = new Ring({ entries: 4096, cqEntries: 16384 });
  let listen: { fd: number; port: number };
  let pool: ReturnType<Ring['setupBufRing']>;
  try {
    pool = ring.setupBufRing({ count: BUFFER_COUNT, size: BUFFER_SIZE });
    listen = listenTcp(options.host, options.port, 4096);
  } catch (err) {
    await ring.close();
    throw err;
  }
  const stats: EchoServerStats = {
    connections: 0, refused: 0, bytesEchoed: 0, peakConnections: 0, idleClosed: 0, acceptPauses: 0,
    setup: `RingSocket (node:stream Duplex) on a Ring, multishot recv into ${BUFFER_COUNT} x ${BUFFER_SIZE} B provided buffers copied out, a send per write, pause on backpressure`,
  };
  const sockets = new Set<RingSocket>();
  const stopped$ = new AbortController();

  function accept(fd: number): void {
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
    stats.connections++;
    sockets.add(socket);
    stats.peakConnections = Math.max(stats.peakConnections, sockets.size);
    socket.on('close', () => sockets.delete(socket));
    echoSocket(socket, stats, options.idleTimeoutMs);
  }

  const acceptors = ringAcceptLoops(ring, listen.fd, ACCEPTS_IN_FLIGHT, stats, stopped$.signal, accept);
  let resolveClosed!: (s: EchoServerStats) => void;
  const closed = new Promise<EchoServerStats>((r) => (resolveClosed = r));
  let stopped: Promise<EchoServerStats> | undefined;
  return {
    port: listen.port,
    closed,
    stop() {
      stopped ??= (async () => {
        stopped$.abort();
        const open = [...sockets].map((s) => new Promise((r) => s.once('close', r))); // once() would reject on 'error'
        await ring.close(); // every socket errors (RingClosedError), is destroyed, closes its fd
        await Promise.allSettled([...acceptors, ...open]);
        close(listen.fd);
        resolveClosed(stats);
        return stats;
      })();
      return stopped;
    },
  };
}
