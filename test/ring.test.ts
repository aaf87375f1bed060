// The Ring, op by op, on real files, pipes and sockets; batching, backlog, overflow, detached
// and resized buffers, and the fd/live-object balance afterwards (close() and cancellation:
// ring-close.test.ts).
import { describe, expect, it } from 'vitest';
import fs from 'node:fs';
import net from 'node:net';
import { release } from 'node:os';
import { join } from 'node:path';
import { native } from '../src/native.js';
import { sendmsg } from '../src/syscalls.js';
import { Ring, RingClosedError } from '../src/ring/index.js';
import { collectGarbage, openFdCount } from './support/leaks.js';
import { ringTestSetup } from './support/ring.js';

const { dir: tempDir, newRing, track, untrack, file } = ringTestSetup('iolab-ring-');
const [major, minor] = release().split('.').map(Number);
const atLeast = (a: number, b: number) => major > a || (major === a && minor >= b);

describe('Ring setup', () => {
  it('reports the setup the kernel accepted', () => {
    const ring = newRing({ entries: 8 });
    const f = ring.features;
    expect(f.sqEntries).toBe(8);
    expect(f.cqEntries).toBeGreaterThanOrEqual(16);
    // The first flag set the kernel takes: COOP_TASKRUN from 5.19 (+SINGLE_ISSUER from 6.0),
    // TASKRUN_FLAG with it, SUBMIT_ALL from 5.18; never DEFER_TASKRUN, whose wake-ups come late
    // to a ring polled by the event loop (test/ring-latency.test.ts).
    expect(f.deferTaskrun).toBe(false);
    expect(f.singleIssuer).toBe(atLeast(6, 0));
    expect(f.coopTaskrun).toBe(atLeast(5, 19));
    expect(f.taskrunFlag).toBe(atLeast(5, 19));
    expect(f.submitAll).toBe(atLeast(5, 18));
    expect(f.sqpoll).toBe(false);
    expect(native.liveObjects().rings).toBeGreaterThanOrEqual(1);
  });

  it('rejects bad options', () => {
    expect(() => new Ring({ entries: 0 })).toThrow(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }));
    expect(() => new Ring({ entries: 1.5 })).toThrow(RangeError);
    expect(() => new Ring({ entries: '8' as unknown as number })).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
    expect(() => new Ring({ entries: 16, cqEntries: 8 })).toThrow(RangeError);
  });

  it('can ask for an SQ polling thread (any user from 5.11, root before)', async () => {
    if (!atLeast(5, 11) && process.getuid?.() !== 0) {
      // the kernel refuses it to others (EPERM), and the Ring says so
      expect(() => newRing({ entries: 8, sqpoll: true })).toThrow(expect.objectContaining({ errno: -1, syscall: 'io_uring_setup' }));
      return;
    }
    const ring = newRing({ entries: 8, sqpoll: true });
    expect(ring.features.sqpoll).toBe(true);
    const path = file('sqpoll.txt', 'sqpoll data');
    const fd = track(fs.openSync(path, 'r'));
    const buf = Buffer.alloc(6);
    expect(await ring.read(fd, buf, 0)).toBe(6);
    expect(buf.toString()).toBe('sqpoll');
  });
});

describe('Ring ops', () => {
  it('nop', async () => {
    expect(await newRing().nop()).toBeUndefined();
  });

  it('read/write at positions and at the file position', async () => {
    const ring = newRing();
    const path = file('rw.txt', 'hello world');
    const fd = track(fs.openSync(path, 'r+'));
    const buf = Buffer.alloc(5);
    expect(await ring.read(fd, buf, 6)).toBe(5);
    expect(buf.toString()).toBe('world');
    expect(await ring.read(fd, buf, 6n)).toBe(5);
    expect(await ring.write(fd, Buffer.from('HELLO'), 0)).toBe(5);
    expect(fs.readFileSync(path, 'utf8')).toBe('HELLO world');
    // no position: the file position moves, as read(2) does
    const a = Buffer.alloc(3);
    expect(await ring.read(fd, a)).toBe(3);
    expect(await ring.read(fd, a)).toBe(3);
    expect(a.toString()).toBe('LO ');
    expect(await ring.read(fd, Buffer.alloc(4), 100)).toBe(0);
  });

  it('readv/writev split across buffers, zero-length ones included, typed arrays and DataViews', async () => {
    const ring = newRing();
    const path = file('v.txt', '');
    const fd = track(fs.openSync(path, 'r+'));
    const parts = [Buffer.from('ab'), new Uint8Array(0), new Uint16Array([0x6463]), new DataView(new TextEncoder().encode('efg').buffer)];
    expect(await ring.writev(fd, parts, 0)).toBe(7);
    expect(fs.readFileSync(path, 'latin1')).toBe('abcdefg');
    const x = Buffer.alloc(3), y = new Uint8Array(0), z = new Uint8Array(10).fill(0xee);
    expect(await ring.readv(fd, [x, y, z], 0)).toBe(7);
    expect(x.toString()).toBe('abc');
    expect(Buffer.from(z.subarray(0, 4)).toString()).toBe('defg');
    // Short read: bytes past what the kernel wrote are left alone (the op's bounce memory is
    // reused between ops and not cleared, so nothing of an earlier op may leak into them).
    expect([...z.subarray(4)]).toEqual(Array(6).fill(0xee));
    const w = Buffer.alloc(4096, 0xee);
    expect(await ring.read(fd, w, 5)).toBe(2);
    expect(w.subarray(0, 2).toString()).toBe('fg');
    expect(w.subarray(2).every((b) => b === 0xee)).toBe(true);
    expect(await ring.readv(fd, [], 0)).toBe(0);
  });

  it('fsync and fdatasync', async () => {
    const ring = newRing();
    const fd = track(fs.openSync(file('sync.txt', 'x'), 'r+'));
    await expect(ring.fsync(fd)).resolves.toBeUndefined();
    await expect(ring.fsync(fd, { datasync: true })).resolves.toBeUndefined();
  });

  it('rejects with the Node-style error of the sync call', async () => {
    const ring = newRing();
    const fd = track(fs.openSync(file('ro.txt', 'x'), 'r'));
    const err = await ring.write(fd, Buffer.from('y'), 0).catch((e) => e);
    expect(err).toMatchObject({ code: 'EBADF', syscall: 'write', errno: -9 });
    expect(err.message).toBe('EBADF: bad file descriptor, write');
    await expect(ring.read(-1, Buffer.alloc(1))).rejects.toThrow(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }));
    await expect(ring.read(fd, 'x' as unknown as Buffer)).rejects.toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
    await expect(ring.readv(fd, Buffer.alloc(1) as unknown as Buffer[])).rejects.toThrow(TypeError);
    await expect(ring.read(fd, Buffer.alloc(1), -2)).rejects.toThrow(RangeError);
    await expect(ring.readv(fd, Array.from({ length: native.constants.IOV_MAX + 1 }, () => Buffer.alloc(1)))).rejects.toThrow(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }));
    // one argument module: the Ring's checks say what the sync calls say, word for word
    // (the Ring's methods reject with it: async methods never throw)
    const message = async (f: () => unknown) => { try { await f(); } catch (e) { return (e as Error).message; } return 'no error'; };
    const any = ring as unknown as Record<string, (...a: unknown[]) => unknown>;
    const sync = native as unknown as Record<string, (...a: unknown[]) => unknown>;
    expect(await message(() => any.readv('3', [Buffer.alloc(1)]))).toBe(await message(() => sync.readv('3', [Buffer.alloc(1)])));
    expect(await message(() => any.readv(-1, [Buffer.alloc(1)]))).toBe(await message(() => sync.readv(-1, [Buffer.alloc(1)])));
    expect(await message(() => any.readv(fd, [Buffer.alloc(1), 'x']))).toBe(await message(() => sync.readv(fd, [Buffer.alloc(1), 'x'])));
    expect(await message(() => any.readv(fd, ['x']))).toBe(await message(() => sync.readv(fd, ['x']))); // one buffer: the short path
    expect(await message(() => any.writev(fd, [null]))).toBe(await message(() => sync.writev(fd, [null])));
    expect(await message(() => any.readv(fd, [Buffer.alloc(1)], -2))).toBe((await message(() => sync.readv(fd, [Buffer.alloc(1)], -2))).replace('an integer >= 0', '-1 or an integer >= 0'));
    expect(await message(() => any.sendmsg(fd, [], { fds: [1.5] }))).toBe(await message(() => sync.sendmsg(fd, [], { fds: [1.5] })));
    expect(await message(() => any.recvmsg(fd, [], { maxFds: 300 }))).toBe(await message(() => sync.recvmsg(fd, [], { maxFds: 300 })));
    expect(await message(() => any.sendmsg(fd, [], { credentials: 1 }))).toBe(await message(() => sync.sendmsg(fd, [], { credentials: 1 })));
    expect(await message(() => any.readv(fd, [Buffer.alloc(1), 'x']))).toBe(`The "buffers[1]" argument must be an ArrayBufferView (Buffer, TypedArray or DataView). Received type string ('x')`);
    expect(native.liveObjects().heldBuffers).toBe(0);
    expect(native.liveObjects().heldBuffers).toBe(0);
  });

  it('pipes: a read waits for the writer', async () => {
    const ring = newRing();
    const [r, w] = track(native.socketpair('stream'));
    const buf = Buffer.alloc(16);
    const pending = ring.read(r, buf);
    await new Promise((res) => setTimeout(res, 20));
    expect(ring.inFlight).toBe(1);
    native.writev(w, [Buffer.from('late data')]);
    expect(await pending).toBe(9);
    expect(buf.toString('utf8', 0, 9)).toBe('late data');
  });

  it('sendmsg/recvmsg with fds that are read back, close-on-exec', async () => {
    const ring = newRing();
    const [a, b] = track(native.socketpair('stream'));
    const path = file('passed.txt', 'passed through SCM_RIGHTS');
    const f = track(fs.openSync(path, 'r'));
    expect(await ring.sendmsg(a, [Buffer.from('fd'), Buffer.from('s!')], { fds: [f, f] })).toBe(4);
    const buf = Buffer.alloc(8);
    const got = await ring.recvmsg(b, [buf], { maxFds: 2 });
    expect(got).toMatchObject({ bytesRead: 4, truncated: false, fdsTruncated: false, dataTruncated: false, eof: false });
    expect(buf.toString('utf8', 0, 4)).toBe('fds!');
    expect(got.fds).toHaveLength(2);
    for (const fd of got.fds) {
      expect(fs.readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8')).toMatch(/flags:\s+0?2\d{5}/); // O_CLOEXEC
      const back = Buffer.alloc(6);
      expect(fs.readSync(fd, back, 0, 6, 0)).toBe(6);
      expect(back.toString()).toBe('passed');
      fs.closeSync(fd);
    }
  });

  it('recvmsg: more fds than maxFds closes them all; datagram truncation; eof', async () => {
    const ring = newRing();
    const [a, b] = track(native.socketpair('stream'));
    const f = track(fs.openSync(file('many.txt', 'x'), 'r'));
    const before = openFdCount();
    sendmsg(a, [Buffer.from('x')], { fds: [f, f, f] });
    const got = await ring.recvmsg(b, [Buffer.alloc(4)], { maxFds: 2 });
    expect(got).toMatchObject({ bytesRead: 1, fds: [], truncated: true, fdsTruncated: true });
    expect(openFdCount()).toBe(before);
    const [c, d] = track(native.socketpair('dgram'));
    sendmsg(c, [Buffer.from('0123456789')]);
    expect(await ring.recvmsg(d, [Buffer.alloc(4)])).toMatchObject({ bytesRead: 4, dataTruncated: true, truncated: true, eof: false });
    native.close(a);
    expect(await ring.recvmsg(b, [Buffer.alloc(4)])).toMatchObject({ bytesRead: 0, eof: true });
  });

  it('socket/connect/accept/send/recv on AF_UNIX and TCP', async () => {
    const ring = newRing();
    // AF_UNIX listener made by the sync layer
    const path = join(tempDir().path, 's.sock');
    const listener = track(native.socket('unix', 'stream'));
    native.bind(listener, path);
    native.listen(listener, 8);
    const client = track(await ring.socket('unix', 'stream'));
    const accepted = ring.accept(listener);
    await ring.connect(client, path);
    const server = track(await accepted);
    expect(fs.readFileSync(`/proc/self/fdinfo/${server}`, 'utf8')).toMatch(/flags:\s+0?2\d{5}/);
    expect(await ring.send(client, Buffer.from('over unix'))).toBe(9);
    const buf = Buffer.alloc(32);
    expect(await ring.recv(server, buf)).toBe(9);
    expect(buf.toString('utf8', 0, 9)).toBe('over unix');
    await expect(ring.connect(track(await ring.socket('unix')), join(tempDir().path, 'missing.sock')))
      .rejects.toMatchObject({ code: 'ENOENT', syscall: 'connect', path: join(tempDir().path, 'missing.sock') });

    // TCP: a node server echoes what the ring sends
    const srv = net.createServer((s) => s.pipe(s));
    await new Promise<void>((res) => srv.listen(0, '127.0.0.1', res));
    const port = (srv.address() as net.AddressInfo).port;
    const tcp = track(await ring.socket('inet', 'stream'));
    await ring.connect(tcp, { host: 'localhost', port });
    expect(await ring.send(tcp, Buffer.from('ping'))).toBe(4);
    const echo = Buffer.alloc(4);
    expect(await ring.recv(tcp, echo)).toBe(4);
    expect(echo.toString()).toBe('ping');
    await ring.closeFd(untrack(tcp));
    await new Promise((res) => srv.close(res));
    // a name goes through dns.lookup first, as node:net's connect: its error is the lookup's
    await expect(ring.connect(track(await ring.socket('inet')), { host: 'no-such-host.invalid', port: 1 })).rejects.toMatchObject({ code: 'ENOTFOUND', syscall: 'getaddrinfo' });
    // looked up in the socket's family: on an IPv6 socket, the name's IPv6 address, or none
    // (where the hosts file gives localhost only 127.0.0.1), never an IPv4 one it cannot take
    const dual = net.createServer((s) => s.end('over IPv6'));
    await new Promise<void>((res) => dual.listen(0, '::', res));
    const sixPort = (dual.address() as net.AddressInfo).port;
    const six = (await import('node:dns/promises')).lookup('localhost', { family: 6 }).then((a) => a.address, (e: NodeJS.ErrnoException) => e.code);
    const tcp6 = track(await ring.socket('inet6', 'stream'));
    const outcome = await ring.connect(tcp6, { host: 'localhost', port: sixPort }).then(() => 'connected', (e: NodeJS.ErrnoException) => e.code);
    expect(outcome).toBe((await six) === 'ENOTFOUND' ? 'ENOTFOUND' : 'connected');
    await ring.closeFd(untrack(tcp6));
    await new Promise((res) => dual.close(res));
    const unix = track(await ring.socket('unix'));
    // Unix addresses get the sync connect's checks: UNIX_PATH_MAX bytes for a path, UNIX_ABSTRACT_MAX for an abstract name.
    const long = join(tempDir().path, 'x'.repeat(120));
    await expect(ring.connect(unix, long)).rejects.toThrow(expect.objectContaining({ code: 'ENAMETOOLONG', syscall: 'connect', path: long }));
    await expect(ring.connect(unix, '')).rejects.toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }));
    await expect(ring.connect(unix, '\0' + 'a'.repeat(native.constants.UNIX_ABSTRACT_MAX))).rejects.toThrow(expect.objectContaining({ code: 'ENAMETOOLONG' }));
  });

  it('an op\'s options: a signal that is null is refused as net refuses it', async () => {
    const ring = newRing();
    await expect(ring.nop({ signal: null as never })).rejects.toThrow(expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' }));
    await ring.nop();
  });

  it('closeFd closes the fd', async () => {
    const ring = newRing();
    const fd = fs.openSync(file('c.txt', 'x'), 'r');
    await ring.closeFd(fd);
    expect(() => fs.fstatSync(fd)).toThrow(expect.objectContaining({ code: 'EBADF' }));
    await expect(ring.closeFd(fd)).rejects.toMatchObject({ code: 'EBADF', syscall: 'close' });
  });
});

describe('batching and queues', () => {
  it('ops queued in one turn go to the kernel in one submit', async () => {
    const ring = newRing({ entries: 64 });
    await ring.nop();
    const before = ring.stats;
    const ops = Array.from({ length: 50 }, () => ring.nop());
    await Promise.all(ops);
    const after = ring.stats;
    expect(after.submitCalls - before.submitCalls).toBe(1);
    expect(after.sqesSubmitted - before.sqesSubmitted).toBe(50);
    expect(after.cqesReaped - before.cqesReaped).toBe(50);
  });

  it('ring.submit() sends right away', async () => {
    const ring = newRing();
    const p = ring.nop();
    const before = ring.stats.submitCalls;
    ring.submit();
    expect(ring.stats.submitCalls).toBe(before + 1);
    await p;
  });

  it('more ops than SQ entries wait in the backlog; none dropped, order kept', async () => {
    const ring = newRing({ entries: 4 });
    const [r, w] = track(native.socketpair('stream'));
    const writes = Array.from({ length: 100 }, (_, i) => ring.write(w, Buffer.from([i])));
    expect(await Promise.all(writes)).toEqual(Array(100).fill(1));
    const buf = Buffer.alloc(100);
    let got = 0;
    while (got < 100) got += native.readv(r, [buf.subarray(got)]);
    expect([...buf]).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect(ring.stats.overflowQueued).toBeGreaterThanOrEqual(96);
  });

  it('a CQ smaller than the burst overflows and every completion still arrives', async () => {
    const ring = newRing({ entries: 4, cqEntries: 4 });
    const path = file('burst.txt', 'abcdefgh'.repeat(512));
    const fd = track(fs.openSync(path, 'r'));
    const bufs = Array.from({ length: 1000 }, () => Buffer.alloc(1));
    const results = await Promise.all(bufs.map((b, i) => ring.read(fd, b, i)));
    expect(results).toEqual(Array(1000).fill(1));
    expect(bufs.map((b) => b.toString()).join('')).toBe('abcdefgh'.repeat(125));
    expect(ring.stats.cqesReaped).toBe(1000);
  });

  it('10,000 ops leak no fd and no live object', async () => {
    const ring = newRing({ entries: 128 });
    const [a, b] = track(native.socketpair('stream'));
    const f = track(fs.openSync(file('leak.txt', 'leak check'), 'r'));
    const before = openFdCount();
    for (let round = 0; round < 50; round++) {
      const ops: Promise<unknown>[] = [];
      for (let i = 0; i < 40; i++) {
        ops.push(ring.read(f, Buffer.alloc(4), i % 8), ring.nop(), ring.readv(f, [Buffer.alloc(2), Buffer.alloc(2)], 0));
        ops.push(ring.sendmsg(a, [Buffer.from('m')], { fds: [f] }));
        ops.push(ring.recvmsg(b, [Buffer.alloc(1)], { maxFds: 1 }).then((m) => m.fds.forEach((fd) => fs.closeSync(fd))));
      }
      await Promise.all(ops);
    }
    expect(ring.stats.cqesReaped).toBeGreaterThanOrEqual(10_000);
    expect(openFdCount()).toBe(before);
    expect(native.liveObjects()).toMatchObject({ ringOps: 0, heldBuffers: 0 });
  });
});

describe('buffers in flight', () => {
  it('a buffer detached (transferred) in flight is never written; the op still resolves', async () => {
    const ring = newRing();
    const [a, b] = track(native.socketpair('stream'));
    let buf: Uint8Array | null = new Uint8Array(64);
    const pending = ring.recv(b, buf);
    const moved = structuredClone(buf.buffer, { transfer: [buf.buffer] }) as ArrayBuffer;
    expect(buf.byteLength).toBe(0); // detached
    buf = null;
    await collectGarbage();
    native.writev(a, [Buffer.alloc(64, 7)]);
    expect(await pending).toBe(64);
    expect(new Uint8Array(moved).every((x) => x === 0)).toBe(true);
  });

  it('a resizable buffer shrunk in flight gets only what still fits', async () => {
    const ring = newRing();
    const [a, b] = track(native.socketpair('stream'));
    const ab = new (ArrayBuffer as unknown as new (n: number, o: { maxByteLength: number }) => ArrayBuffer & { resize(n: number): void })(32, { maxByteLength: 64 });
    const view = new Uint8Array(ab);
    const pending = ring.recv(b, view);
    ab.resize(4);
    native.writev(a, [Buffer.alloc(32, 9)]);
    expect(await pending).toBe(32);
    expect([...view]).toEqual([9, 9, 9, 9]);
    ab.resize(8);
    expect([...new Uint8Array(ab)]).toEqual([9, 9, 9, 9, 0, 0, 0, 0]);
  });

  it('buffers dropped right after submit (and GC forced) are still filled safely', async () => {
    const ring = newRing();
    const fd = track(fs.openSync(file('gc.txt', 'z'.repeat(4096)), 'r'));
    const ops = Array.from({ length: 64 }, (_, i) => ring.read(fd, new Uint8Array(4096), i));
    ring.submit();
    await collectGarbage();
    const n = await Promise.all(ops);
    expect(n[0]).toBe(4096);
    expect(native.liveObjects().heldBuffers).toBe(0);
  });

  it('a native method kept after its ring object was collected throws RingClosedError (never touches freed memory)', async () => {
    // the addon's ring object (private behind class Ring) carries its methods as own functions
    type NativeRing = { nop(): Promise<void>; read(fd: number, b: Buffer): Promise<number> };
    let ring: NativeRing | undefined = new native.Ring({ entries: 4 }) as NativeRing;
    const { nop, read } = ring;
    await nop.call(ring);
    ring = undefined;
    await collectGarbage();
    expect(native.liveObjects().rings).toBe(0); // the Ring is gone
    expect(() => nop()).toThrow(RingClosedError);
    expect(() => read(0, Buffer.alloc(1))).toThrow(RingClosedError);
  });

  it('a Ring dropped with an op in flight stays alive until the op completes', async () => {
    const [a, b] = track(native.socketpair('stream'));
    let ring: InstanceType<typeof Ring> | null = new Ring();
    const buf = Buffer.alloc(4);
    const pending = ring.recv(b, buf);
    ring = null;
    await collectGarbage();
    expect(native.liveObjects().rings).toBeGreaterThanOrEqual(1);
    native.writev(a, [Buffer.from('live')]);
    expect(await pending).toBe(4);
    expect(buf.toString()).toBe('live');
    await collectGarbage();
    await new Promise((res) => setTimeout(res, 20));
    await collectGarbage();
  });
});
