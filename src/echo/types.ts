// What every echo server takes and gives back (the table in servers.ts starts them).
import type { EchoServerStats, EchoUringFeature } from '../native.js';

export type { EchoServerStats };

export interface EchoServerOptions {
  /** Numeric address. */
  host: string;
  port: number;
  /** Connections beyond this many at once are accepted and closed at once. */
  maxConns?: number;
  /** Close a connection that moved no byte (in or out) for this long. */
  idleTimeoutMs?: number;
  /** io_uring: provided buffers in the pool (a power of two); other servers have no shared pool. */
  buffers?: number;
  /** io_uring: features not to try (tests and A/B runs; the CLI reads IOLAB_ECHO_URING_OFF). */
  uringFeaturesOff?: EchoUringFeature[];
}

export interface EchoServer {
  port: number;
  /** Stops accepting, closes every connection; resolves once all is closed. */
  stop(): Promise<EchoServerStats>;
  /** Settles when the server has ended: after stop(), or rejected when it failed on its own. */
  closed: Promise<EchoServerStats>;
}

export interface EchoServerEntry {
  /** One phrase for --server's help. */
  summary: string;
  start(options: EchoServerOptions): Promise<EchoServer>;
}

/** How long to stop accepting after an accept failed (EMFILE and the like fail again at once):
 * 10 ms, doubling while it keeps failing, at most 250 ms (as the C servers do). */
export function nextAcceptPauseMs(previousMs: number): number {
  return previousMs < 10 ? 10 : Math.min(previousMs * 2, 250);
}
