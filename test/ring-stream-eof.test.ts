// A stream armed before its peer writes and closes: the data, then the end (EOF), whether the
// bytes and the EOF arrive together or apart. With recvs armed to poll first (the stream core
// once was), 6.18 delivered the data of a write+close that came together and never the EOF.
import { describe, expect, it } from 'vitest';
import { native } from '../src/native.js';
import { ringTestSetup } from './support/ring.js';

const { newRing, track } = ringTestSetup('iolab-ring-stream-eof-');

describe('a stream sees the EOF after the data', () => {
  for (const when of ['together', 'apart', 'EOF alone'] as const) {
    it(`write and close ${when}`, async () => {
      const ring = newRing();
      const pool = ring.setupBufRing({ count: 4, size: 64 });
      for (let round = 0; round < 20; round++) {
        const [a, b] = track(native.socketpair('stream'));
        let got = '';
        const ended = new Promise<string>((resolve) => {
          const timer = setTimeout(() => resolve('no end within 2 s'), 2000);
          ring.recvMultishot(b, pool, {
            data(id, length) {
              got += pool.bytes(id, length).toString();
              pool.release(id);
            },
            end: (err) => {
              clearTimeout(timer);
              resolve(err ? String(err) : 'end');
            },
          });
        });
        if (when !== 'EOF alone') native.writev(a, [Buffer.from(`chunk ${round}`)]);
        if (when === 'apart') await new Promise((r) => setTimeout(r, 20));
        native.shutdown(a, 'write');
        expect([await ended, got]).toEqual(['end', when === 'EOF alone' ? '' : `chunk ${round}`]);
      }
    });
  }
});
