// bench api's measuring loops: a sync loop, and a loop that keeps N Promise-returning ops in
// flight. Each runs for about durationMs and reports how many ops finished in how long.
import { performance } from 'node:perf_hooks';

export interface Measured {
  ops: number;
  seconds: number;
}

export interface Contender {
  contender: string;
  inflight: number;
  /** Why it cannot run here (e.g. a peer module that does not load); run() is never called. */
  unavailable?: string;
  run(durationMs: number): Promise<Measured>;
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
