// bench api's measuring loops: a sync loop, and a loop that keeps N Promise-returning ops in
// flight. Each runs for about durationMs and reports how many ops finished in how long.
import { performance } from 'node:perf_hooks';

export interface Measured {
  ops: number;
  seconds: number;
  /** The ping-pong group's runs: the round trips' p50 and p99 (ns). */
  rtt?: { p50Ns: number; p99Ns: number };
}

export interface Contender {
  contender: string;
  inflight: number;
  /** The channel group's contenders: the size of each message (ops are messages). */
  messageBytes?: number;
  /** The groups whose rows run apart from the others, their peers up only while they do. */
  group?: 'channel' | 'pingpong';
  /** Why it cannot run here (e.g. a peer module that does not load); run() is never called. */
  unavailable?: string;
  run(durationMs: number): Promise<Measured>;
}

/** Runs every step of an undo list, last first, even when one fails (a peer already killed
 * by the signal that stopped the run); then throws the first failure. */
export async function undoAll(steps: (() => unknown)[]): Promise<void> {
  let first: { err: unknown } | undefined;
  for (const step of steps.splice(0).reverse()) {
    try {
      await step();
    } catch (err) {
      first ??= { err };
    }
  }
  if (first) throw first.err;
}

/** A message size as a row's name says it: 64, 4k, 1m. */
function sizeName(bytes: number): string {
  return bytes % (1 << 20) === 0 ? `${bytes >> 20}m` : bytes % 1024 === 0 ? `${bytes >> 10}k` : String(bytes);
}

/** A row's name: contender@in-flight, or contender/size for the channel and ping-pong groups' message sizes. */
export function rowKey(c: { contender: string; inflight: number; messageBytes?: number }): string {
  return c.messageBytes === undefined ? `${c.contender}@${c.inflight}` : `${c.contender}/${sizeName(c.messageBytes)}`;
}

export function syncLoop(durationMs: number, op: (i: number) => void): Measured {
  const start = performance.now();
  const end = start + durationMs;
  let ops = 0;
  for (;;) {
    for (let k = 0; k < 64; k++) op(ops++);
    if (performance.now() >= end) break;
  }
  return { ops, seconds: (performance.now() - start) / 1000 };
}

export async function promiseLoop(durationMs: number, inflight: number,
  op: (slot: number, i: number) => Promise<unknown>): Promise<Measured> {
  const start = performance.now();
  const end = start + durationMs;
  let ops = 0;
  let stop = false;
  // The clock is read every 8th op of each worker, as syncLoop reads it every 64th: the harness
  // should not be a measurable part of what is measured (performance.now() is ~40 ns).
  const worker = async (slot: number) => {
    for (let n = 1; !stop; n++) {
      await op(slot, ops++);
      if ((n & 7) === 0 && performance.now() >= end) stop = true;
    }
  };
  await Promise.all(Array.from({ length: inflight }, (_, slot) => worker(slot)));
  return { ops, seconds: (performance.now() - start) / 1000 };
}
