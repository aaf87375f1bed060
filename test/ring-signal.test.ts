// Node's conventions on the Ring, through the public API: `{ signal }` cancels that op in the
// kernel and rejects it with an AbortError as fs.promises does; `{ timeout }` links a
// LINK_TIMEOUT and rejects with ETIMEDOUT; both on batches (the whole batch); async methods
// reject and never throw (bad arguments, a closed Ring); `await using` / Symbol.asyncDispose;
// connect to IPv6, its errors carrying address and port (a name through dns.lookup:
// ring.test.ts); the classes made only by the Ring refuse `new`.
import { describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { getEventListeners } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { native, projectRoot } from '../src/native.js';
import { AbortError, BufferRing, Ring, RingClosedError, RingStream, recvmsg, setNonBlocking, socketpair, writevSync, type ReadvBatchError } from '../src/index.js';
import { ringTestSetup } from './support/ring.js';

const { newRing, track, file, dir } = ringTestSetup('iolab-ring-signal-');
const tick = () => new Promise((res) => setTimeout(res, 5));

/** A recv with a signal, submitted and waiting in the kernel on a socket nobody writes to. */
async function recvInKernel() {
  const ring = newRing();
  const [, b] = track(socketpair('stream'));
  const controller = new AbortController();
  const recv = ring.recv(b, Buffer.alloc(8), undefined, { signal: controller.signal });
  ring.submit();
  await tick();
  return { ring, b, controller, recv };
}

describe('signal', () => {
  it('an abort cancels the op in the kernel: rejected with an AbortError within a few ms, nothing in flight after', async () => {
    const { ring, b, controller, recv } = await recvInKernel();
    expect(ring.inFlight).toBe(1);
    const reason = new Error('no longer wanted');
    const started = performance.now();
    controller.abort(reason);
    const err = await recv.catch((e: unknown) => e);
    expect(performance.now() - started).toBeLessThan(100);
    expect(err).toBeInstanceOf(AbortError);
    expect(err).toMatchObject({ name: 'AbortError', code: 'ABORT_ERR', cause: reason });
    expect(ring.inFlight).toBe(0);
    expect(native.liveObjects()).toMatchObject({ ringOps: 0, heldBuffers: 0 });
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('an already aborted signal rejects at once, nothing queued', async () => {
    const ring = newRing();
    const [, b] = track(socketpair('stream'));
    const reason = new Error('before');
    const signal = AbortSignal.abort(reason);
    const before = ring.stats.sqesSubmitted;
    for (const call of [
      () => ring.recv(b, Buffer.alloc(1), undefined, { signal }),
      () => ring.nop({ signal }),
      () => ring.readvBatch(b, [{ buffers: [Buffer.alloc(1)] }], { signal }),
      () => ring.sendmsg(b, [Buffer.from('x')], { signal }),
    ]) {
      await expect(call()).rejects.toMatchObject({ name: 'AbortError', code: 'ABORT_ERR', cause: reason });
    }
    expect(ring.inFlight).toBe(0);
    ring.submit();
    expect(ring.stats.sqesSubmitted).toBe(before);
  });

  it('an op done before the abort keeps its result; aborting then is a no-op', async () => {
    const ring = newRing();
    const path = file('done.txt', 'hello');
    const fd = track(fs.openSync(path, 'r'));
    const controller = new AbortController();
    const buf = Buffer.alloc(5);
    expect(await ring.read(fd, buf, 0, { signal: controller.signal })).toBe(5);
    controller.abort();
    expect(buf.toString()).toBe('hello');
    expect(ring.inFlight).toBe(0);
  });

  it('one long-lived signal over many ops gathers no listeners', async () => {
    const ring = newRing();
    const [a, b] = track(socketpair('stream'));
    const signal = new AbortController().signal;
    for (let i = 0; i < 200; i++) {
      const got = ring.recv(b, Buffer.alloc(1), undefined, { signal });
      await ring.send(a, Buffer.from('x'), undefined, { signal });
      expect(await got).toBe(1);
      await ring.nop({ signal });
    }
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
  });

  it('on a batch, the abort cancels all of it', async () => {
    const ring = newRing();
    const [, b] = track(socketpair('seqpacket'));
    const controller = new AbortController();
    const batch = ring.recvmsgBatch(b, [[Buffer.alloc(4)], [Buffer.alloc(4)], [Buffer.alloc(4)]], { signal: controller.signal });
    ring.submit();
    await tick();
    expect(ring.inFlight).toBe(3);
    controller.abort();
    await expect(batch).rejects.toMatchObject({ name: 'AbortError' });
    expect(ring.inFlight).toBe(0);
  });

  it('a readvBatch aborted partway rejects with index and results: the bytes its first read took are told', async () => {
    const ring = newRing();
    const [a, b] = track(socketpair('stream'));
    writevSync(a, [Buffer.from('partway')]);
    const controller = new AbortController();
    const reads = ring.readvBatch(b, [{ buffers: [Buffer.alloc(16)] }, { buffers: [Buffer.alloc(16)] }], { signal: controller.signal });
    ring.submit();
    await tick();
    controller.abort();
    const err = (await reads.catch((e: unknown) => e)) as ReadvBatchError;
    expect(err).toBeInstanceOf(AbortError);
    expect(err.index).toBe(1);
    expect(err.results[0]).toBe(7);
    expect(err.results[1]).toBeInstanceOf(AbortError);

  });

  it('an op still waiting for room in the SQ is settled by the abort, never sent', async () => {
    const ring = newRing({ entries: 2 });
    const [, b] = track(socketpair('stream'));
    const controller = new AbortController();
    const waiting = Array.from({ length: 8 }, () => ring.recv(b, Buffer.alloc(1), undefined, { signal: controller.signal }));
    expect(ring.stats.overflowQueued).toBeGreaterThan(0);
    controller.abort();
    const settled = await Promise.allSettled(waiting);
    for (const s of settled) expect((s as PromiseRejectedResult).reason).toBeInstanceOf(AbortError);
    expect(ring.inFlight).toBe(0);
  });
});

describe('many at once', () => {
  it('2,000 recvs, some aborted, some timed out, some fed: each settles once, no byte lost or doubled, nothing left', async () => {
    const ring = newRing({ entries: 64 }); // fewer SQ entries than ops: the backlog is reached too
    const pairs = Array.from({ length: 8 }, () => track(socketpair('seqpacket')));
    const controllers = Array.from({ length: 16 }, () => new AbortController());
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff);
    const ops = Array.from({ length: 2000 }, (_, i) => {
      const [, b] = pairs[i % pairs.length];
      const kind = next() % 3;
      const options = kind === 0 ? { signal: controllers[next() % 16].signal } : kind === 1 ? { timeout: 5 + (next() % 40) } : { signal: controllers[next() % 16].signal, timeout: 200 };
      return ring.recv(b, Buffer.alloc(4), undefined, options).then((n) => ({ n }), (e: { code?: string }) => ({ code: e.code }));
    });
    expect(ring.stats.overflowQueued).toBeGreaterThan(0);
    let sent = 0;
    for (let k = 0; k < 300; k++) {
      const [a] = pairs[next() % pairs.length];
      writevSync(a, [Buffer.from('m')]);
      sent++;
      if (k % 20 === 0) controllers[next() % 16].abort();
      if (k % 50 === 0) await tick();
    }
    await tick();
    for (const c of controllers) c.abort();
    const outcomes = await Promise.all(ops);
    const received = outcomes.filter((o) => 'n' in o).length;
    expect(outcomes.every((o) => ('n' in o ? o.n === 1 : o.code === 'ABORT_ERR' || o.code === 'ETIMEDOUT'))).toBe(true);
    // what no recv took is still in the sockets
    let left = 0;
    for (const [, b] of pairs) {
      setNonBlocking(b, true);
      try { for (;;) { recvmsg(b, [Buffer.alloc(4)]); left++; } } catch { /* EAGAIN */ }
    }
    expect(received + left).toBe(sent);
    expect(ring.inFlight).toBe(0);
    expect(native.liveObjects()).toMatchObject({ ringOps: 0, heldBuffers: 0 });
  });
});

describe('a signal not aborted', () => {
  it("an op with a signal that another cause cancels (cancelFd) rejects with that ECANCELED, not an AbortError", async () => {
    const { ring, b, controller, recv } = await recvInKernel();
    await ring.cancelFd(b);
    const err = await recv.catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'ECANCELED' });
    expect((err as Error).name).not.toBe('AbortError');
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });
});

describe('connect to a host name with a signal', () => {
  it('one signal over many connects is left with no listener (an abort before the call, and during the lookup: ring-server-contract.test.ts)', async () => {
    const ring = newRing();
    const server = net.createServer((s) => s.destroy());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as net.AddressInfo;
    try {
      const controller = new AbortController();
      for (let i = 0; i < 12; i++) {
        const c = track(native.socket('inet', 'stream'));
        await ring.connect(c, { host: 'localhost', port }, { signal: controller.signal });
      }
      expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    } finally {
      server.close();
    }
  });
});

describe('timeout', () => {
  it('a recv that never gets data rejects with ETIMEDOUT at about the timeout', async () => {
    const ring = newRing();
    const [, b] = track(socketpair('stream'));
    const started = performance.now();
    const err = await ring.recv(b, Buffer.alloc(8), undefined, { timeout: 50 }).catch((e: unknown) => e);
    const took = performance.now() - started;
    expect(err).toMatchObject({ code: 'ETIMEDOUT', syscall: 'recv', errno: -110 });
    expect((err as Error).message).toBe('ETIMEDOUT: connection timed out, recv');
    expect(took).toBeGreaterThanOrEqual(45);
    expect(took).toBeLessThan(1000);
    expect(ring.inFlight).toBe(0);
  });

  it('one that gets its data in time resolves, and leaves nothing in flight', async () => {
    const ring = newRing();
    const [a, b] = track(socketpair('stream'));
    const buf = Buffer.alloc(8);
    const got = ring.recv(b, buf, undefined, { timeout: 2000 });
    setTimeout(() => writevSync(a, [Buffer.from('in time')]), 10);
    expect(await got).toBe(7);
    expect(buf.toString('utf8', 0, 7)).toBe('in time');
    expect(ring.inFlight).toBe(0);
  });

  it('signal and timeout together: whichever comes first', async () => {
    const ring = newRing();
    const [, b] = track(socketpair('stream'));
    const controller = new AbortController();
    const aborted = ring.recv(b, Buffer.alloc(1), undefined, { signal: controller.signal, timeout: 5000 });
    setTimeout(() => controller.abort(), 10);
    await expect(aborted).rejects.toMatchObject({ name: 'AbortError' });
    const timed = ring.recv(b, Buffer.alloc(1), undefined, { signal: new AbortController().signal, timeout: 20 });
    await expect(timed).rejects.toMatchObject({ code: 'ETIMEDOUT' });
    expect(ring.inFlight).toBe(0);
  });

  it('on a batch, each op has the deadline; what finished keeps its result (readvBatch: err.results)', async () => {
    const ring = newRing();
    const [a, b] = track(socketpair('stream'));
    writevSync(a, [Buffer.from('x')]);
    const bufs = [Buffer.alloc(1), Buffer.alloc(1)];
    const err = (await ring.readvBatch(b, [{ buffers: [bufs[0]] }, { buffers: [bufs[1]] }], { timeout: 30 }).catch((e: unknown) => e)) as ReadvBatchError;
    expect(err).toMatchObject({ code: 'ETIMEDOUT', index: 1 });
    expect(err.results[0]).toBe(1);
    expect(err.results[1]).toMatchObject({ code: 'ETIMEDOUT' });
    expect(bufs[0].toString()).toBe('x');
    expect(ring.inFlight).toBe(0);
  });

  it('bad options reject with Node\'s codes', async () => {
    const ring = newRing();
    await expect(ring.nop({ timeout: 0 })).rejects.toMatchObject({ name: 'RangeError', code: 'ERR_OUT_OF_RANGE' });
    await expect(ring.nop({ timeout: '5' as unknown as number })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_TYPE' });
    await expect(ring.nop({ signal: {} as AbortSignal })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_TYPE' });
    await expect(ring.nop(null as unknown as undefined)).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_TYPE' });
    // the signal refused in fs.promises' words, whatever it is
    const refusal = (p: Promise<unknown>) => p.then(() => 'settled', (e: Error & { code?: string }) => `${e.code}: ${e.message}`);
    for (const signal of [{}, 'x', 5, null, Object.create(null), 'a much longer string than twenty-eight', () => {}]) {
      const theirs = await refusal(fs.promises.readFile(file('any', 'x'), { signal: signal as AbortSignal }));
      expect(theirs).toMatch(/^ERR_INVALID_ARG_TYPE: The "options.signal" property/);
      expect(await refusal(ring.nop({ signal: signal as AbortSignal }))).toBe(theirs);
    }
    expect(await refusal(ring.nop({ timeout: '5' as unknown as number }))).toBe('ERR_INVALID_ARG_TYPE: The "options.timeout" property must be of type number. Received type string (\'5\')');
    expect(await refusal(ring.nop('fast' as never))).toBe('ERR_INVALID_ARG_TYPE: The "options" argument must be of type object. Received type string (\'fast\')');
    const aborted = await ring.nop({ signal: AbortSignal.abort('why') }).catch((e: unknown) => e);
    expect(aborted).toMatchObject({ name: 'AbortError', code: 'ABORT_ERR', message: 'The operation was aborted', cause: 'why' });
    for (const options of [null, 'big', 16]) {
      expect(() => ring.setupBufRing(options as never)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE', message: 'The "options" argument must be of type object' }));
    }
    // setTimeout's range: up to 2^31 - 1 ms
    await expect(ring.nop({ timeout: 2 ** 31 - 1 })).resolves.toBeUndefined();
    for (const timeout of [2 ** 31, Infinity, NaN, -1]) {
      await expect(ring.nop({ timeout }), String(timeout)).rejects.toMatchObject({ name: 'RangeError', code: 'ERR_OUT_OF_RANGE',
        message: `The value of "options.timeout" is out of range. It must be > 0 and <= 2147483647. Received ${timeout}` });
    }
  });
});

describe('async methods reject, never throw', () => {
  it('bad arguments and a closed Ring give rejected Promises; the sync methods throw', async () => {
    const ring = new Ring();
    const any = ring as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
    let thrown: unknown;
    let p: Promise<unknown> | undefined;
    try { p = any.read('3', Buffer.alloc(1)); } catch (e) { thrown = e; }
    expect(thrown).toBeUndefined();
    await expect(p).rejects.toMatchObject({ name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' });
    await ring.close();
    for (const name of ['nop', 'read', 'write', 'readv', 'writev', 'fsync', 'sendmsg', 'recvmsg', 'sendmsgBatch', 'recvmsgBatch', 'readvBatch', 'closeFds', 'accept', 'connect', 'recv', 'send', 'closeFd', 'socket', 'cancelFd']) {
      const args = name === 'nop' ? [] : name === 'socket' ? ['unix'] : name === 'connect' ? [0, '/x'] : name === 'closeFds' ? [[0]] : name.endsWith('Batch') ? [0, []] : [0, [Buffer.alloc(1)]];
      let result: Promise<unknown> | undefined;
      expect(() => { result = any[name](...args); }, name).not.toThrow();
      await expect(result, name).rejects.toBeInstanceOf(RingClosedError);
    }
    expect(() => ring.submit()).toThrow(RingClosedError);
    expect(() => ring.setupBufRing({ count: 2, size: 16 })).toThrow(RingClosedError);
  });
});

describe('cleanup', () => {
  it('Symbol.asyncDispose closes the Ring (Node 20: called by hand)', async () => {
    const ring = new Ring();
    const dispose = (ring as unknown as Record<symbol, () => Promise<void>>)[Symbol.asyncDispose ?? Symbol.for('nodejs.asyncDispose')];
    expect(typeof dispose).toBe('function');
    await dispose.call(ring);
    expect(ring.closed).toBe(true);
  });

  it('`await using ring = new Ring()` on Node 24 closes it on leaving the block', () => {
    const bin = execFileSync(process.execPath, [join(projectRoot, 'scripts', 'node-lines.mjs'), '24'], { encoding: 'utf8' }).trim();
    const script = join(dir().path, 'using.mjs');
    fs.writeFileSync(script, `
const { Ring, liveObjects } = await import(process.argv[2]);
let inside, ring;
{
  await using r = new Ring();
  ring = r;
  await r.nop();
  inside = [r.closed, liveObjects().rings];
}
console.log(JSON.stringify({ inside, closed: ring.closed, rings: liveObjects().rings }));
`);
    const r = spawnSync(join(bin, 'node'), [script, pathToFileURL(join(projectRoot, 'dist', 'index.js')).href], { encoding: 'utf8', timeout: 60_000 });
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual({ inside: [false, 1], closed: true, rings: 0 });
  });

  it('BufferRing and RingStream cannot be made with new (ERR_ILLEGAL_CONSTRUCTOR)', () => {
    const Pool = BufferRing as unknown as new (...a: unknown[]) => unknown;
    const Stream = RingStream as unknown as new (...a: unknown[]) => unknown;
    expect(() => new Pool({}, 2, 16, () => new Error())).toThrow(expect.objectContaining({ name: 'TypeError', code: 'ERR_ILLEGAL_CONSTRUCTOR' }));
    expect(() => new Stream({}, 0)).toThrow(expect.objectContaining({ name: 'TypeError', code: 'ERR_ILLEGAL_CONSTRUCTOR' }));
  });
});

describe('connect as node:net', () => {
  // (a name through dns.lookup: ring.test.ts, 'localhost' on an inet socket)
  it('IPv6, and errors with address and port', async () => {
    const ring = newRing();
    const server = net.createServer((s) => s.end('six'));
    await new Promise<void>((res) => server.listen(0, '::1', res));
    const { port } = server.address() as net.AddressInfo;
    try {
      const fd = await ring.socket('inet6');
      await ring.connect(fd, { host: '::1', port });
      const buf = Buffer.alloc(8);
      expect(await ring.recv(fd, buf)).toBe(3);
      const late = track(await ring.socket('inet6'));
      const closed = new Promise((res) => server.close(res)); // listens no more at once
      await ring.closeFd(fd);
      await closed;
      const err = await ring.connect(late, { host: '::1', port }).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'ECONNREFUSED', syscall: 'connect', address: '::1', port });
      expect(err).not.toHaveProperty('path');
      expect((err as Error).message).toBe(`ECONNREFUSED: connection refused, connect '[::1]:${port}'`); // as the sync connect's
    } finally {
      if (server.listening) server.close();
    }
  });
});
