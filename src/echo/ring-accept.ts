// The accept loops of the echo servers written on the Ring (ring-server.ts, duplex-server.ts):
// a few IORING_OP_ACCEPTs in flight on the listening socket, each handing its fd on.
import { setTimeout as sleep } from 'node:timers/promises';
import { close, RingClosedError, type Ring } from '../index.js';
import { nextAcceptPauseMs, type EchoServerStats } from './types.js';

/** `count` loops accepting on listenFd through ring until `stopped` aborts or the Ring closes.
 * Each fd goes to `serve`, which owns it; one accepted while stopping is closed. A failed
 * accept (EMFILE and the like, which would fail again at once) pauses that loop, longer while
 * it keeps failing (stats.acceptPauses counts the pauses). */
export function ringAcceptLoops(ring: Ring, listenFd: number, count: number, stats: EchoServerStats, stopped: AbortSignal, serve: (fd: number) => void): Promise<void>[] {
  async function acceptLoop(): Promise<void> {
    let pauseMs = 0;
    while (!stopped.aborted) {
      let fd: number;
      try {
        fd = await ring.accept(listenFd);
        pauseMs = 0;
      } catch (err) {
        if (stopped.aborted || err instanceof RingClosedError) return;
        pauseMs = nextAcceptPauseMs(pauseMs);
        stats.acceptPauses++;
        await sleep(pauseMs, undefined, { signal: stopped }).catch(() => {});
        continue;
      }
      if (stopped.aborted) close(fd);
      else serve(fd);
    }
  }
  return Array.from({ length: count }, acceptLoop);
}
