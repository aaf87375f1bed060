// Ring.close() and cancellation: ops in flight reject with RingClosedError, the per-op cancel
// where the kernel refuses CANCEL_ANY, an SQ full of ops at close(), cancelFd, an idle Ring that
// does not keep the loop alive.
import { describe, expect, it } from 'vitest';
import fs from 'node:fs';
import { native } from '../src/native.js';
import { Ring, RingClosedError, ringTestRefuseCancelAny } from '../src/ring/index.js';
import { ringTestSetup } from './support/ring.js';

const { newRing, track, file } = ringTestSetup('iolab-ring-close-');

describe('close and cancellation', () => {
  it('close() with 1,000 ops in flight rejects the cancelled ones with RingClosedError', async () => {
    const ring = new Ring({ entries: 256 });
    const [a, b] = track(native.socketpair('stream'));
    const recvs = Array.from({ length: 1000 }, () => ring.recv(b, Buffer.alloc(8)));
    ring.submit();
    await new Promise((res) => setTimeout(res, 10));
    expect(ring.inFlight).toBe(1000);
    const closed = ring.close();
    expect(ring.closed).toBe(true);
    const settled = await Promise.allSettled(recvs);
    await closed;
    for (const s of settled) {
      expect(s.status).toBe('rejected');
      const reason = (s as PromiseRejectedResult).reason;
      expect(reason).toBeInstanceOf(RingClosedError);
      expect(reason.code).toBe('ERR_RING_CLOSED');
    }
    await expect(ring.nop()).rejects.toThrow(RingClosedError);
    await ring.close(); // idempotent
    expect(ring.stats.cancelOps).toBe(0); // one IORING_ASYNC_CANCEL_ANY took them all
    expect(native.liveObjects()).toMatchObject({ ringOps: 0, heldBuffers: 0 });
    void a;
  });

  const expectAllClosed = (settled: PromiseSettledResult<unknown>[]) => {
    for (const s of settled) {
      expect(s.status).toBe('rejected');
      expect((s as PromiseRejectedResult).reason).toBeInstanceOf(RingClosedError);
    }
  };

  it('where the kernel refuses CANCEL_ANY (before 5.19), close() cancels each op by its user_data, 5x more ops than SQ entries', async () => {
    const ring = new Ring({ entries: 8 });
    ringTestRefuseCancelAny(ring);
    const [, b] = track(native.socketpair('stream'));
    const recvs = Array.from({ length: 40 }, () => ring.recv(b, Buffer.alloc(8)));
    ring.submit();
    await new Promise((res) => setTimeout(res, 10));
    expect(ring.inFlight).toBe(40);
    const closed = ring.close();
    expectAllClosed(await Promise.allSettled(recvs));
    await closed;
    // the refused CANCEL_ANY, then 40 cancels through an 8-entry SQ: submitted to make room
    expect(ring.stats.cancelOps).toBe(40);
    expect(native.liveObjects()).toMatchObject({ ringOps: 0, heldBuffers: 0 });
  });

  it('close() with the SQ full of unsubmitted ops makes room for its cancels (with CANCEL_ANY and per op)', async () => {
    const [, b] = track(native.socketpair('stream'));
    for (const refuse of [false, true]) {
      const ring = new Ring({ entries: 4 });
      if (refuse) ringTestRefuseCancelAny(ring);
      // 4 fill the SQ (not yet submitted: same turn), 6 wait in the backlog
      const recvs = Array.from({ length: 10 }, () => ring.recv(b, Buffer.alloc(8)));
      expect(ring.stats).toMatchObject({ submitCalls: 0, overflowQueued: 6 });
      const closed = ring.close();
      expectAllClosed(await Promise.allSettled(recvs));
      await closed;
      expect(ring.stats.cancelOps).toBe(refuse ? 4 : 0);
      expect(native.liveObjects()).toMatchObject({ ringOps: 0, heldBuffers: 0 });
    }
  });

  it('close() resolves at once when idle; ops already done keep their result, bytes and all', async () => {
    const ring = new Ring();
    const done = ring.nop();
    await done;
    const buf = Buffer.alloc(3);
    const read = ring.read(track(fs.openSync(file('cl.txt', 'abc'), 'r')), buf, 0);
    const nop = ring.nop();
    // a nop, and a read of a page the test just wrote, complete inside the submit: done in the
    // kernel, not yet reaped, when close() begins
    ring.submit();
    await ring.close();
    expect(await nop).toBeUndefined();
    expect(await read).toBe(3);
    expect(buf.toString()).toBe('abc');
  });

  it('cancelFd cancels the ops waiting on one fd (ECANCELED), others go on', async () => {
    const ring = newRing();
    const [a, b] = track(native.socketpair('stream'));
    const [c, d] = track(native.socketpair('stream'));
    // handlers attached now: the rejections can land while cancelFd is awaited
    const waiting = [ring.recv(b, Buffer.alloc(4)), ring.recv(b, Buffer.alloc(4))].map((p) => p.then(() => 'resolved', (e) => e));
    const other = ring.recv(d, Buffer.alloc(4));
    await new Promise((res) => setTimeout(res, 10));
    expect(await ring.cancelFd(b)).toBe(2);
    expect(await ring.cancelFd(b)).toBe(0);
    for (const w of waiting) expect(await w).toMatchObject({ code: 'ECANCELED', syscall: 'recv' });
    native.writev(c, [Buffer.from('ok')]);
    expect(await other).toBe(2);
    void a;
  });

  it('closing the fd while an op waits does not cancel it (the kernel holds the file)', async () => {
    const ring = newRing();
    const [a, b] = native.socketpair('stream');
    const buf = Buffer.alloc(8);
    const pending = ring.recv(b, buf);
    await new Promise((res) => setTimeout(res, 10));
    fs.closeSync(b);
    await new Promise((res) => setTimeout(res, 10));
    expect(ring.inFlight).toBe(1);
    native.writev(a, [Buffer.from('still')]);
    expect(await pending).toBe(5);
    expect(buf.toString('utf8', 0, 5)).toBe('still');
    fs.closeSync(a);
  });

  it('an idle Ring does not keep the loop alive, a pending op does (checked in a child)', async () => {
    const { execa } = await import('execa');
    const { projectRoot } = await import('../src/native.js');
    const idle = await execa(process.execPath, ['--import', 'tsx', '-e',
      "const { Ring } = await import('./src/ring/index.ts'); const r = new Ring(); await r.nop(); console.log('done');"],
    { cwd: projectRoot, reject: false, timeout: 20_000 });
    expect(idle.stdout).toBe('done');
    expect(idle.exitCode).toBe(0);
    const pending = await execa(process.execPath, ['--import', 'tsx', '-e',
      "const { Ring } = await import('./src/ring/index.ts'); const { native } = await import('./src/native.ts');" +
      "const r = new Ring(); const [a, b] = native.socketpair('stream');" +
      "setTimeout(() => native.writev(a, [Buffer.from('x')]), 200);" +
      "const n = await r.recv(b, Buffer.alloc(1)); console.log('got', n);"],
    { cwd: projectRoot, reject: false, timeout: 20_000 });
    expect(pending.stdout).toBe('got 1');
  });
});
