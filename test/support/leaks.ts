// The leak check every native test file ends with: fds of this process and the addon's
// live-object counters, back where they started.
import { afterAll, beforeAll, expect } from 'vitest';
import { readdirSync } from 'node:fs';
import { native, type LiveObjects } from '../../src/native.js';

/** Number of open fds of this process. */
export function openFdCount(): number {
  return readdirSync('/proc/self/fd').length - 1; // minus the fd readdir itself used
}

/** Runs GC (vitest runs with --expose-gc) a few times so finalizers get their turn. */
export async function collectGarbage(): Promise<void> {
  for (let i = 0; i < 3; i++) {
    globalThis.gc?.();
    await new Promise((r) => setImmediate(r));
  }
}

/** Live-object counters after GC; tests assert they are back at zero. */
export async function settledLiveObjects(): Promise<LiveObjects> {
  await collectGarbage();
  return native.liveObjects();
}

export const zeroLiveObjects: LiveObjects = {
  rings: 0, ringOps: 0, heldBuffers: 0, mappings: 0, ownedFds: 0, nativeJobs: 0, nativeServers: 0, bufferRings: 0, ringStreams: 0,
};

/** Registers the leak check a native test file ends with: after setup (optional), note this
 * process's fd count; after all tests, expect the same count and every live-object counter back
 * at zero, then remove the temp folder whatever the outcome. */
export function checkLeaksAfterAll(tmp: { cleanup: () => void }, setup?: () => void): void {
  let fdsBefore = 0;
  beforeAll(() => {
    setup?.();
    fdsBefore = openFdCount();
  });
  afterAll(async () => {
    try {
      expect(openFdCount()).toBe(fdsBefore);
      expect(await settledLiveObjects()).toEqual(zeroLiveObjects);
    } finally {
      tmp.cleanup();
    }
  });
}
