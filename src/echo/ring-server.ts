// The `ring` server: an echo server written in TypeScript on iolab's Ring, as the C io_uring
// server is built: each connection is a stream (ring.recvMultishot) receiving into one
// provided-buffer ring, and every chunk goes straight back out of the buffer it arrived in
// (stream.send), which returns to the ring once sent. No Promise per chunk or per send: the
// Ring hands every connection's chunks of one reap to JS in one call. Order is the stream's
// (one send at a time, short sends continued); a peer that does not read pauses its own
// receiving once 64 KiB wait to go out, and what still arrives meanwhile goes out as copies.
// Written on iolab's public API only (test/echo-public-api.test.ts holds it to that).
import { close, type RingStream } from '../index.js';
import { BUFFER_COUNT, BUFFER_SIZE, openRingListener, ringSetupWord, serveOnRing } from './ring-listener.js';
import type { EchoServer, EchoServerOptions, EchoServerStats } from './types.js';

const HOLD_BYTES = 64 << 10; // the stream's pause threshold (recvMultishot's default pauseAt)
const CHECK_BYTES = 16 << 10;

interface Conn {
  stream: RingStream;
  /** The idle check's tick when a chunk last came, and the bytes queued then. */
  activeTick: number;
  queued: number;
  expired: boolean;
  /** Bytes received since queuedBytes was last asked, and whether chunks go out as copies. */
  unchecked: number;
  copying: boolean;
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
    const conn = { activeTick: tick, queued: 0, expired: false, unchecked: 0, copying: false } as Conn;
    conn.stream = ring.recvMultishot(fd, pool, {
      data(id, length) {
        stats.bytesEchoed += length;
        conn.activeTick = tick;
        // The kernel may fill many buffers of a stream before its pause lands (a peer that
        // writes megabytes and never reads): past HOLD_BYTES queued, chunks go out as copies
        // and their buffers return at once, so such peers cannot drain the pool and starve
        // everyone else (the C server's backlog does the same). Checked every CHECK_BYTES.
        conn.unchecked += length;
        if (conn.unchecked >= CHECK_BYTES) {
          conn.unchecked = 0;
          conn.copying = conn.stream.queuedBytes >= HOLD_BYTES;
        }
        if (!conn.copying) {
          conn.stream.send(id, length);
        } else {
          conn.stream.write(pool.view(id).subarray(0, length));
          pool.release(id);
        }
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
