// The Ring tests' common setup: Rings and fds made through it are closed after each test, a temp
// folder for files, and the file's leak check (fds and live objects back where they started).
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import fs from 'node:fs';
import { join } from 'node:path';
import { Ring } from '../../src/ring/index.js';
import { openFdCount, settledLiveObjects, zeroLiveObjects } from './leaks.js';
import { shortTempDir } from './temp.js';

export function ringTestSetup(prefix: string) {
  let dir: { path: string; cleanup: () => void };
  let fdsBefore = 0;
  const rings: InstanceType<typeof Ring>[] = [];
  const opened: number[] = [];
  beforeAll(() => {
    dir = shortTempDir(prefix);
    fdsBefore = openFdCount();
  });
  afterEach(async () => {
    await Promise.all(rings.splice(0).map((r) => r.close()));
    for (const fd of opened.splice(0)) {
      try { fs.closeSync(fd); } catch { /* closed by the test */ }
    }
  });
  afterAll(async () => {
    dir.cleanup();
    expect(await settledLiveObjects()).toEqual(zeroLiveObjects);
    expect(openFdCount()).toBe(fdsBefore);
  });
  return {
    /** The temp folder (valid once the tests run). */
    dir: () => dir,
    /** A Ring closed after the test. */
    newRing(options?: ConstructorParameters<typeof Ring>[0]) {
      const ring = new Ring(options);
      rings.push(ring);
      return ring;
    },
    /** fds closed after the test (unless the test closed them). */
    track<T extends number | number[]>(fds: T): T {
      for (const fd of ([] as number[]).concat(fds)) opened.push(fd);
      return fds;
    },
    /** Takes fd off the list (the test closes it itself); returns it. */
    untrack(fd: number): number {
      const at = opened.lastIndexOf(fd);
      if (at >= 0) opened.splice(at, 1);
      return fd;
    },
    /** A file in the temp folder with this content; its path. */
    file(name: string, content: string | Buffer) {
      const path = join(dir.path, name);
      fs.writeFileSync(path, content);
      return path;
    },
  };
}
