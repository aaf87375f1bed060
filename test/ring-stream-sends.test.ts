// The stream core's send policy (native/stream/send.c) through a RingStream, as a property: random
// interleavings of a peer's bursts (each chunk echoed from its buffer by stream.send), copies
// given by stream.write, partial reads by a peer that lags, and loop turns, on a socket whose
// send buffer holds a few KiB. Whatever path each send takes (straight out with MSG_DONTWAIT,
// EAGAIN or a short send and the rest queued in front, copied behind a send in flight, paused
// receiving), the peer reads exactly the bytes given to send, in the order they were given, and
// every buffer is back in the pool. The C echo server runs the same code (test/echo-*.test.ts).
//
// IOLAB_FUZZ_RUNS=N runs N sequences (default 100), from IOLAB_FUZZ_SEED.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { native } from '../src/native.js';
import { setsockopt, type RingStream } from '../src/index.js';
import { ringTestSetup } from './support/ring.js';

const { newRing, track } = ringTestSetup('iolab-ring-stream-sends-');
const runs = Number(process.env.IOLAB_FUZZ_RUNS ?? 100);
const seed = Number(process.env.IOLAB_FUZZ_SEED ?? 8_160);
const turn = () => new Promise<void>((r) => setImmediate(r));

type Step =
  | { kind: 'burst'; bytes: number } // the peer writes; the stream echoes each chunk from its buffer
  | { kind: 'write'; bytes: number } // stream.write of a copy
  | { kind: 'read'; bytes: number } // the peer reads at most this much
  | { kind: 'drain' } // the peer reads all there is, and the loop turns: the stream's queue empties
  | { kind: 'turns'; count: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  { arbitrary: fc.integer({ min: 1, max: 9000 }).map((bytes) => ({ kind: 'burst' as const, bytes })), weight: 4 },
  { arbitrary: fc.oneof(fc.integer({ min: 1, max: 700 }), fc.constant(40_000)).map((bytes) => ({ kind: 'write' as const, bytes })), weight: 2 },
  { arbitrary: fc.integer({ min: 1, max: 1500 }).map((bytes) => ({ kind: 'read' as const, bytes })), weight: 3 },
  { arbitrary: fc.integer({ min: 1, max: 3 }).map((count) => ({ kind: 'turns' as const, count })), weight: 3 },
  { arbitrary: fc.constant({ kind: 'drain' as const }), weight: 1 },
);

/** Bytes whose value tells their place in the whole outgoing stream (mod 251, a prime). */
function numbered(from: number, n: number): Buffer {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = (from + i) % 251;
  return b;
}

describe("a stream's sends, whatever path each takes", () => {
  it(`${runs} random sequences from seed ${seed}: the peer reads what was given to send, in order; the pool ends whole`, async () => {
    let copied = 0;
    await fc.assert(fc.asyncProperty(
      fc.record({ size: fc.constantFrom(16, 64, 512, 4096), pauseAt: fc.constantFrom(512, 8192, 1 << 20) }),
      fc.array(step, { minLength: 1, maxLength: 30 }),
      async ({ size, pauseAt }, steps) => {
        const ring = newRing({ entries: 64 });
        const pool = ring.setupBufRing({ count: 8, size });
        const [peer, own] = track(native.socketpair('stream'));
        setsockopt(own, 'SO_SNDBUF', 4096); // 8 KiB once the kernel doubles it: a peer that lags fills it at once
        native.setNonBlocking(peer, true);
        const given: Buffer[] = []; // what the stream was given to send, in order
        let givenBytes = 0;
        let inbound = 0; // bytes the peer wrote (each comes back)
        let received = 0; // ... that reached the stream
        let failure: Error | null = null;
        const stream: RingStream = ring.recvMultishot(own, pool, {
          data(id, length) {
            given.push(Buffer.from(pool.view(id).subarray(0, length)));
            givenBytes += length;
            received += length;
            stream.send(id, length);
          },
          end(err) {
            failure = err;
          },
        }, { pauseAt });
        const read: Buffer[] = [];
        let readBytes = 0;
        const peerRead = (most: number) => {
          const buf = Buffer.alloc(most);
          try {
            const n = native.readv(peer, [buf]);
            read.push(buf.subarray(0, n));
            readBytes += n;
          } catch (e) {
            if ((e as { code?: string }).code !== 'EAGAIN') throw e;
          }
        };
        for (const s of steps) {
          if (s.kind === 'burst') {
            try {
              inbound += native.writev(peer, [numbered(inbound, s.bytes)]);
            } catch (e) {
              if ((e as { code?: string }).code !== 'EAGAIN') throw e;
            }
          } else if (s.kind === 'write') {
            const copy = numbered(1000 + givenBytes, s.bytes);
            given.push(copy);
            givenBytes += s.bytes;
            stream.write(copy);
          } else if (s.kind === 'read') {
            peerRead(s.bytes);
          } else if (s.kind === 'drain') {
            for (let i = 0; i < 3; i++) {
              peerRead(65536);
              await turn();
            }
          } else {
            for (let i = 0; i < s.count; i++) await turn();
          }
        }
        // Everything the peer wrote comes in and goes back out; the peer reads it all.
        const deadline = Date.now() + 5000;
        while ((received < inbound || readBytes < givenBytes) && Date.now() < deadline) {
          peerRead(65536);
          await turn();
        }
        expect(failure).toBeNull();
        expect(readBytes, `read ${readBytes} of ${givenBytes} bytes given to send`).toBe(givenBytes);
        expect(Buffer.concat(read).equals(Buffer.concat(given)), 'the bytes read differ from those given to send, in order').toBe(true);
        await stream.close();
        expect(Array.from({ length: pool.count }, (_, id) => pool.held(id)).some(Boolean)).toBe(false);
        copied += ring.stats.streamSendsCopied;
        await ring.close();
      },
    ), { numRuns: runs, seed, endOnFailure: true });
    // the copy paths were taken (a send ahead, or the socket full), not only the straight one
    expect(copied).toBeGreaterThan(0);
  }, 60_000 + runs * 1000);

  it('a chunk sent straight out that meets a full socket (EAGAIN) is queued, not an error; a chunk after it waits behind it', async () => {
    const ring = newRing({ entries: 16 });
    const pool = ring.setupBufRing({ count: 4, size: 64 });
    const [peer, own] = track(native.socketpair('stream'));
    native.setNonBlocking(peer, true);
    let failure: Error | null = null;
    let chunks = 0;
    const stream = ring.recvMultishot(own, pool, {
      data(id, length) { chunks++; stream.send(id, length); },
      end(err) { failure = err; },
    });
    // Another writer fills the stream's socket first, so its next send with nothing ahead (MSG_DONTWAIT)
    // finds no room at all: EAGAIN.
    native.setNonBlocking(own, true);
    let filler = 0;
    for (;;) {
      try { filler += native.writev(own, [Buffer.alloc(4096, 0x2e)]); } catch { break; }
    }
    native.writev(peer, [Buffer.from('one')]);
    await pollUntil(() => chunks === 1);
    native.writev(peer, [Buffer.from('two')]);
    await pollUntil(() => chunks === 2);
    expect(stream.queuedBytes).toBe(6);
    // The peer reads it all: the filler, then both echoes in order.
    const got: Buffer[] = [];
    let total = 0;
    await pollUntil(() => {
      const buf = Buffer.alloc(65536);
      try { const n = native.readv(peer, [buf]); got.push(buf.subarray(0, n)); total += n; } catch { /* EAGAIN */ }
      return total >= filler + 6;
    });
    expect(failure).toBeNull();
    expect(Buffer.concat(got).subarray(filler).toString()).toBe('onetwo');
    await stream.close();
  });
});

describe('a send that fails ends receiving', () => {
  it('a peer that shut its reading side: the echo fails (EPIPE), the stream ends with it, and what the peer writes after stays in the socket', async () => {
    const ring = newRing({ entries: 16 });
    const pool = ring.setupBufRing({ count: 4, size: 64 });
    const [peer, own] = track(native.socketpair('stream'));
    let got = '';
    let ended: Error | null | undefined;
    const stream = ring.recvMultishot(own, pool, {
      data(id, length) { got += pool.bytes(id, length).toString(); stream.send(id, length); },
      end(err) { ended = err; },
    });
    native.shutdown(peer, 'read'); // the peer still writes, but reads nothing: sends to it fail
    native.writev(peer, [Buffer.from('one')]);
    await pollUntil(() => ended !== undefined);
    expect(ended).toMatchObject({ code: 'EPIPE', syscall: 'send' });
    native.writev(peer, [Buffer.from('two')]);
    // nothing can bring 'two' now (a slow machine could only hide a recv left armed, not fail this)
    for (let i = 0; i < 10; i++) await new Promise((r) => setTimeout(r, 5));
    expect(got).toBe('one');
    // ... not even taken from the socket: its recv was cancelled, not left armed to drop what comes
    native.setNonBlocking(own, true);
    const left = Buffer.alloc(16);
    expect(left.subarray(0, native.readv(own, [left])).toString()).toBe('two');
    await stream.close().catch(() => {});
  });
});

/** Turns the loop until `done`, at most 10 s. */
async function pollUntil(done: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!done()) {
    if (Date.now() > deadline) throw new Error('not within 10 s');
    await new Promise((r) => setTimeout(r, 1));
  }
}
