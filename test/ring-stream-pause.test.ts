// RingStream.pause() and resume() themselves (RingSocket's backpressure stands on them): a paused
// stream takes nothing from its socket, its sends go on, and resume() brings every byte in order.
import { describe, expect, it } from 'vitest';
import { native } from '../src/native.js';
import { ringTestSetup } from './support/ring.js';
import { waitFor } from './support/echo.js';

const { newRing, track } = ringTestSetup('iolab-ring-pause-');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
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
});
