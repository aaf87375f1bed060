// What the echo servers on the Ring share (ring-server.ts, duplex-server.ts): the Ring, its
// buffer ring and the listening socket; a few IORING_OP_ACCEPTs in flight, each handing its fd
// on; and the stop that closes them in order.
import { setTimeout as sleep } from 'node:timers/promises';
import { close, Ring, RingClosedError, type BufferRing } from '../index.js';
import { listenTcp } from './listen.js';
import { nextAcceptPauseMs, type EchoServer, type EchoServerOptions, type EchoServerStats } from './types.js';

export const BUFFER_SIZE = 4096;
export const BUFFER_COUNT = 8192; // power of two, <= 32768; 32 MiB
const ACCEPTS_IN_FLIGHT = 4;

export interface RingListener {
  ring: Ring;
  pool: BufferRing;
  listen: { fd: number; port: number };
}

/** A Ring, its BUFFER_COUNT x BUFFER_SIZE buffer ring and a TCP socket listening on the
 * options' address; the Ring is closed again when the rest fails. */
export async function openRingListener(options: EchoServerOptions): Promise<RingListener> {
  const ring = new Ring({ entries: 4096, cqEntries: 16384 });
  try {
    const pool = ring.setupBufRing({ count: BUFFER_COUNT, size: BUFFER_SIZE });
    return { ring, pool, listen: listenTcp(options.host, options.port, 4096) };
  } catch (err) {
    await ring.close();
    throw err;
  }
}

/** `ring.features` in a word, for the server's setup line. */
export function ringSetupWord(ring: Ring): string {
  return ring.features.deferTaskrun ? 'DEFER_TASKRUN' : ring.features.coopTaskrun ? 'COOP_TASKRUN' : 'plain';
}

export interface RingServerHooks {
  /** Each accepted fd (the hook owns it). */
  serve(fd: number): void;
  /** On stop, before the Ring closes; what it returns is waited for with the accept loops. */
  beforeRingClose?(): unknown;
  /** On stop, once the Ring closed and the accept loops ended. */
  afterRingClose?(): void;
}

/** Accepts until stop(): ACCEPTS_IN_FLIGHT loops on the Ring, each fd to hooks.serve. A failed
 * accept (EMFILE and the like, which would fail again at once) pauses that loop, longer while it
 * keeps failing (stats.acceptPauses). stop() closes the Ring (its accepts reject, its streams
 * end), then the listening socket. */
export function serveOnRing({ ring, listen }: RingListener, stats: EchoServerStats, hooks: RingServerHooks): EchoServer {
  const stopped$ = new AbortController(); // stops the loops, and ends a pause at once
  async function acceptLoop(): Promise<void> {
    let pauseMs = 0;
    while (!stopped$.signal.aborted) {
      let fd: number;
      try {
        fd = await ring.accept(listen.fd);
        pauseMs = 0;
      } catch (err) {
        if (stopped$.signal.aborted || err instanceof RingClosedError) return;
        pauseMs = nextAcceptPauseMs(pauseMs);
        stats.acceptPauses++;
        await sleep(pauseMs, undefined, { signal: stopped$.signal }).catch(() => {});
        continue;
      }
      if (stopped$.signal.aborted) close(fd); // accepted, then closed at once
      else hooks.serve(fd);
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
        stopped$.abort();
        const pending = hooks.beforeRingClose?.();
        await ring.close();
        await Promise.allSettled([...acceptors, pending]);
        hooks.afterRingClose?.();
        close(listen.fd);
        resolveClosed(stats);
        return stats;
      })();
      return stopped;
    },
  };
}
