// What a stream's handlers can do to the Ring while it calls them: close their own stream with
// its events still being handed out (and open another, which must not get them), throw as
// ring.close() ends the streams. A case whose handler throws runs in a child process, where the
// uncaught exception it reports is counted instead of failing the runner.
import { describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { native, projectRoot } from '../src/native.js';
import type { Ring, RingStream } from '../src/ring/index.js';
import { ringTestSetup } from './support/ring.js';
import { waitFor } from './support/echo.js';

const { newRing, track } = ringTestSetup('iolab-ring-stream-handlers-');

/** A stream whose peer wrote 12 bytes before its recv was armed: with two 4-byte buffers the
 * kernel hands out 'abcd' and 'efgh' and then finds the pool empty, all in one reap, so the
 * handler of the first chunk runs with the second one's event still to come and nothing of
 * the stream in the kernel. `onFirst` runs in that handler, after the stream closed itself. */
function closedInItsFirstChunk(ring: Ring, onFirst: () => void) {
  const pool = ring.setupBufRing({ count: 2, size: 4 });
  const [a, b] = track(native.socketpair('stream'));
  native.writev(a, [Buffer.from('abcdefghijkl')]);
  const got: string[] = [];
  let closing: Promise<void> | undefined;
  const stream: RingStream = ring.recvMultishot(b, pool, {
    data(id, n) {
      got.push(pool.bytes(id, n).toString());
      // closed before the buffer goes back: a return would arm the recv again (the stream waits
      // for a buffer), and then close() would have something to cancel
      if (closing === undefined) closing = stream.close();
      pool.release(id);
      if (got.length === 1) onFirst();
    },
    end() {},
  });
  return { pool, got, closed: () => closing };
}

describe('a stream closed inside its own data handler', () => {
  it('its token is not reused while its events are handed out: a stream opened there gets only its own bytes', async () => {
    const ring = newRing({ entries: 16 });
    const [c, d] = track(native.socketpair('stream'));
    const other: string[] = [];
    let second: RingStream | undefined;
    const first = closedInItsFirstChunk(ring, () => {
      second = ring.recvMultishot(d, first.pool, { data(id, n) { other.push(first.pool.bytes(id, n).toString()); first.pool.release(id); }, end() {} });
    });
    await waitFor(() => first.closed() !== undefined, 10_000, 'the first chunk');
    await first.closed();
    native.writev(c, [Buffer.from('XY')]);
    await waitFor(() => other.length > 0, 10_000, "the second stream's bytes");
    expect(first.got).toEqual(['abcd']);
    expect(other).toEqual(['XY']);
    expect(ring.stats.streamSlotsReused).toBe(0); // opened while the first one's events were still handed out
    await second!.close();
  });

  it('the chunk it was not given goes back to the pool: a stream after it gets both buffers', async () => {
    const ring = newRing({ entries: 16 });
    const first = closedInItsFirstChunk(ring, () => {});
    await waitFor(() => first.closed() !== undefined, 10_000, 'the first chunk');
    await first.closed();
    const [c, d] = track(native.socketpair('stream'));
    const held: number[] = [];
    const next = ring.recvMultishot(d, first.pool, { data: (id) => held.push(id), end() {} });
    native.writev(c, [Buffer.from('12345678')]);
    await waitFor(() => held.length === 2, 5_000, 'two chunks (both buffers)');
    expect(held.sort()).toEqual([0, 1]);
    expect(ring.stats.streamSlotsReused).toBe(1); // opened after: the first one's slot
    for (const id of held) first.pool.release(id);
    await next.close();
  });
});

// each child's start: the addon, the Ring, and the uncaught exceptions a throwing handler reports
const childStart = `
const { native } = await import('./src/native.ts');
const { Ring } = await import('./src/ring/index.ts');
const uncaught = [];
process.on('uncaughtException', (e) => uncaught.push(e.message));
const tick = () => new Promise((r) => setTimeout(r, 20));`;

async function runChild(script: string) {
  const child = await execa(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script],
    { cwd: projectRoot, reject: false, timeout: 30_000 });
  expect({ exitCode: child.exitCode, signal: child.signal, timedOut: child.timedOut, stderr: child.stderr })
    .toEqual({ exitCode: 0, signal: undefined, timedOut: false, stderr: '' });
  return JSON.parse(child.stdout);
}

describe('handlers that throw', () => {
  it('ring.close() settles and ends every stream once though each end handler throws; each throw is reported', async () => {
    // Stream 0 holds the pool's one buffer with its recv armed (its end comes from the
    // cancelled recv); streams 1 and 2 wait for a buffer, nothing in the kernel (their end
    // comes as close() settles).
    const report = await runChild(`${childStart}
const ring = new Ring({ entries: 16 });
const pool = ring.setupBufRing({ count: 1, size: 64 });
const pairs = [0, 1, 2].map(() => native.socketpair('stream'));
const ends = [0, 0, 0];
let chunks = 0;
pairs.forEach(([, b], i) => ring.recvMultishot(b, pool, {
  data() { chunks++; },
  end(err) { ends[i]++; throw new Error('end ' + i + ': ' + err.name); },
}));
native.writev(pairs[0][0], [Buffer.from('a')]);
while (chunks < 1) await tick();
for (const i of [1, 2]) native.writev(pairs[i][0], [Buffer.from('b')]);
await tick();
const closed = await ring.close().then(() => 'resolved', (e) => 'rejected: ' + e.message);
await tick();
for (const [a, b] of pairs) { native.close(a); native.close(b); }
console.log(JSON.stringify({ closed, ends, chunks, uncaught: uncaught.sort() }));
`);
    expect(report).toEqual({
      closed: 'resolved', ends: [1, 1, 1], chunks: 1,
      uncaught: ['end 0: RingClosedError', 'end 1: RingClosedError', 'end 2: RingClosedError'],
    });
  });
});

describe('data handlers that throw in a batch (the nextTick queue run between streams)', () => {
  it('every stream still gets its chunk, and each throw is reported once, the first one\'s by the addon', async () => {
    const report = await runChild(`${childStart}
const ring = new Ring({ entries: 16 });
const pool = ring.setupBufRing({ count: 8, size: 64 });
const pairs = [0, 1, 2].map(() => native.socketpair('stream'));
const seen = [];
const ticks = [];
pairs.forEach(([, b], i) => ring.recvMultishot(b, pool, {
  data(id) { seen.push(i); pool.release(id); process.nextTick(() => ticks.push(i)); throw new Error('data ' + i); },
  end() {},
}));
await tick();
for (const [a] of pairs) native.writev(a, [Buffer.from('x')]); // one reap hands out all three
while (seen.length < 3) await tick();
await tick();
await ring.close();
for (const [a, b] of pairs) { native.close(a); native.close(b); }
console.log(JSON.stringify({ seen: seen.sort(), ticks: ticks.sort(), uncaught: uncaught.sort() }));
`);
    expect(report).toEqual({ seen: [0, 1, 2], ticks: [0, 1, 2], uncaught: ['data 0', 'data 1', 'data 2'] });
  });
});

describe('a stream and its pool closed between two events of one batch', () => {
  it('its chunks still gathered in the batch go nowhere, with no error: the closed pool took its buffers', async () => {
    // Four chunks and the EOF in one reap. The first chunk's handler closes the stream (its recv
    // is over, so at once) and, in a continuation, the pool: with the ticks run between events,
    // that happens before the other three chunks are handed out.
    const report = await runChild(`${childStart}
const ring = new Ring({ entries: 16 });
const pool = ring.setupBufRing({ count: 8, size: 16 });
const [a, b] = native.socketpair('stream');
let chunks = 0;
let poolClosed = false;
const stream = ring.recvMultishot(b, pool, {
  data(id) {
    chunks++;
    pool.release(id);
    if (chunks === 1) void stream.close().then(() => { pool.close(); poolClosed = true; });
  },
  end() {},
});
await tick();
native.writev(a, [Buffer.alloc(64, 1)]);
native.shutdown(a, 'write');
while (!poolClosed) await tick();
await tick();
const held = pool.heldBuffers;
await ring.close();
native.close(a); native.close(b);
console.log(JSON.stringify({ chunks, held, uncaught }));
`);
    expect(report).toEqual({ chunks: 1, held: 0, uncaught: [] });
  });
});

describe('a stream closed with sends queued, then the Ring', () => {
  it("its close() settles though its end handler throws as ring.close() ends it; the throw is reported", async () => {
    // 256 KiB queued to a peer that does not read: close() waits for the sends, ring.close()
    // ends them; the stream's `end` (RingClosedError) throws on the way.
    const report = await runChild(`${childStart}
const ring = new Ring({ entries: 4 });
const pool = ring.setupBufRing({ count: 1, size: 4 });
const [a, b] = native.socketpair('stream');
const stream = ring.recvMultishot(a, pool, { data: (id) => pool.release(id), end(err) { throw new Error('end: ' + err.name); } });
stream.write(Buffer.alloc(262144, 1));
const closing = stream.close().then(() => 'resolved', (e) => 'rejected: ' + e.code);
const ringClosed = await ring.close().then(() => 'resolved', (e) => 'rejected: ' + e.message);
const streamClosed = await Promise.race([closing, new Promise((r) => setTimeout(() => r('never settled'), 2000))]);
native.close(a);
native.close(b);
console.log(JSON.stringify({ ringClosed, streamClosed, uncaught }));
`);
    expect(report).toEqual({ ringClosed: 'resolved', streamClosed: 'resolved', uncaught: ['end: RingClosedError'] });
  });
});
