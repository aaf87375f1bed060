// The `ring` engine: an echo server written in TypeScript on iolab's Ring. Each connection
// is an async loop (recv into its buffer, send until all of it is out, again), so order is
// kept and a slow reader stops its own loop; the Ring batches every connection's ops into
// one io_uring_submit per turn of the event loop.
import { setTimeout as sleep } from 'node:timers/promises';
import { native, type EchoServerStats } from '../native.js';
import { Ring, RingClosedError } from '../ring.js';
import { nextAcceptPauseMs, type EchoServer, type EchoServerOptions } from './types.js';

const BUFFER_SIZE = 8192;
const ACCEPTS_IN_FLIGHT = 4;

interface Conn {
  lastActive: number;
  /** Closed for idling: its loop ends at its next step. */
  expired: boolean;
}

export async function startRingServer(options: EchoServerOptions): Promise<EchoServer> {
  const ring = new Ring({ entries: 4096 });
  let listen: { fd: number; port: number };
  try {
    listen = native.echoListen(options.host, options.port, { backlog: 4096 });
  } catch (err) {
    await ring.close();
    throw err;
  }
  const stats: EchoServerStats = {
    connections: 0, refused: 0, bytesEchoed: 0, peakConnections: 0, idleClosed: 0, acceptPauses: 0,
    setup: `Ring (${ring.features.deferTaskrun ? 'DEFER_TASKRUN' : ring.features.coopTaskrun ? 'COOP_TASKRUN' : 'plain'}), ${BUFFER_SIZE} B buffer per connection`,
  };
  const open = new Map<number, Conn>();
  const loops = new Set<Promise<void>>();
  let stopping = false;
  const stopped$ = new AbortController(); // ends an accept loop's pause at once on stop

  const closeConn = (fd: number) => {
    if (open.delete(fd)) native.close(fd);
  };

  async function serve(fd: number, conn: Conn): Promise<void> {
    const buffer = Buffer.allocUnsafe(BUFFER_SIZE);
    try {
      while (!conn.expired) {
        const n = await ring.recv(fd, buffer);
        if (n === 0) break; // the peer is done sending and everything was echoed: close
        conn.lastActive = performance.now();
        let sent = 0;
        while (sent < n && !conn.expired) {
          sent += await ring.send(fd, buffer.subarray(sent, n));
          conn.lastActive = performance.now();
        }
        stats.bytesEchoed += sent;
      }
    } catch {
      // ECONNRESET, EPIPE, a cancel for idling, or the ring closing at stop: the connection ends.
    } finally {
      closeConn(fd);
    }
  }

  async function acceptLoop(): Promise<void> {
    let pauseMs = 0;
    while (!stopping) {
      let fd: number;
      try {
        fd = await ring.accept(listen.fd);
        pauseMs = 0;
      } catch (err) {
        if (stopping || err instanceof RingClosedError) return;
        // EMFILE and the like would fail again at once: wait, longer while it keeps failing.
        pauseMs = nextAcceptPauseMs(pauseMs);
        stats.acceptPauses++;
        await sleep(pauseMs, undefined, { signal: stopped$.signal }).catch(() => {});
        continue;
      }
      if (stopping || (options.maxConns && open.size >= options.maxConns)) {
        native.close(fd); // accepted, then closed at once
        if (!stopping) stats.refused++;
        continue;
      }
      native.echoSetNoDelay(fd);
      const conn: Conn = { lastActive: performance.now(), expired: false };
      open.set(fd, conn);
      stats.connections++;
      stats.peakConnections = Math.max(stats.peakConnections, open.size);
      const loop = serve(fd, conn);
      loops.add(loop);
      void loop.finally(() => loops.delete(loop));
    }
  }

  // Idle connections: a connection whose recv or send has waited longer than the timeout gets
  // its ops cancelled, which ends its loop.
  const idleMs = options.idleTimeoutMs ?? 0;
  const idleTimer = idleMs > 0
    ? setInterval(() => {
      const now = performance.now();
      for (const [fd, conn] of open) {
        if (!conn.expired && now - conn.lastActive >= idleMs) {
          conn.expired = true;
          stats.idleClosed++;
          ring.cancelFd(fd).catch(() => {});
        }
      }
    }, Math.min(Math.max(idleMs / 4, 10), 1000))
    : undefined;

  const acceptors = Array.from({ length: ACCEPTS_IN_FLIGHT }, acceptLoop);
  let resolveClosed!: (s: EchoServerStats) => void;
  const closed = new Promise<EchoServerStats>((r) => (resolveClosed = r));
  let stopped: Promise<EchoServerStats> | undefined;
  return {
    port: listen.port,
    closed,
    stop() {
      stopped ??= (async () => {
        stopping = true;
        stopped$.abort();
        clearInterval(idleTimer);
        await ring.close(); // in-flight accept/recv/send reject; every loop then ends
        await Promise.allSettled([...acceptors, ...loops]);
        for (const fd of [...open.keys()]) closeConn(fd);
        native.close(listen.fd);
        resolveClosed(stats);
        return stats;
      })();
      return stopped;
    },
  };
}
