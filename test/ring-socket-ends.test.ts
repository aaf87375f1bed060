// How a RingSocket ends besides the peer's reset (test/ring-duplex.test.ts): the peer's EOF while
// chunks wait in the pool uncopied (parked: the socket was paused), a destroy() that gives them
// back, and destroySoon(), over socketpairs.
import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { close, socketpair, writevSync } from '../src/index.js';
import type { BufferRing } from '../src/ring/index.js';
import { RingSocketDuplex as RingSocket } from '../src/ring/duplex.js';
import { ringTestSetup } from './support/ring.js';
import { waitFor } from './support/echo.js';

const { newRing, track, untrack } = ringTestSetup('iolab-ring-socket-ends-');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Buffers of the pool JS holds. */
const heldCount = (pool: BufferRing) => Array.from({ length: pool.count }, (_, i) => pool.held(i)).filter(Boolean).length;

describe('RingSocket: how it ends', () => {
  it("paused with chunks left in the pool (parked) when the peer's EOF comes: a reader gets every byte, then 'end'; destroy() instead gives every parked buffer back", async () => {
    for (const then of ['read', 'destroy'] as const) {
      const ring = newRing();
      const pool = ring.setupBufRing({ count: 32, size: 4096 });
      const [mine, theirs] = track(socketpair('stream'));
      const s = new RingSocket(ring, mine, { bufferRing: pool, closeFd: false, readableHighWaterMark: 1024 });
      const data = randomBytes(48 << 10);
      writevSync(theirs, [data]);
      close(untrack(theirs)); // the EOF behind the data
      // nobody reads: the first chunk fills the readable buffer, receiving pauses, and the
      // chunks reaped with it stay in the pool uncopied
      await waitFor(() => s.bytesRead === data.length, 10_000, 'every byte taken from the socket');
      for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r)); // the EOF's turn has passed
      expect(heldCount(pool)).toBeGreaterThan(0);
      expect(s.readableEnded).toBe(false);
      if (then === 'read') {
        const parts: Buffer[] = [];
        s.on('data', (c: Buffer) => parts.push(c));
        const ended = once(s, 'end').then(() => 'end');
        const stuck = waitFor(() => Buffer.concat(parts).length === data.length, 10_000, 'every byte').then(() => sleep(2000)).then(() => 'no end');
        expect(await Promise.race([ended, stuck])).toBe('end');
        expect(Buffer.concat(parts).equals(data)).toBe(true);
      } else {
        s.destroy();
        await once(s, 'close');
      }
      expect(heldCount(pool)).toBe(0);
      if (!s.destroyed) s.destroy();
    }
  });

  it('destroySoon(): ends the writable side and destroys the socket once it finished, also when it had finished already', async () => {
    for (const endedFirst of [false, true]) {
      const ring = newRing();
      const pool = ring.setupBufRing({ count: 4, size: 4096 });
      const [mine] = track(socketpair('stream')); // (both closed after the test)
      const s = new RingSocket(ring, mine, { bufferRing: pool, closeFd: false });
      if (endedFirst) {
        s.end('bye');
        await once(s, 'finish');
      } else {
        s.write('bye');
      }
      s.destroySoon();
      await once(s, 'close');
      expect([s.writableFinished, s.destroyed]).toEqual([true, true]);
    }
  });
});
