// The Ring a thread's servers (onRing) and client connections (ringConnect) share when they are
// given none: one io_uring instance per thread is enough, and each more costs an fd, a mapping
// and a wake-up path (docs/ring.md).
import { Ring } from './ring.js';

let threadRing: Ring | undefined;

/** This thread's shared Ring, made on first use (and again after someone closed it). */
export function sharedRing(): Ring {
  if (threadRing === undefined || threadRing.closed) threadRing = new Ring({ entries: 4096, cqEntries: 16384 });
  return threadRing;
}
