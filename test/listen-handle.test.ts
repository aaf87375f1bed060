// How onRing's listening handle (src/ring/listen-handle.ts) answers each accept error, over a
// stand-in for the Ring whose accepts fail as a script says, on vitest's fake clock: errors of
// the peer's (ECONNABORTED, EPROTO, ...) are passed over at once; a want of fds or memory
// (EMFILE, ENFILE, ENOBUFS, ENOMEM) pauses the accepts 10 ms, doubling to 1 s, with the pause
// unref'd for an unref'd server; any other error stops the server with 'error', as net's does for
// an error of its handle. The real EMFILE, in a process whose fd limit the test lowered, is
// test/ring-server.test.ts's. And a connection node:cluster's primary hands in after close() is
// closed, not served (on a real Ring).
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { EventEmitter, once } from 'node:events';
import { close, socketpair } from '../src/index.js';
import { ListenHandle, type NetServerLike } from '../src/ring/listen-handle.js';
import { Ring, type BufferRing } from '../src/ring/ring.js';
import type { RingSocketDuplex } from '../src/ring/duplex.js';

const ACCEPTS_IN_FLIGHT = 4;
const codeError = (code: string) => Object.assign(new Error(`accept ${code}`), { code });

/** A server as net.Server looks to its handle. */
function serverLike(unref = false) {
  const server = Object.assign(new EventEmitter(), {
    listen() {}, close() {}, _handle: null as unknown, _connections: 0, _emitCloseIfDrained() {}, _unref: unref,
  });
  return server as typeof server & NetServerLike;
}

/** A Ring whose accept n (from 0, over every loop) settles as `answer(n, now)` says: an error to
 * reject with, or undefined to wait until cancelled. Each accept's time on the fake clock. */
function standInRing(answer: (n: number, now: number) => Error | undefined) {
  const at: number[] = [];
  const ring = {
    accept(_fd: number, { signal }: { signal: AbortSignal }) {
      const err = answer(at.length, Date.now());
      at.push(Date.now());
      if (err) return Promise.reject(err);
      return new Promise((_, reject) => signal.addEventListener('abort', () => reject(codeError('ABORT_ERR')), { once: true }));
    },
    submit() {},
  };
  return { ring: ring as unknown as Ring, at };
}

function started(ring: Ring, server = serverLike()) {
  const handle = new ListenHandle(server, ring, {} as BufferRing);
  const released = vi.fn();
  handle.start({ fd: 1000, release: released, unixPath: false });
  server._handle = handle;
  return { handle, server, released };
}

describe("onRing's accepts: each error as net would take it", () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 0 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('a want of fds or memory pauses each accept 10 ms, then 20, 40, ... up to 1 s while it keeps failing', async () => {
    for (const code of ['EMFILE', 'ENFILE', 'ENOBUFS', 'ENOMEM']) {
      vi.setSystemTime(0);
      const { ring, at } = standInRing((_n, now) => (now < 4000 ? codeError(code) : undefined));
      const { handle, server } = started(ring);
      const errors: unknown[] = [];
      server.on('error', (e) => errors.push(e));
      await vi.advanceTimersByTimeAsync(6000);
      expect([...new Set(at)], code).toEqual([0, 10, 30, 70, 150, 310, 630, 1270, 2270, 3270, 4270]);
      expect(at.length, code).toBe(11 * ACCEPTS_IN_FLIGHT);
      expect(errors).toEqual([]);
      handle.close();
      await handle.released;
    }
  });

  it("the pause keeps the process alive as the server does: unref'd for an unref'd server; close() ends it at once", async () => {
    for (const weak of [false, true]) {
      vi.setSystemTime(0);
      const timers: NodeJS.Timeout[] = [];
      const real = globalThis.setTimeout;
      const spy = vi.spyOn(globalThis, 'setTimeout').mockImplementation(((fn: () => void, ms?: number) => {
        const t = real(fn, ms);
        timers.push(t);
        return t;
      }) as typeof setTimeout);
      const { ring, at } = standInRing((n) => (n < ACCEPTS_IN_FLIGHT ? codeError('EMFILE') : undefined));
      const { handle, released } = started(ring, serverLike(weak));
      await vi.advanceTimersByTimeAsync(1);
      spy.mockRestore();
      expect(timers).toHaveLength(ACCEPTS_IN_FLIGHT);
      expect(timers.map((t) => t.hasRef())).toEqual(Array(ACCEPTS_IN_FLIGHT).fill(!weak));
      handle.close(); // in the pause: every loop ends at once, without another accept
      let done = false;
      void handle.released!.then(() => (done = true));
      await vi.advanceTimersByTimeAsync(0); // no pause has passed
      expect(done).toBe(true);
      expect(at).toHaveLength(ACCEPTS_IN_FLIGHT);
      expect(released).toHaveBeenCalledOnce();
    }
  });

  it("the peer's errors are passed over at once, each of them; the server goes on", async () => {
    const passing = ['ECONNABORTED', 'EPROTO', 'EPERM', 'EINTR', 'ETIMEDOUT', 'ENETDOWN', 'EHOSTUNREACH', 'ENETUNREACH', 'EPROTONOSUPPORT', 'ENONET', 'EOPNOTSUPP'];
    const { ring, at } = standInRing((n) => (n < passing.length * ACCEPTS_IN_FLIGHT ? codeError(passing[n % passing.length]) : undefined));
    const { handle, server } = started(ring);
    const errors: unknown[] = [];
    server.on('error', (e) => errors.push(e));
    await vi.advanceTimersByTimeAsync(0);
    expect(errors).toEqual([]);
    expect(at).toHaveLength((passing.length + 1) * ACCEPTS_IN_FLIGHT); // every one retried, none paused
    expect(new Set(at)).toEqual(new Set([0]));
    expect(handle.stopped).toBe(false);
    handle.close();
    await handle.released;
  });

  it("any other error stops the server: 'error' once, the handle gone, the socket given up", async () => {
    const { ring, at } = standInRing((n) => (n === 0 ? codeError('EINVAL') : undefined));
    const { handle, server, released } = started(ring);
    const errors: { code?: string }[] = [];
    server.on('error', (e) => errors.push(e));
    await vi.advanceTimersByTimeAsync(0);
    expect(errors.map((e) => e.code)).toEqual(['EINVAL']);
    expect(handle.stopped).toBe(true);
    expect(server._handle).toBe(null);
    await handle.released;
    expect(released).toHaveBeenCalledOnce();
    expect(at).toHaveLength(ACCEPTS_IN_FLIGHT);
  });
});

describe('a connection the cluster hands in (SCHED_RR)', () => {
  it("after close() it is closed, not served: no 'connection'", async () => {
    const ring = new Ring();
    const pool = ring.setupBufRing({ count: 4, size: 4096 });
    try {
      for (const closedFirst of [false, true]) {
        const server = serverLike();
        const handle = new ListenHandle(server, ring, pool);
        handle.start({ fd: -1, release() {}, unixPath: false });
        const connections: RingSocketDuplex[] = [];
        server.on('connection', (s) => connections.push(s as RingSocketDuplex));
        if (closedFirst) handle.close();
        const [mine, theirs] = socketpair('stream');
        const closedHandle = vi.fn(() => close(mine));
        handle.passed({ fd: mine, close: closedHandle });
        expect(connections).toHaveLength(closedFirst ? 0 : 1);
        expect(closedHandle).toHaveBeenCalledTimes(closedFirst ? 1 : 0);
        for (const s of connections) {
          s.destroy();
          await once(s, 'close');
        }
        expect(closedHandle).toHaveBeenCalledOnce(); // the socket done with, the handle closes the fd
        close(theirs);
        if (!closedFirst) handle.close();
        await handle.released;
      }
    } finally {
      await ring.close();
    }
  });
});
