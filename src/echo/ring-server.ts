// The `ring` engine: an echo server written in TypeScript on iolab's Ring. Each connection
// is an async loop (recv into its buffer, send until all of it is out, again), so order is
// kept and a slow reader stops its own loop; the Ring batches every connection's ops into
// one io_uring_submit per turn of the event loop.
import { native, type EchoServerStats } from '../native.js';
import { Ring, RingClosedError } from '../ring.js';
import type { EchoServer, EchoServerOptions } from './servers.js';

const BUFFER_SIZE = 8192;
const ACCEPTS_IN_FLIGHT = 4;

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
    connections: 0, refused: 0, bytesEchoed: 0, peakConnections: 0,
    setup: `Ring (${ring.features.deferTaskrun ? 'DEFER_TASKRUN' : ring.features.coopTaskrun ? 'COOP_TASKRUN' : 'plain'}), ${BUFFER_SIZE} B buffer per connection`,
  };
  const open = new Set<number>();
  const loops = new Set<Promise<void>>();
  let stopping = false;

  const closeConn = (fd: number) => {
    if (open.delete(fd)) native.close(fd);
  };

  async function serve(fd: number): Promise<void> {
    const buffer = Buffer.allocUnsafe(BUFFER_SIZE);
    try {
      for (;;) {
        const n = await ring.recv(fd, buffer);
        if (n === 0) break; // the peer is done sending and everything was echoed: close
        let sent = 0;
        while (sent < n) sent += await ring.send(fd, buffer.subarray(sent, n));
        stats.bytesEchoed += n;
      }
    } catch {
      // ECONNRESET, EPIPE, or the ring closing at stop: the connection ends here either way.
    } finally {
      closeConn(fd);
    }
  }

  async function acceptLoop(): Promise<void> {
    while (!stopping) {
      let fd: number;
      try {
        fd = await ring.accept(listen.fd);
      } catch (err) {
        if (stopping || err instanceof RingClosedError) return;
        await new Promise((r) => setTimeout(r, 10)); // EMFILE and the like: breathe, retry
        continue;
      }
      if (stopping || (options.maxConns && open.size >= options.maxConns)) {
        native.close(fd); // accepted, then closed at once
        if (!stopping) stats.refused++;
        continue;
      }
      native.echoSetNoDelay(fd);
      open.add(fd);
      stats.connections++;
      stats.peakConnections = Math.max(stats.peakConnections, open.size);
      const loop = serve(fd);
      loops.add(loop);
      void loop.finally(() => loops.delete(loop));
    }
  }

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
        await ring.close(); // in-flight accept/recv/send reject; every loop then ends
        await Promise.allSettled([...acceptors, ...loops]);
        for (const fd of [...open]) closeConn(fd);
        native.close(listen.fd);
        resolveClosed(stats);
        return stats;
      })();
      return stopped;
    },
  };
}
