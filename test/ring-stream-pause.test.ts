// Pausing a RingStream: pause() and resume() themselves (RingSocket's backpressure stands on them),
// and the pause past `pauseAt` when too much waits to be sent. A paused stream takes nothing from
// its socket, its sends go on, and once it receives again every byte comes, in order.
import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { native } from '../src/native.js';
import type { RingStream } from '../src/ring/index.js';
import { ringTestSetup } from './support/ring.js';
import { waitFor } from './support/echo.js';

const { newRing, track } = ringTestSetup('iolab-ring-pause-');
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
/** One loop turn: the uv_prepare that submits what was queued (the pause's cancel) has run. */
const turn = () => new Promise((r) => setImmediate(r));

describe('RingStream.pause()', () => {
  it('stops receiving until resume(): the peer\'s bytes wait in the socket, sends go on, then all of it comes in order', async () => {
    const ring = newRing({ entries: 16 });
    const pool = ring.setupBufRing({ count: 8, size: 4096 });
    const [a, b] = track(native.socketpair('stream'));
    let got = '';
    const stream = ring.recvMultishot(b, pool, { data: (id, n) => { got += pool.bytes(id, n).toString(); pool.release(id); }, end() {} });
    native.writev(a, [Buffer.from('first ')]);
    await waitFor(() => got === 'first ', 10_000, 'the first bytes');
    stream.pause();
    await turn();
    native.writev(a, [Buffer.from('second')]);
    stream.write(Buffer.from('reply')); // sends go on while paused
    native.setNonBlocking(a, true);
    let reply = '';
    const readReply = () => {
      const buf = Buffer.alloc(16);
      try { reply += buf.subarray(0, native.readv(a, [buf])).toString(); } catch { /* EAGAIN: not yet */ }
      return reply === 'reply';
    };
    await waitFor(readReply, 10_000, 'the reply sent while paused');
    // Nothing the Ring could do comes meanwhile (a slow machine can only hide a broken pause, not
    // fail a working one): the bytes wait in the socket.
    for (let i = 0; i < 10; i++) await sleep(5);
    expect(got).toBe('first ');
    stream.resume();
    await waitFor(() => got === 'first second', 10_000, 'the bytes written while paused');
    await stream.close();
  });

  it('pause() and resume() of a closed stream do nothing (no throw), as on a destroyed net.Socket', async () => {
    const ring = newRing({ entries: 16 });
    const pool = ring.setupBufRing({ count: 8, size: 4096 });
    const [, b] = track(native.socketpair('stream'));
    const stream = ring.recvMultishot(b, pool, { data: (id) => pool.release(id), end() {} });
    await stream.close();
    expect(() => {
      stream.pause();
      stream.resume();
    }).not.toThrow();
  });

  it('receiving paused: once pauseAt is passed the recv stops, so the queue stays under pauseAt plus the pool and the peer\'s writes meet a full socket; all of it echoed once the peer reads', async () => {
    const ring = newRing({ entries: 64 });
    // A pool larger than the socket's buffer: a multishot recv that is not cancelled never runs
    // out of buffers (each goes back once copied into the queue), so only the pause can stop it.
    const pool = ring.setupBufRing({ count: 256, size: 4096 });
    const [a, b] = track(native.socketpair('stream'));
    const pauseAt = 16384;
    let received = 0;
    const stream: RingStream = ring.recvMultishot(b, pool, {
      data(id, length) { received += length; stream.send(id, length); },
      end() {},
    }, { pauseAt });
    native.setNonBlocking(a, true);
    const chunk = randomBytes(4096);
    // The peer writes and never reads. A paused stream takes nothing more, so a's writes fill the
    // socket and stay refused; a stream that went on receiving would take all 8 MiB.
    // Done once the queue passed pauseAt and the socket refused 5 writes in a row, 20 ms apart
    // (a loaded machine may take a while to get the Ring its turns: 10 s at most).
    let written = 0;
    const deadline = Date.now() + 10_000;
    for (let refused = 0; (refused < 5 || stream.queuedBytes <= pauseAt) && written < 8 << 20 && Date.now() < deadline;) {
      try {
        written += native.writev(a, [chunk.subarray(written % chunk.length)]);
        refused = 0;
      } catch (err) {
        if ((err as { code?: string }).code !== 'EAGAIN') throw err;
        refused++;
        await sleep(20); // the Ring's turns: a stream still receiving makes room meanwhile
      }
    }
    expect(written, 'the peer\'s writes met a full socket').toBeLessThan(8 << 20);
    expect(stream.queuedBytes).toBeGreaterThan(pauseAt);
    expect(stream.queuedBytes).toBeLessThanOrEqual(pauseAt + pool.count * pool.size);
    const sent = Buffer.concat(Array.from({ length: Math.ceil(written / 4096) }, () => chunk)).subarray(0, written);
    expect((await readAll(a, written)).equals(sent)).toBe(true); // resumed once drained: every byte back
    expect(received).toBe(written);
    await stream.close();
  });

  it('a stream that starved (its one buffer held) while its queue passed pauseAt stays paused when the buffer comes back', async () => {
    const ring = newRing({ entries: 16 });
    // One buffer: while the data handler holds it the recv finds none (ENOBUFS) and starves, so
    // the stream is not receiving when its queue passes pauseAt; the buffer's return must not
    // start it again.
    const pool = ring.setupBufRing({ count: 1, size: 256 });
    const [a, b] = track(native.socketpair('stream'));
    native.setsockopt(b, 'SO_SNDBUF', 1); // the copies meet a full socket at once
    const pauseAt = 4096;
    let received = 0;
    let overAt: number | undefined;
    const stream: RingStream = ring.recvMultishot(b, pool, {
      data(id, length) {
        received += length;
        stream.write(pool.bytes(id, length));
        pool.release(id);
        if (overAt === undefined && stream.queuedBytes > pauseAt) overAt = received;
      },
      end() {},
    }, { pauseAt });
    // more than the socket's send buffer and pauseAt together, never read: the queue must pass
    // pauseAt, and then at most the one chunk in the buffer may still come
    native.setNonBlocking(a, true);
    const bytes = randomBytes(64 << 10);
    const written = native.writev(a, [bytes]);
    await waitFor(() => overAt !== undefined, 10_000, 'the queue past pauseAt');
    // (a slow machine can only hide a broken pause, not fail a working one)
    for (let i = 0; i < 20; i++) await sleep(5);
    expect(written).toBe(64 << 10);
    expect(received - overAt!).toBeLessThanOrEqual(pool.size);
    expect(stream.queuedBytes).toBeLessThanOrEqual(pauseAt + pool.size);
    // once the peer reads, it resumes (starved still: it takes the buffer again) and echoes all
    expect((await readAll(a, written)).equals(bytes)).toBe(true);
    expect(received).toBe(written);
    await stream.close();
  });
});
