// A buffer ring run dry: the streams that wait for a buffer, and which of them the buffer that
// comes back goes to.
import { describe, expect, it } from 'vitest';
import { native } from '../src/native.js';
import { ringTestSetup } from './support/ring.js';
import { waitFor } from './support/echo.js';

const { newRing, track } = ringTestSetup('iolab-ring-starved-');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a pool run dry', () => {
  it('a returned buffer wakes a waiting stream that can take it, not one that is paused', async () => {
    const ring = newRing({ entries: 16 });
    const pool = ring.setupBufRing({ count: 2, size: 4096 });
    const [a1, a2] = track(native.socketpair('stream'));
    const [b1, b2] = track(native.socketpair('stream'));
    // A holds both buffers; its recv stays armed (nothing more has come).
    const heldA: number[] = [];
    const sa = ring.recvMultishot(a2, pool, { data: (id) => heldA.push(id), end() {} });
    native.writev(a1, [Buffer.alloc(8192, 1)]);
    await waitFor(() => heldA.length === 2, 10_000, "A's two chunks");
    // One byte more for A: the submit below runs the kernel's retry, which finds the pool empty
    // and ends A's recv with ENOBUFS, a CQE the Ring has not reaped yet. Then a write that
    // nobody reads pauses A: for all the Ring knows, its recv is still armed.
    native.writev(a1, [Buffer.from('x')]);
    void ring.nop();
    ring.submit();
    sa.write(Buffer.alloc(4 << 20));
    await waitFor(() => ring.stats.recvNoBuffers === 1, 10_000, "A's ENOBUFS");
    expect(sa.queuedBytes).toBeGreaterThan(65536); // paused (pauseAt's default)
    // B waits for a buffer too, behind A.
    let bGot = '';
    const sb = ring.recvMultishot(b2, pool, { data: (id, n) => { bGot += pool.bytes(id, n).toString(); pool.release(id); }, end() {} });
    native.writev(b1, [Buffer.from('hello')]);
    await waitFor(() => ring.stats.recvNoBuffers === 2, 10_000, "B's ENOBUFS");
    // One buffer back: B can take it; A cannot (paused).
    pool.release(heldA.shift()!);
    await waitFor(() => bGot === 'hello', 5_000, "B's bytes");
    await sb.close();
    // A's reader catches up: A resumes and gets its byte (its other buffer goes back on the way).
    pool.release(heldA.shift()!);
    native.setNonBlocking(a1, true);
    const sink = Buffer.alloc(1 << 16);
    for (let drained = 0; drained < 4 << 20;) {
      try { drained += native.readv(a1, [sink]); } catch { await sleep(1); }
    }
    await waitFor(() => heldA.length === 1, 10_000, "A's last byte");
    pool.release(heldA.shift()!);
    await sa.close();
  });
});

describe('a stream opened while another of its pool waits for a buffer', () => {
  // The kernel takes a buffer for a recv before it looks for data: a stream opened on a socket
  // with nothing to read ends ENOBUFS at once when the pool is empty, and may take the buffer
  // another stream waits for and give it back without a CQE. Seed 25561 of the model test. With
  // a buffer held elsewhere, a returned buffer never refills the whole pool: only one stream is
  // woken per buffer, so it must be one that has bytes to read.
  it.each([
    { count: 1, heldElsewhere: false },
    { count: 2, heldElsewhere: true },
  ])('the waiting stream still gets every byte (pool of $count 4-byte buffers, one held elsewhere: $heldElsewhere)', async ({ count, heldElsewhere }) => {
    const ring = newRing({ entries: 16 });
    const pool = ring.setupBufRing({ count, size: 4 });
    const [a1, a2] = track(native.socketpair('stream'));
    const [, b2] = track(native.socketpair('stream'));
    const [h1, h2] = track(native.socketpair('stream'));
    const held: number[] = [];
    let sh: ReturnType<typeof ring.recvMultishot> | undefined;
    if (heldElsewhere) {
      sh = ring.recvMultishot(h2, pool, { data: (id) => held.push(id), end() {} });
      native.writev(h1, [Buffer.from('held')]);
      await waitFor(() => held.length === 1, 5_000, "the other stream's buffer");
    }
    const sent = Buffer.from('abcdefghijklmnopqrstuvwxy');
    let gotA = '';
    let sb: ReturnType<typeof ring.recvMultishot> | undefined;
    const sa = ring.recvMultishot(a2, pool, {
      data: (id, n) => {
        gotA += Buffer.from(pool.bytes(id, n)).toString();
        // B opens before A has caught up, while A's recv has ended ENOBUFS (or will).
        sb ??= ring.recvMultishot(b2, pool, { data: (bid) => pool.release(bid), end() {} });
        setImmediate(() => pool.release(id));
      },
      end() {},
    });
    native.writev(a1, [sent]);
    await waitFor(() => gotA.length === sent.length, 5_000, "A's 25 bytes");
    expect(gotA).toBe(sent.toString());
    for (const id of held) pool.release(id);
    await sb!.close();
    await sa.close();
    await sh?.close();
  });
});
