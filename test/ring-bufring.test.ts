// Provided-buffer rings and streams: multishot recv into a buffer ring, chunks as (id, length),
// sends from the buffers in order, ENOBUFS without losing a byte, a buffer used after it went
// back, the kernel's limit, a non-socket, close() mid-stream (the stream's and the Ring's), and a
// Ring dropped with its recv armed (GC).
import { describe, expect, it } from 'vitest';
import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { addonPath, native } from '../src/native.js';
import { Ring, RingClosedError, type BufferRing, type RingStream } from '../src/ring/index.js';
import { setsockopt } from '../src/index.js';
import { collectGarbage } from './support/leaks.js';
import { ringTestSetup } from './support/ring.js';
import { waitFor } from './support/echo.js';

const { newRing, track, file } = ringTestSetup('iolab-ring-bufring-');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Reads until `n` bytes came, without blocking the loop the Ring echoes on. */
async function readAll(fd: number, n: number): Promise<Buffer> {
  native.setNonBlocking(fd, true);
  const out = Buffer.alloc(n);
  for (let at = 0; at < n;) {
    try {
      const got = native.readv(fd, [out.subarray(at)]);
      if (got === 0) throw new Error(`EOF after ${at} of ${n} bytes`);
      at += got;
    } catch (err) {
      if ((err as { code?: string }).code !== 'EAGAIN') throw err;
      await sleep(1);
    }
  }
  return out;
}

/** Writes all of data the same way. */
async function writeAll(fd: number, data: Buffer): Promise<void> {
  native.setNonBlocking(fd, true);
  for (let at = 0; at < data.length;) {
    try {
      at += native.writev(fd, [data.subarray(at, at + 65536)]);
    } catch (err) {
      if ((err as { code?: string }).code !== 'EAGAIN') throw err;
      await sleep(1);
    }
  }
}

/** An echo stream on fd: every chunk goes back from its buffer (`given` keeps a copy of each, in
 * the order they were given to send); resolves with end's error. */
function echo(ring: Ring, fd: number, pool: BufferRing, options?: { pauseAt?: number }) {
  let stream!: RingStream;
  const given: Buffer[] = [];
  let received = 0;
  const ended = new Promise<Error | null>((resolve) => {
    stream = ring.recvMultishot(fd, pool, {
      data(id, length) {
        given.push(Buffer.from(pool.view(id).subarray(0, length)));
        received += length;
        stream.send(id, length);
      },
      end: resolve,
    }, options);
  });
  return { stream, ended, given, chunks: () => given.length, received: () => received };
}

describe('setupBufRing', () => {
  it('takes a power of two up to the kernel limit (32768), and says what is wrong otherwise', () => {
    const ring = newRing({ entries: 8 });
    expect(() => ring.setupBufRing({ count: 3, size: 64 })).toThrow(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE', message: expect.stringMatching(/power of two/) }));
    expect(() => ring.setupBufRing({ count: 65536, size: 64 })).toThrow(expect.objectContaining({ name: 'RangeError', code: 'ERR_OUT_OF_RANGE', message: expect.stringMatching(/<= 32768/) }));
    expect(() => ring.setupBufRing({ count: 8, size: 0 })).toThrow(RangeError);
    expect(() => ring.setupBufRing({ count: 'x' as never, size: 8 })).toThrow(TypeError);
    const pool = ring.setupBufRing({ count: 32768, size: 16 });
    expect([pool.count, pool.size]).toEqual([32768, 16]);
    expect(ring.setupBufRing({ count: 1, size: 1 }).id).toBe(pool.id + 1);
    expect(native.liveObjects().bufferRings).toBe(2);
  });
});

describe('recvMultishot', () => {
  it('echoes 4 MiB in order through a 4-buffer pool (ENOBUFS waits for buffers, loses nothing)', async () => {
    const ring = newRing({ entries: 64 });
    const pool = ring.setupBufRing({ count: 4, size: 1024 });
    const [a, b] = track(native.socketpair('stream'));
    const { stream, ended, chunks } = echo(ring, b, pool);
    const data = randomBytes(4 << 20);
    const reading = readAll(a, data.length);
    await writeAll(a, data);
    expect((await reading).equals(data)).toBe(true);
    expect(chunks()).toBeGreaterThanOrEqual(data.length / 1024);
    native.close(a);
    expect(await ended).toBeNull(); // EOF
    expect(stream.ended).toBe(true);
    await stream.close();
    expect(native.liveObjects().ringStreams).toBe(0);
  });

  it('16 streams on a 2-buffer pool, with a second pool beside it: every stream is echoed whole (one woken per buffer back)', async () => {
    const ring = newRing({ entries: 64 });
    const pool = ring.setupBufRing({ count: 2, size: 512 });
    const other = ring.setupBufRing({ count: 2, size: 512 });
    const pairs = Array.from({ length: 16 }, () => track(native.socketpair('stream')));
    const echoes = pairs.map(([, b], i) => echo(ring, b, i % 4 === 0 ? other : pool));
    const data = pairs.map(() => randomBytes(64 << 10));
    const reads = pairs.map(([a], i) => readAll(a, data[i].length));
    await Promise.all(pairs.map(([a], i) => writeAll(a, data[i])));
    const back = await Promise.all(reads);
    for (let i = 0; i < pairs.length; i++) expect(back[i].equals(data[i])).toBe(true);
    for (const [a] of pairs) native.close(a);
    for (const e of echoes) expect(await e.ended).toBeNull();
    await Promise.all(echoes.map((e) => e.stream.close()));
    expect(native.liveObjects().ringStreams).toBe(0);
  });

  it('a pool JS keeps starves the recv until a buffer is released; then the rest comes in order', async () => {
    const ring = newRing({ entries: 16 });
    const pool = ring.setupBufRing({ count: 2, size: 4 });
    const [a, b] = track(native.socketpair('stream'));
    const held: [number, number][] = [];
    const stream = ring.recvMultishot(b, pool, { data: (id, n) => held.push([id, n]), end() {} });
    native.writev(a, [Buffer.from('abcdefghijkl')]);
    await sleep(50);
    expect(held.length).toBe(2); // both buffers are JS's; the recv waits (ENOBUFS)
    expect(ring.stats.recvNoBuffers).toBe(1);
    let got = '';
    while (got.length < 12) {
      await waitFor(() => held.length > 0, 10_000, 'a chunk');
      const [id, n] = held.shift()!;
      got += got.length < 8 ? Buffer.from(pool.view(id).subarray(0, n)).toString() : pool.bytes(id, n).toString();
      pool.release(id);
    }
    expect(got).toBe('abcdefghijkl');
    for (const [id] of held) pool.release(id);
    await stream.close();
  });

  it('a stream the kernel found the pool empty for, reaped after a send gave a buffer back, still gets its data', async (ctx) => {
    // One buffer, A holding it. A's send waits for room, B's recv is armed; then room for A and
    // data for B come together: the kernel completes A's send and then tries B's recv on the
    // empty pool (ENOBUFS), and both CQEs come in one reap, the send's first. The buffer is back
    // before B is marked starved, so no return would ever wake B. Nothing here waits on a timer:
    // the JS thread's own syscalls run both wake-ups (COOP_TASKRUN: at each return to user
    // space) before the Ring reaps, in the order they came, so the race happens every time (and
    // the Ring's counter shows it did).
    const ring = newRing({ entries: 16 });
    if (!ring.features.coopTaskrun) ctx.skip('the kernel has no COOP_TASKRUN (before 5.19): the two wake-ups cannot be lined up');
    const pool = ring.setupBufRing({ count: 1, size: 64 });
    const [a1, a2] = track(native.socketpair('stream'));
    const [b1, b2] = track(native.socketpair('stream'));
    const heldA: [number, number][] = [];
    let bGot = '';
    const sa = ring.recvMultishot(a2, pool, { data: (id, n) => heldA.push([id, n]), end() {} });
    const sb = ring.recvMultishot(b2, pool, { data: (id, n) => { bGot += pool.bytes(id, n).toString(); pool.release(id); }, end() {} });
    ring.submit(); // both recvs armed now, the pool's one buffer still in it
    native.writev(a1, [Buffer.from('aaaa')]);
    await waitFor(() => heldA.length === 1, 10_000, "A's chunk");
    native.setNonBlocking(a1, true);
    native.setNonBlocking(a2, true);
    const junk = Buffer.alloc(65536);
    const untilFull = (call: () => number) => {
      for (;;) {
        try {
          if (call() === 0) return;
        } catch (err) {
          if ((err as { code?: string }).code === 'EAGAIN') return;
          throw err;
        }
      }
    };
    untilFull(() => native.writev(a2, [junk])); // a2's send queue full: A's send will wait in the kernel
    const [id, n] = heldA.shift()!;
    sa.send(id, n);
    ring.submit(); // A's send tried now: no room, it waits
    untilFull(() => native.readv(a1, [junk])); // room for A's send ...
    native.writev(b1, [Buffer.from('bbbb')]); // ... and data for B, before the Ring reaps again
    await waitFor(() => bGot === 'bbbb', 10_000, "B's data");
    // B's recv did find the pool empty (a counter the Ring core adds to RingStats)
    expect((ring.stats as { recvNoBuffers?: number }).recvNoBuffers).toBeGreaterThan(0);
    await sa.close();
    await sb.close();
  });

  it('a buffer used after it went back is a clear error, not a silent read', async () => {
    const ring = newRing({ entries: 16 });
    const pool = ring.setupBufRing({ count: 4, size: 8 });
    const [a, b] = track(native.socketpair('stream'));
    let chunk: [number, number] | undefined;
    const stream = ring.recvMultishot(b, pool, { data: (id, n) => (chunk = [id, n]), end() {} });
    native.writev(a, [Buffer.from('hi')]);
    await waitFor(() => chunk !== undefined, 10_000, 'the chunk');
    const [id, n] = chunk!;
    expect(pool.held(id)).toBe(true);
    expect(pool.bytes(id, n).toString()).toBe('hi');
    pool.release(id);
    const returned = expect.objectContaining({ code: 'ERR_RING_BUFFER_RETURNED', message: expect.stringMatching(`buffer ${id} is not held`) });
    expect(() => pool.view(id)).toThrow(returned);
    expect(() => pool.bytes(id, n)).toThrow(returned);
    expect(() => pool.release(id)).toThrow(returned); // never twice into the kernel's ring
    expect(() => stream.send(id, n)).toThrow(returned);
    expect(() => stream.send(99, 1)).toThrow(RangeError);
    await stream.close();
    expect(() => stream.send(id, n)).toThrow(expect.objectContaining({ code: 'ERR_RING_STREAM_CLOSED' }));
  });

  it('an id outside the pool is a RangeError; a held buffer after ring.close() is RingClosedError', async () => {
    const ring = new Ring({ entries: 16 });
    const pool = ring.setupBufRing({ count: 4, size: 8 });
    const [a, b] = track(native.socketpair('stream'));
    let chunk: [number, number] | undefined;
    ring.recvMultishot(b, pool, { data: (id, n) => (chunk = [id, n]), end() {} });
    native.writev(a, [Buffer.from('hi')]);
    await waitFor(() => chunk !== undefined, 10_000, 'the chunk');
    const [id, n] = chunk!;
    const range = expect.objectContaining({ name: 'RangeError', code: 'ERR_OUT_OF_RANGE' });
    for (const bad of [-1, 4, 1.5, NaN, 2 ** 32]) {
      expect(() => pool.view(bad)).toThrow(range);
      expect(() => pool.bytes(bad, 1)).toThrow(range);
      expect(() => pool.release(bad)).toThrow(range);
    }
    expect(() => pool.view('1' as never)).toThrow(expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' }));
    expect(pool.view(id).byteLength).toBe(8);
    await ring.close();
    for (const use of [() => pool.view(id), () => pool.bytes(id, n), () => pool.release(id)]) expect(use).toThrow(RingClosedError);
  });

  it('on a non-socket it throws ENOTSOCK at once; bad handlers and a bad fd too', () => {
    const ring = newRing({ entries: 8 });
    const pool = ring.setupBufRing({ count: 2, size: 8 });
    const fd = track(fs.openSync(file('not-a-socket.txt', 'x'), 'r'));
    const handlers = { data() {}, end() {} };
    expect(() => ring.recvMultishot(fd, pool, handlers)).toThrow(expect.objectContaining({ code: 'ENOTSOCK', syscall: 'recv' }));
    expect(() => ring.recvMultishot(-1, pool, handlers)).toThrow(RangeError);
    expect(() => ring.recvMultishot(fd, pool, {} as never)).toThrow(TypeError);
    // each handler is needed: one missing is refused before any recv
    const handlersRefused = expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE', message: expect.stringMatching(/data\(id, length\) and end\(err\)/) });
    expect(() => ring.recvMultishot(fd, pool, { data() {} } as never)).toThrow(handlersRefused);
    expect(() => ring.recvMultishot(fd, pool, { end() {} } as never)).toThrow(handlersRefused);
    expect(() => ring.recvMultishot(fd, pool, null as never)).toThrow(handlersRefused);
    expect(() => ring.recvMultishot(fd, {} as never, handlers)).toThrow(TypeError);
    const other = newRing({ entries: 8 }).setupBufRing({ count: 2, size: 8 });
    expect(() => ring.recvMultishot(fd, other, handlers)).toThrow(expect.objectContaining({ message: expect.stringMatching(/BufferRing of this Ring/) }));
    expect(native.liveObjects().ringStreams).toBe(0);
  });

  it('sends go out whole and in order to a slow reader (short sends continued)', async () => {
    const ring = newRing({ entries: 64 });
    const pool = ring.setupBufRing({ count: 64, size: 4096 });
    const [a, b] = track(native.socketpair('stream'));
    const { stream } = echo(ring, b, pool, { pauseAt: 16384 });
    const extra = randomBytes(3 << 20);
    stream.write(extra); // 3 MiB copied: more than the socket takes at once
    const data = randomBytes(1 << 20);
    const writer = writeAll(a, data);
    await sleep(100); // nobody reads yet: the stream's queue fills and its recv pauses
    expect(stream.queuedBytes).toBeGreaterThan(16384);
    const back = await readAll(a, extra.length + data.length);
    await writer;
    expect(back.subarray(0, extra.length).equals(extra)).toBe(true);
    expect(back.subarray(extra.length).equals(data)).toBe(true);
    await stream.close();
  });

  it('a peer that does not read pins no buffer: a chunk sent behind a waiting send is copied and its buffer goes back to the ring', async () => {
    const ring = newRing({ entries: 64 });
    const pool = ring.setupBufRing({ count: 4, size: 4096 });
    const [a, b] = track(native.socketpair('stream'));
    const { stream, chunks, received } = echo(ring, b, pool, { pauseAt: 8 << 20 }); // behind the write below
    const ahead = randomBytes(2 << 20);
    stream.write(ahead); // more than the socket takes: this send waits for the peer
    const data = randomBytes(64 << 10); // 16 buffers' worth through a pool of 4
    native.setNonBlocking(a, true);
    for (let at = 0; at < data.length; at += 4096) native.writev(a, [data.subarray(at, at + 4096)]);
    // Each chunk is copied behind the waiting send and its buffer goes back at once, so all of
    // it is received while the peer reads nothing (pinned buffers would stop it at 4 chunks).
    await waitFor(() => received() >= data.length, 3000, 'every chunk received').catch(() => {});
    expect(received()).toBe(data.length);
    expect(ring.stats.streamSendsCopied).toBe(chunks()); // every chunk, each behind the waiting write
    expect(Array.from({ length: pool.count }, (_, id) => pool.held(id))).toEqual([false, false, false, false]);
    // the peer reads the write first, then the chunks, each in order
    expect((await readAll(a, ahead.length + data.length)).equals(Buffer.concat([ahead, data]))).toBe(true);
    await stream.close();
  });

  it('the part of a send the socket did not take goes out before the chunks given after it', async () => {
    const ring = newRing({ entries: 64 });
    const pool = ring.setupBufRing({ count: 8, size: 4096 });
    const [a, b] = track(native.socketpair('stream'));
    setsockopt(b, 'SO_SNDBUF', 4096); // 8 KiB once the kernel doubles it
    native.setNonBlocking(a, true);
    const { stream, given } = echo(ring, b, pool);
    // Four echoes of 512 B fill half the send buffer, each sent straight from its buffer ...
    for (let i = 0; i < 4; i++) {
      native.writev(a, [randomBytes(512)]);
      await waitFor(() => given.length === i + 1 && stream.queuedBytes === 0, 3000, `echo ${i} sent`);
    }
    expect(ring.stats.streamSendsCopied).toBe(0);
    // ... so of the next 4 KiB chunk the socket takes only part (or none), while a 512 B chunk
    // that came with it waits behind, copied: the rest goes in front of it
    native.writev(a, [randomBytes(4096 + 512)]);
    await waitFor(() => given.length === 6 && ring.stats.streamSendsCopied === 2, 3000, 'both chunks').catch(() => {});
    expect(ring.stats.streamSendsCopied).toBe(2); // the chunk behind, and the rest in front of it
    const back = await readAll(a, 4 * 512 + 4096 + 512);
    expect(back.equals(Buffer.concat(given))).toBe(true);
    await stream.close();
  });

  it('a send to a peer that went away ends the stream with its error (syscall send)', async () => {
    const ring = newRing({ entries: 16 });
    const pool = ring.setupBufRing({ count: 4, size: 8 });
    const [a, b] = native.socketpair('stream');
    track(b);
    let end: ((e: Error | null) => void) | undefined;
    const ended = new Promise<Error | null>((r) => (end = r));
    const stream = ring.recvMultishot(b, pool, { data: (id) => pool.release(id), end: (e) => end!(e) });
    native.close(a);
    expect(await ended).toBeNull();
    stream.write(Buffer.from('too late'));
    await expect(stream.close()).rejects.toMatchObject({ code: 'EPIPE', errno: -32, syscall: 'send' });
  });
});

describe('close mid-stream', () => {
  it.each([['its recv still in the backlog (SQ full before it)', false], ['the SQ full after its recv', true]])(
    'close() of a stream with %s: the recv is cancelled, close() settles without the peer', async (_what, recvFirst) => {
      const ring = new Ring({ entries: 4 });
      const pool = ring.setupBufRing({ count: 4, size: 64 });
      const [a, b] = track(native.socketpair('stream'));
      const [c, d] = track(native.socketpair('stream'));
      // four recvs on a socket nobody writes to fill the SQ in this tick (no flush yet)
      const waiting: Promise<unknown>[] = [];
      const fill = () => { for (let i = 0; i < 4; i++) waiting.push(ring.recv(d, Buffer.alloc(8)).catch((e) => e)); };
      if (!recvFirst) fill();
      const ends: (Error | null)[] = [];
      const stream = ring.recvMultishot(b, pool, { data: (id) => pool.release(id), end: (e) => ends.push(e) });
      if (recvFirst) fill();
      const closed = stream.close();
      const outcome = await Promise.race([closed.then(() => 'closed'), sleep(5000).then(() => 'still waiting')]);
      expect(outcome).toBe('closed');
      expect(ends).toEqual([]); // closed by its owner: no end
      native.close(a);
      native.close(c); // the four recvs end with EOF
      for (const r of await Promise.all(waiting)) expect(r).toBe(0);
      await ring.close();
      await collectGarbage();
      expect(native.liveObjects()).toMatchObject({ ringOps: 0, ringStreams: 0 });
    });

  it('ring.close() with streams receiving ends each (RingClosedError), settles close(), detaches the views, frees all', async () => {
    const ring = new Ring({ entries: 64 });
    const pool = ring.setupBufRing({ count: 8, size: 16 });
    const pairs = Array.from({ length: 10 }, () => track(native.socketpair('stream')));
    const ends: (Error | null)[] = [];
    let kept: Uint8Array | undefined;
    const streams = pairs.map(([, b], i) => ring.recvMultishot(b, pool, {
      data(id, n) {
        if (i === 0 && kept === undefined) kept = pool.view(id); // held, never returned
        else streams[i].send(id, n);
      },
      end: (err) => ends.push(err),
    }));
    for (const [a] of pairs) native.writev(a, [Buffer.from('ping')]);
    await readAll(pairs[1][0], 4);
    expect(kept?.byteLength).toBe(16);
    const closing = streams[2].close(); // one closed by its owner just before
    await ring.close();
    await closing;
    expect(ends.length).toBe(9);
    for (const e of ends) expect(e).toBeInstanceOf(RingClosedError);
    await Promise.all(streams.map((s) => s.close())); // settled, each once
    expect(kept!.byteLength).toBe(0); // detached: a view kept past the Ring reads nothing
    expect(() => streams[0].send(0, 1)).toThrow(expect.objectContaining({ code: 'ERR_RING_STREAM_CLOSED' }));
    expect(() => ring.recvMultishot(pairs[0][1], pool, { data() {}, end() {} })).toThrow(RingClosedError);
    await collectGarbage();
    expect(native.liveObjects()).toMatchObject({ ringOps: 0, ringStreams: 0, bufferRings: 0 });
  });

  it('a handler that closes the Ring in the middle of a batch of chunks is safe', async () => {
    const ring = new Ring({ entries: 64 });
    const pool = ring.setupBufRing({ count: 64, size: 8 });
    const pairs = Array.from({ length: 20 }, () => track(native.socketpair('stream')));
    let calls = 0;
    let closing: Promise<void> | undefined;
    for (const [, b] of pairs) {
      const stream = ring.recvMultishot(b, pool, {
        data(id, n) {
          calls++;
          stream.send(id, n); // a chunk handed out after close() would throw RingClosedError here
          closing ??= ring.close();
        },
        end() {},
      });
    }
    ring.submit();
    for (const [a] of pairs) native.writev(a, [Buffer.from('x')]);
    await waitFor(() => closing !== undefined, 10_000, 'the close');
    await closing;
    expect(calls).toBe(1); // the rest of the batch was not handed out
    await collectGarbage();
    expect(native.liveObjects()).toMatchObject({ ringOps: 0, ringStreams: 0, bufferRings: 0, rings: 0 });
  });

  it('a Ring dropped with its recv armed stays alive, echoes, and is freed after EOF (GC)', async () => {
    const [a, b] = track(native.socketpair('stream'));
    let ended = false;
    (() => {
      const ring = new Ring({ entries: 8 });
      const pool = ring.setupBufRing({ count: 4, size: 64 });
      const stream: RingStream = ring.recvMultishot(b, pool, { data: (id, n) => stream.send(id, n), end: () => (ended = true) });
    })();
    await collectGarbage();
    expect(native.liveObjects().rings).toBe(1);
    native.writev(a, [Buffer.from('still here')]);
    expect((await readAll(a, 10)).toString()).toBe('still here');
    native.close(a);
    await waitFor(() => ended, 10_000, 'the end');
    for (let i = 0; i < 5 && native.liveObjects().bufferRings > 0; i++) {
      await collectGarbage();
      await sleep(20);
    }
    expect(native.liveObjects()).toMatchObject({ rings: 0, ringOps: 0, ringStreams: 0, bufferRings: 0 });
  });

  it('a worker that exits with a stream receiving and a send waiting frees it all (env teardown)', async () => {
    // The addon's raw methods, as src/ring/stream.ts calls them (tsx does not reach a worker).
    const code = `
      const n = require(${JSON.stringify(addonPath())});
      const ring = new n.Ring({ entries: 8 });
      const [bgid] = ring.setupBufRing(4, 64);
      const events = new Int32Array(4096);
      ring.streamsInit(function (count) {
        for (let i = 0; i < count * 4; i += 4) if (events[i + 1] === 1) ring.streamSend(events[i], events[i + 2], events[i + 3]);
      }, events);
      const [a, b] = n.socketpair('stream');
      const token = ring.recvMultishot(b, bgid, 65536);
      ring.streamWrite(token, Buffer.alloc(1 << 22)); // nobody reads: this send waits
      n.writev(a, [Buffer.from('x')]);
      require('node:worker_threads').parentPort.postMessage([a, b]); // the process's fds: closed there
      setTimeout(() => process.exit(0), 100);`;
    for (let i = 0; i < 3; i++) {
      const worker = new Worker(code, { eval: true });
      worker.on('message', (fds: number[]) => track(fds));
      expect(await new Promise((r) => worker.on('exit', r))).toBe(0);
    }
    await collectGarbage();
    expect(native.liveObjects()).toMatchObject({ rings: 0, ringOps: 0, ringStreams: 0, bufferRings: 0 });
  });
});
