// AF_UNIX sockets on real sockets: each type, path and abstract addresses, fd passing with
// close-on-exec, truncation rules (payload and fds), credentials, and no fd leaks.
import { describe, expect, it } from 'vitest';
import { closeSync, openSync, readFileSync, readSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { native, type SocketType } from '../src/native.js';
import { recvmsg, sendmsg } from '../src/syscalls.js';
import { checkLeaksAfterAll, openFdCount } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';

const tmp = shortTempDir('iolab-uds-');
const dataFile = join(tmp.path, 'data.txt');
let unique = 0;
const abstractName = () => `\0iolab-test-${process.pid}-${unique++}`;
const sockPath = () => join(tmp.path, `s${unique++}.sock`);

checkLeaksAfterAll(tmp, () => {
  writeFileSync(dataFile, 'passed through SCM_RIGHTS');
});

/** Runs fn with fds that are closed afterwards whatever happens. */
function using<T>(fds: number[], fn: () => T): T {
  try {
    return fn();
  } finally {
    for (const fd of fds) native.close(fd);
  }
}

function isCloexec(fd: number): boolean {
  const flags = /flags:\s+([0-7]+)/.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'))![1];
  return (parseInt(flags, 8) & 0o2000000) !== 0;
}

function readAll(fd: number): string {
  const buf = Buffer.alloc(100);
  const n = readSync(fd, buf, 0, 100, 0);
  return buf.subarray(0, n).toString();
}

const me = () => ({ pid: process.pid, uid: process.getuid!(), gid: process.getgid!() });

describe('socket and socketpair', () => {
  it.each(['stream', 'dgram', 'seqpacket'] as SocketType[])('socketpair(%s) carries data both ways, close-on-exec', (type) => {
    const [a, b] = native.socketpair(type);
    using([a, b], () => {
      expect(isCloexec(a) && isCloexec(b)).toBe(true);
      expect(sendmsg(a, [Buffer.from('ping '), Buffer.from('pong')])).toBe(9);
      const buf = Buffer.alloc(32);
      const r = recvmsg(b, [buf]);
      expect(r).toEqual({ bytesRead: 9, fds: [], truncated: false, dataTruncated: false, fdsTruncated: false, eof: false });
      expect(buf.subarray(0, 9).toString()).toBe('ping pong');
      expect(sendmsg(b, [Buffer.from('back')])).toBe(4);
      expect(recvmsg(a, [buf]).bytesRead).toBe(4);
    });
  });

  it('socket() makes close-on-exec sockets, optionally non-blocking', () => {
    const fd = native.socket('unix', 'dgram', { nonBlocking: true });
    using([fd], () => {
      expect(isCloexec(fd)).toBe(true);
      expect(() => recvmsg(fd, [Buffer.alloc(1)])).toThrow(expect.objectContaining({ code: 'EAGAIN', syscall: 'recvmsg' }));
    });
  });

  it('rejects unknown types and bad options', () => {
    const any = native as unknown as Record<string, (...args: unknown[]) => unknown>;
    expect(() => any.socket('unix', 'raw')).toThrow(expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_VALUE' }));
    expect(() => any.socket('stream')).toThrow(expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_VALUE' }));
    expect(() => any.socketpair(1)).toThrow(TypeError);
    expect(() => any.socket('unix', 'stream', { nonBlocking: 'yes' })).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
  });

  it('close() of a closed fd throws EBADF', () => {
    const fd = native.socket('unix', 'stream');
    native.close(fd);
    expect(() => native.close(fd)).toThrow(expect.objectContaining({ code: 'EBADF', errno: -9, syscall: 'close' }));
  });
});

describe('bind, listen, accept, connect', () => {
  it('binds a path (a socket file appears), accepts a connection, SO_PEERCRED both ways; getsockname/getpeername give the path', () => {
    const path = sockPath();
    const server = native.socket('unix', 'stream');
    const client = native.socket('unix', 'stream');
    using([server, client], () => {
      native.bind(server, path);
      expect(statSync(path).isSocket()).toBe(true);
      native.listen(server);
      native.connect(client, path);
      const conn = native.accept(server);
      using([conn], () => {
        expect(isCloexec(conn)).toBe(true);
        expect([native.getsockname(server), native.getpeername(client), native.getsockname(conn)]).toEqual([path, path, path]);
        expect([native.getsockname(client), native.getpeername(conn)]).toEqual(['', '']); // unnamed
        expect(native.peerCredentials(conn)).toEqual(me());
        expect(native.peerCredentials(client)).toEqual(me());
        sendmsg(client, [Buffer.from('over a path')]);
        const buf = Buffer.alloc(64);
        expect(recvmsg(conn, [buf]).bytesRead).toBe(11);
      });
    });
  });

  it('binds and connects an abstract name (no file); getsockname gives it with its leading NUL', () => {
    const name = abstractName();
    const server = native.socket('unix', 'seqpacket');
    const client = native.socket('unix', 'seqpacket');
    using([server, client], () => {
      native.bind(server, name);
      native.listen(server, 4);
      native.connect(client, name);
      const conn = native.accept(server);
      using([conn], () => {
        expect([native.getsockname(server), native.getpeername(client)]).toEqual([name, name]);
        expect(native.peerCredentials(conn)).toEqual(me());
        sendmsg(conn, [Buffer.from('abstract')]);
        const buf = Buffer.alloc(16);
        expect(recvmsg(client, [buf]).bytesRead).toBe(8);
      });
    });
  });

  it('takes a UNIX_PATH_MAX-byte path and rejects one more byte with ENAMETOOLONG (path set) before the syscall', () => {
    const { UNIX_PATH_MAX, UNIX_ABSTRACT_MAX } = native.constants;
    const base = join(tmp.path, 'p');
    const fits = base + 'x'.repeat(UNIX_PATH_MAX - base.length);
    const long = fits + 'y';
    expect(Buffer.byteLength(fits)).toBe(UNIX_PATH_MAX);
    const fd = native.socket('unix', 'stream');
    using([fd], () => {
      for (const syscall of ['bind', 'connect'] as const) {
        const err = (() => { try { native[syscall](fd, long); } catch (e) { return e; } })();
        expect(err).toMatchObject({ code: 'ENAMETOOLONG', errno: -36, syscall, path: long });
      }
      native.bind(fd, fits);
      expect(statSync(fits).isSocket()).toBe(true);
    });
    // an abstract name may use all 108 bytes of sun_path, its leading '\0' included
    const fd2 = native.socket('unix', 'dgram');
    using([fd2], () => {
      const name = '\0' + `iolab-${process.pid}-`.padEnd(UNIX_ABSTRACT_MAX - 1, 'z');
      expect(() => native.bind(fd2, name + 'z')).toThrow(expect.objectContaining({ code: 'ENAMETOOLONG', path: name + 'z' }));
      native.bind(fd2, name);
    });
  });

  it('bind on an existing regular file: EADDRINUSE and the file is untouched', () => {
    const file = join(tmp.path, 'regular.txt');
    writeFileSync(file, 'keep me');
    const fd = native.socket('unix', 'stream');
    using([fd], () => {
      expect(() => native.bind(fd, file)).toThrow(expect.objectContaining({ code: 'EADDRINUSE', errno: -98, syscall: 'bind', path: file }));
    });
    expect(readFileSync(file, 'utf8')).toBe('keep me');
    expect(statSync(file).isFile()).toBe(true);
  });

  it('connect with no listener: ENOENT (no file), ECONNREFUSED (stale socket, abstract)', () => {
    const missing = join(tmp.path, 'nobody.sock');
    const stale = sockPath();
    const s = native.socket('unix', 'stream');
    const c = native.socket('unix', 'stream');
    using([s, c], () => {
      expect(() => native.connect(c, missing)).toThrow(expect.objectContaining({ code: 'ENOENT', errno: -2, syscall: 'connect', path: missing }));
      expect(() => native.connect(c, missing)).toThrow(`ENOENT: no such file or directory, connect '${missing}'`);
      native.bind(s, stale); // bound, never listening
      expect(() => native.connect(c, stale)).toThrow(expect.objectContaining({ code: 'ECONNREFUSED', syscall: 'connect', path: stale }));
      const name = abstractName();
      const err = (() => { try { native.connect(c, name); } catch (e) { return e as Error; } })();
      expect(err).toMatchObject({ code: 'ECONNREFUSED', path: name });
      expect(err!.message).toContain(`'@${name.slice(1)}'`);
    });
  });

  it('rejects empty addresses and paths with null bytes', () => {
    const fd = native.socket('unix', 'stream');
    using([fd], () => {
      expect(() => native.bind(fd, '')).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }));
      expect(() => native.bind(fd, '/tmp/a\0b')).toThrow(TypeError);
      expect(() => (native.bind as (...a: unknown[]) => void)(fd, 5)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
    });
  });
});

describe('sendmsg/recvmsg with fds', () => {
  it('passes fds that arrive close-on-exec and read the same file', () => {
    const [a, b] = native.socketpair('stream');
    const f1 = openSync(dataFile, 'r');
    const f2 = openSync(dataFile, 'r');
    using([a, b], () => {
      expect(sendmsg(a, [Buffer.from('fd')], { fds: [f1, f2] })).toBe(2);
      closeSync(f1);
      closeSync(f2);
      const r = recvmsg(b, [Buffer.alloc(8)], { maxFds: 2 });
      expect(r).toMatchObject({ bytesRead: 2, truncated: false, fdsTruncated: false });
      expect(r.fds).toHaveLength(2);
      using(r.fds, () => {
        for (const fd of r.fds) {
          expect(isCloexec(fd)).toBe(true);
          expect(readAll(fd)).toBe('passed through SCM_RIGHTS');
        }
      });
    });
  });

  it('more fds than maxFds: every received fd is closed and fdsTruncated is set', () => {
    const [a, b] = native.socketpair('seqpacket');
    const f = openSync(dataFile, 'r');
    using([a, b], () => {
      const before = openFdCount();
      sendmsg(a, [Buffer.from('x')], { fds: [f, f, f] });
      const r = recvmsg(b, [Buffer.alloc(4)], { maxFds: 2 });
      expect(r).toEqual({ bytesRead: 1, fds: [], truncated: true, dataTruncated: false, fdsTruncated: true, eof: false });
      expect(openFdCount()).toBe(before);
      // maxFds defaults to 0: any fd is too many
      sendmsg(a, [Buffer.from('y')], { fds: [f] });
      expect(recvmsg(b, [Buffer.alloc(4)])).toMatchObject({ bytesRead: 1, fds: [], fdsTruncated: true, truncated: true });
      expect(openFdCount()).toBe(before);
    });
    closeSync(f);
  });

  it('control data cut by the kernel (MSG_CTRUNC): fdsTruncated, nothing leaks', () => {
    const [a, b] = native.socketpair('dgram');
    const f = openSync(dataFile, 'r');
    using([a, b], () => {
      const before = openFdCount();
      // the control buffer has room for controlFds fds plus one SCM_CREDENTIALS: 20 fds do not fit
      for (const controlFds of [0, 2, 5]) {
        sendmsg(a, [Buffer.from('cut')], { fds: Array<number>(20).fill(f) });
        const r = recvmsg(b, [Buffer.alloc(4)], { maxFds: 20, controlFds });
        expect(r).toMatchObject({ bytesRead: 3, fds: [], fdsTruncated: true, truncated: true, dataTruncated: false });
        expect(openFdCount()).toBe(before);
      }
    });
    closeSync(f);
  });

  it('sends up to SCM_MAX_FD fds; more, or bad fds, are argument errors', () => {
    const { SCM_MAX_FD } = native.constants;
    const [a, b] = native.socketpair('stream');
    const f = openSync(dataFile, 'r');
    using([a, b], () => {
      const many = Array<number>(SCM_MAX_FD).fill(f);
      sendmsg(a, [Buffer.from('m')], { fds: many });
      const r = recvmsg(b, [Buffer.alloc(1)], { maxFds: SCM_MAX_FD });
      expect(r.fds).toHaveLength(SCM_MAX_FD);
      for (const fd of r.fds) native.close(fd);
      expect(() => sendmsg(a, [Buffer.from('m')], { fds: [...many, f] })).toThrow(expect.objectContaining({ name: 'RangeError', code: 'ERR_OUT_OF_RANGE' }));
      expect(() => sendmsg(a, [Buffer.from('m')], { fds: [-1] })).toThrow(expect.objectContaining({ name: 'RangeError' }));
      expect(() => sendmsg(a, [Buffer.from('m')], { fds: ['3' as unknown as number] })).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
      expect(() => recvmsg(b, [Buffer.alloc(1)], { maxFds: SCM_MAX_FD + 1 })).toThrow(RangeError);
      expect(() => sendmsg(a, [Buffer.from('m')], { fds: [999999] })).toThrow(expect.objectContaining({ code: 'EBADF', syscall: 'sendmsg' }));
      // fds on a stream socket need a payload byte, else the kernel would drop them silently
      expect(() => sendmsg(a, [], { fds: [f] })).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }));
    });
    closeSync(f);
  });

  it('no fd growth over 10,000 send/recv cycles with fds (some over maxFds)', () => {
    const before = openFdCount();
    const [a, b] = native.socketpair('seqpacket');
    const f = openSync(dataFile, 'r');
    const out = Buffer.from('c');
    const inBuf = Buffer.alloc(4);
    using([a, b], () => {
      for (let i = 0; i < 10_000; i++) {
        const count = 1 + (i % 3);
        sendmsg(a, [out], { fds: Array<number>(count).fill(f) });
        const r = recvmsg(b, [inBuf], { maxFds: 2 });
        if (count > 2) {
          if (!r.fdsTruncated || r.fds.length !== 0) throw new Error(`cycle ${i}: expected fdsTruncated`);
        } else if (r.fds.length !== count) {
          throw new Error(`cycle ${i}: got ${r.fds.length} fds`);
        }
        for (const fd of r.fds) native.close(fd);
      }
    });
    closeSync(f);
    expect(openFdCount()).toBe(before);
  });
});

describe('datagrams, truncation, credentials, eof, waitFd', () => {
  it('sends to an address with `to`; `from` names a bound sender (path or abstract)', () => {
    const rpath = sockPath();
    const spath = sockPath();
    const receiver = native.socket('unix', 'dgram');
    const sender = native.socket('unix', 'dgram');
    const anonymous = native.socket('unix', 'dgram');
    const abstractSender = native.socket('unix', 'dgram');
    using([receiver, sender, anonymous, abstractSender], () => {
      native.bind(receiver, rpath);
      native.bind(sender, spath);
      const name = abstractName();
      native.bind(abstractSender, name);
      const buf = Buffer.alloc(16);
      expect(sendmsg(sender, [Buffer.from('hi')], { to: rpath })).toBe(2);
      expect(recvmsg(receiver, [buf])).toMatchObject({ bytesRead: 2, from: spath, eof: false });
      sendmsg(anonymous, [Buffer.from('anon')], { to: rpath });
      expect(recvmsg(receiver, [buf]).from).toBeUndefined();
      sendmsg(abstractSender, [Buffer.from('abs')], { to: rpath });
      expect(recvmsg(receiver, [buf]).from).toBe(name);
      const nobody = join(tmp.path, 'nobody.sock');
      expect(() => sendmsg(sender, [Buffer.from('x')], { to: nobody })).toThrow(expect.objectContaining({ code: 'ENOENT', syscall: 'sendmsg', path: nobody }));
    });
  });

  it('a datagram longer than the buffers: the bytes that fit, dataTruncated', () => {
    const [a, b] = native.socketpair('dgram');
    using([a, b], () => {
      sendmsg(a, [Buffer.alloc(100, 7)]);
      const buf = Buffer.alloc(10);
      expect(recvmsg(b, [buf])).toEqual({ bytesRead: 10, fds: [], truncated: true, dataTruncated: true, fdsTruncated: false, eof: false });
      expect(buf).toEqual(Buffer.alloc(10, 7));
      sendmsg(a, []); // an empty datagram is not eof
      expect(recvmsg(b, [buf])).toMatchObject({ bytesRead: 0, eof: false, truncated: false });
    });
  });

  it('SCM_CREDENTIALS: attached on request, reported with SO_PASSCRED', () => {
    const [a, b] = native.socketpair('dgram');
    using([a, b], () => {
      sendmsg(a, [Buffer.from('x')], { credentials: true });
      expect(recvmsg(b, [Buffer.alloc(4)]).credentials).toBeUndefined(); // SO_PASSCRED off
      native.setPassCredentials(b, true);
      sendmsg(a, [Buffer.from('x')], { credentials: true });
      expect(recvmsg(b, [Buffer.alloc(4)]).credentials).toEqual(me());
      const f = openSync(dataFile, 'r');
      sendmsg(a, [Buffer.from('x')], { credentials: true, fds: [f] });
      closeSync(f);
      const r = recvmsg(b, [Buffer.alloc(4)], { maxFds: 1 });
      expect(r.credentials).toEqual(me());
      expect(r.fds).toHaveLength(1);
      native.close(r.fds[0]);
      native.setPassCredentials(b, false);
      expect(() => native.setPassCredentials(b, 1 as unknown as boolean)).toThrow(TypeError);
    });
  });

  it('peer closed: eof on stream and seqpacket; EPIPE (no SIGPIPE) on send', () => {
    for (const type of ['stream', 'seqpacket'] as SocketType[]) {
      const [a, b] = native.socketpair(type);
      native.close(a);
      using([b], () => {
        expect(recvmsg(b, [Buffer.alloc(4)])).toMatchObject({ bytesRead: 0, eof: true, fds: [] });
        expect(() => sendmsg(b, [Buffer.from('x')])).toThrow(expect.objectContaining({ code: 'EPIPE', syscall: 'sendmsg' }));
      });
    }
  });

  it('a zero-length seqpacket message is not eof; the peer closing is', () => {
    const [a, b] = native.socketpair('seqpacket');
    sendmsg(a, []);
    sendmsg(a, [Buffer.from('after')]);
    using([b], () => {
      expect(recvmsg(b, [Buffer.alloc(8)])).toMatchObject({ bytesRead: 0, eof: false });
      expect(recvmsg(b, [Buffer.alloc(8)])).toMatchObject({ bytesRead: 5, eof: false });
      native.close(a);
      expect(recvmsg(b, [Buffer.alloc(8)])).toMatchObject({ bytesRead: 0, eof: true });
    });
  });

  it('waitFd: times out, sees data, counts hang-up as ready, EBADF on a closed fd', () => {
    const [a, b] = native.socketpair('stream');
    using([b], () => {
      expect(native.waitFd(b, 'read', 0)).toBe(false);
      expect(native.waitFd(b, 'read', 20)).toBe(false);
      expect(native.waitFd(b, 'write', -1)).toBe(true);
      sendmsg(a, [Buffer.from('x')]);
      expect(native.waitFd(b, 'read', 1000)).toBe(true);
      recvmsg(b, [Buffer.alloc(1)]);
      native.close(a);
      expect(native.waitFd(b, 'read', 1000)).toBe(true);
      expect(() => native.waitFd(a, 'read', 0)).toThrow(expect.objectContaining({ code: 'EBADF', syscall: 'poll' }));
      expect(() => native.waitFd(b, 'both' as 'read', 0)).toThrow(TypeError);
    });
  });
});
