// The `ring` server: an echo server written in TypeScript on iolab's Ring, as the C io_uring
// server is built: each connection is a stream (ring.recvMultishot) receiving into one
// provided-buffer ring, and every chunk is handed back to the stream's send side in the buffer
// it arrived in (stream.send). No Promise per chunk or per send: the Ring hands every
// connection's chunks of one reap to JS in one call. Order, and what a peer that does not read
// costs, are the stream core's, the C server's too (docs/ring.md): a chunk behind a waiting send
// is copied and its buffer goes back at once, and receiving pauses once 64 KiB wait to go out.
// Written on iolab's public API only (test/echo-public-api.test.ts holds it to that).
import { close, type RingStream } from '../index.js';
import { BUFFER_COUNT, BUFFER_SIZE, openRingListener, ringSetupWord, serveOnRing } from './ring-listener.js';
import type { EchoServer, EchoServerOptions, EchoServerStats } from './types.js';

interface Conn {
  stream: RingStream;
  /** The idle check's tick when a chunk last came, and the bytes queued then. */
  activeTick: number;
  queued: number;
  expired: boolean;
}

export async function startRingServer(options: EchoServerOptions): Promise<EchoServer> {
  const listener = await openRingListener(options);
  const { ring, pool } = listener;
  const stats: EchoServerStats = {
    connections: 0, refused: 0, bytesEchoed: 0, peakConnections: 0, idleClosed: 0, acceptPauses: 0,
    setup: `Ring (${ringSetupWord(ring)}), multishot recv into ${BUFFER_COUNT} x ${BUFFER_SIZE} B provided buffers, sends from them`,
  };
  const open = new Map<number, Conn>();
  let tick = 0; // advanced by the idle check: cheaper than a clock read per chunk

  const closeConn = (fd: number) => {
    if (open.delete(fd)) close(fd);
  };

  function serve(fd: number): void {
    // The handlers are the connection's own: data sends each chunk back from its buffer; end
    // (EOF once everything was received, an error, a cancel for idling, or the Ring closing)
    // lets the queued sends finish, then closes the socket.
    const conn = { activeTick: tick, queued: 0, expired: false } as Conn;
    conn.stream = ring.recvMultishot(fd, pool, {
      data(id, length) {
        stats.bytesEchoed += length;
        conn.activeTick = tick;
        conn.stream.send(id, length);
      },
      end() {
        conn.stream.close().catch(() => {}).finally(() => closeConn(fd));
      },
    });
    open.set(fd, conn);
  }

  // Accepted beyond maxConns: closed at once. Serving fails only once the Ring closed.
  function accept(fd: number): void {
    if (options.maxConns && open.size >= options.maxConns) {
      close(fd);
      stats.refused++;
      return;
    }
    try {
      serve(fd);
    } catch {
      close(fd);
      return;
    }
    stats.connections++;
    stats.peakConnections = Math.max(stats.peakConnections, open.size);
  }

  // Idle connections: no chunk came and nothing queued went out for the timeout. The cancel
  // ends the stream's recv and its waiting send; its end handler then closes it.
  const idleMs = options.idleTimeoutMs ?? 0;
  const tickMs = Math.min(Math.max(idleMs / 4, 10), 1000);
  const idleTicks = Math.ceil(idleMs / tickMs);
  const idleTimer = idleMs > 0
    ? setInterval(() => {
      tick++;
      for (const [fd, conn] of open) {
        if (conn.expired || tick - conn.activeTick < idleTicks) continue;
        const queued = conn.stream.queuedBytes;
        if (queued !== conn.queued) { // its sends moved: a slow reader, not an idle one
          conn.queued = queued;
          conn.activeTick = tick;
          continue;
        }
        conn.expired = true;
        stats.idleClosed++;
        ring.cancelFd(fd).catch(() => {});
        conn.stream.close().catch(() => {}).finally(() => closeConn(fd));
      }
    }, tickMs)
    : undefined;

  return serveOnRing(listener, stats, {
    serve: accept,
    beforeRingClose: () => clearInterval(idleTimer),
    afterRingClose: () => {
      for (const fd of [...open.keys()]) closeConn(fd); // their streams ended with the Ring
    },
  });
}
