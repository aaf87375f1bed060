// TCP and UDP over IPv4 and IPv6 through the public sync API: socket/bind/listen/accept/connect,
// getsockname/getpeername in node:net's address() shape, setsockopt/getsockopt by name, errors
// with `address` and `port` (not `path`) as node:net's, and interop with Python's socket module
// (a peer iolab did not write).
import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { lookup } from 'node:dns/promises';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { execFileSync } from 'node:child_process';
import {
  accept, bind, close, connect, constants, getpeername, getsockname, getsockopt, listen, recvmsg, Ring, sendmsg, setsockopt,
  socket, socketpair, waitFd, type AddressInfo, type SocketFamily,
} from '../src/index.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';

const tmp = shortTempDir('iolab-inet-');
checkLeaksAfterAll(tmp);

const families = [
  { family: 'inet' as SocketFamily, loopback: '127.0.0.1', any: '0.0.0.0', name: 'IPv4' },
  { family: 'inet6' as SocketFamily, loopback: '::1', any: '::', name: 'IPv6' },
];

/** Runs fn with fds that are closed afterwards whatever happens. */
function using<T>(fds: number[], fn: () => T): T {
  try {
    return fn();
  } finally {
    for (const fd of fds) close(fd);
  }
}

function isCloexec(fd: number): boolean {
  const flags = /flags:\s+([0-7]+)/.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'))![1];
  return (parseInt(flags, 8) & 0o2000000) !== 0;
}

/** Receives one message of at most 64 KiB, waiting at most 5 s for it (never hangs a run). */
function receive(fd: number): { text: string; from?: string | AddressInfo } {
  expect(waitFd(fd, 'read', 5000)).toBe(true);
  const buf = Buffer.alloc(65536);
  const r = recvmsg(fd, [buf]);
  return { text: buf.toString('utf8', 0, r.bytesRead), from: r.from };
}

const inet = (a: string | AddressInfo): AddressInfo => {
  expect(typeof a).toBe('object');
  return a as AddressInfo;
};

describe.each(families)('TCP over $name', ({ family, loopback, any, name }) => {
  it('listens on port 0 and reads the port back, connects, accepts; both ends name each other', () => {
    const server = socket(family, 'stream');
    using([server], () => {
      expect(isCloexec(server)).toBe(true);
      setsockopt(server, 'SO_REUSEADDR', true);
      bind(server, { host: loopback, port: 0 });
      listen(server);
      const bound = inet(getsockname(server));
      expect(bound).toEqual({ address: loopback, family: name, port: expect.any(Number) });
      expect(bound.port).toBeGreaterThan(0);
      const client = socket(family, 'stream');
      using([client], () => {
        connect(client, { host: loopback, port: bound.port });
        const conn = accept(server);
        using([conn], () => {
          expect(isCloexec(conn)).toBe(true);
          expect(getpeername(conn)).toEqual(getsockname(client));
          expect(getpeername(client)).toEqual(bound);
          expect(sendmsg(client, [Buffer.from('over '), Buffer.from(name)])).toBe(5 + name.length);
          expect(receive(conn).text).toBe(`over ${name}`);
          sendmsg(conn, [Buffer.from('back')]);
          expect(receive(client).text).toBe('back');
        });
      });
    });
  });

  it('bind without a host takes the wildcard, connect without one the loopback (as node:net)', () => {
    const server = socket(family);
    const client = socket(family);
    using([server, client], () => {
      bind(server, {});
      listen(server, 4);
      const bound = inet(getsockname(server));
      expect(bound.address).toBe(any);
      connect(client, { port: bound.port });
      expect(inet(getpeername(client)).address).toBe(loopback);
      close(accept(server));
    });
  });

  it('a refused connect carries address and port, not path; the message names host:port', () => {
    // a port bound but not listening refuses connections, and no one else can take it meanwhile
    const holder = socket(family);
    const client = socket(family);
    using([holder, client], () => {
      bind(holder, { host: loopback });
      const { port } = inet(getsockname(holder));
      const shown = family === 'inet6' ? `[${loopback}]:${port}` : `${loopback}:${port}`;
      let caught: unknown;
      try {
        connect(client, { host: loopback, port });
      } catch (err) {
        caught = err;
      }
      expect(caught).toMatchObject({ code: 'ECONNREFUSED', errno: -111, syscall: 'connect', address: loopback, port });
      expect(caught).not.toHaveProperty('path');
      expect((caught as Error).message).toBe(`ECONNREFUSED: connection refused, connect '${shown}'`);
    });
  });

  it('a port taken: EADDRINUSE from bind with address and port; SO_REUSEPORT on both lets them share it', () => {
    const a = socket(family);
    const b = socket(family);
    const c = socket(family);
    const d = socket(family);
    using([a, b, c, d], () => {
      bind(a, { host: loopback });
      listen(a);
      const { port } = inet(getsockname(a));
      expect(() => bind(b, { host: loopback, port })).toThrow(expect.objectContaining({ code: 'EADDRINUSE', syscall: 'bind', address: loopback, port }));
      setsockopt(c, 'SO_REUSEPORT', true);
      setsockopt(d, 'SO_REUSEPORT', true);
      bind(c, { host: loopback });
      const shared = inet(getsockname(c)).port;
      bind(d, { host: loopback, port: shared });
      expect(inet(getsockname(d)).port).toBe(shared);
    });
  });

  it('a non-blocking listener: accept with nothing waiting is EAGAIN', () => {
    const server = socket(family, 'stream', { nonBlocking: true });
    using([server], () => {
      bind(server, { host: loopback });
      listen(server);
      expect(() => accept(server)).toThrow(expect.objectContaining({ code: 'EAGAIN', syscall: 'accept' }));
    });
  });
});

describe.each(families)('UDP over $name', ({ family, loopback, name }) => {
  it('sendmsg to { host, port }; recvmsg gives the sender as { address, family, port }', () => {
    const receiver = socket(family, 'dgram');
    const sender = socket(family, 'dgram');
    using([receiver, sender], () => {
      bind(receiver, { host: loopback });
      bind(sender, { host: loopback });
      const to = inet(getsockname(receiver));
      expect(sendmsg(sender, [Buffer.from('a datagram')], { to: { host: loopback, port: to.port } })).toBe(10);
      const got = receive(receiver);
      expect(got).toEqual({ text: 'a datagram', from: getsockname(sender) });
      expect(inet(got.from!).family).toBe(name);
      // the reply goes back to what `from` named; a connected UDP socket needs no `to`
      const from = inet(got.from!);
      sendmsg(receiver, [Buffer.from('reply')], { to: { host: from.address, port: from.port } });
      expect(receive(sender).text).toBe('reply');
      connect(sender, { host: loopback, port: to.port });
      sendmsg(sender, [Buffer.from('connected')]);
      expect(receive(receiver).text).toBe('connected');
    });
  });
});

describe('socket options by name', () => {
  it.each([
    ['inet', 'stream', 'SO_REUSEADDR'], ['inet', 'stream', 'SO_REUSEPORT'], ['inet', 'stream', 'SO_KEEPALIVE'],
    ['inet', 'dgram', 'SO_BROADCAST'], ['inet', 'stream', 'TCP_NODELAY'], ['inet6', 'stream', 'TCP_NODELAY'],
    ['inet6', 'stream', 'IPV6_V6ONLY'],
  ] as const)('%s %s: %s on, read back, off, read back', (family, type, option) => {
    const fd = socket(family, type);
    using([fd], () => {
      setsockopt(fd, option, true);
      expect(getsockopt(fd, option)).toBe(true);
      setsockopt(fd, option, false);
      expect(getsockopt(fd, option)).toBe(false);
    });
  });

  it.each(['SO_RCVBUF', 'SO_SNDBUF'] as const)('%s: the kernel keeps twice what was set (socket(7))', (option) => {
    const fd = socket('inet', 'stream');
    using([fd], () => {
      setsockopt(fd, option, 65536);
      expect(getsockopt(fd, option)).toBe(131072);
    });
  });

  it('refuses unknown names and wrong value types in Node\'s words; the kernel\'s refusal is an errno error', () => {
    const fd = socket('unix', 'stream');
    using([fd], () => {
      expect(() => setsockopt(fd, 'SO_PRIORITY' as 'SO_REUSEADDR', true)).toThrow(
        expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_VALUE', message: expect.stringMatching(/^The argument 'option' must be one of 'SO_REUSEADDR', .*'SO_LINGER'\. Received type string \('SO_PRIORITY'\)$/) }));
      expect(getsockopt(fd, 'SO_LINGER')).toBe(-1);
      setsockopt(fd, 'SO_LINGER', 0);
      expect(getsockopt(fd, 'SO_LINGER')).toBe(0);
      setsockopt(fd, 'SO_LINGER', 5);
      expect(getsockopt(fd, 'SO_LINGER')).toBe(5);
      expect(() => setsockopt(fd, 'SO_LINGER', -2)).toThrow(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }));
      expect(() => setsockopt(fd, 'SO_REUSEADDR', 1 as unknown as boolean)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
      expect(() => setsockopt(fd, 'SO_RCVBUF', -1)).toThrow(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }));
      expect(() => setsockopt(fd, 'TCP_NODELAY', true)).toThrow(expect.objectContaining({ code: 'EOPNOTSUPP', syscall: 'setsockopt' }));
      expect(() => getsockopt(fd, 'IPV6_V6ONLY')).toThrow(expect.objectContaining({ code: 'EOPNOTSUPP', syscall: 'getsockopt' }));
    });
  });
});

describe('addresses that do not fit', () => {
  it('a name for a host: one TypeError that says to look it up first; dns.lookup then connects', async () => {
    const server = socket('inet');
    const client = socket('inet');
    await (async () => {
      bind(server, { host: '127.0.0.1' });
      listen(server);
      const { port } = inet(getsockname(server));
      expect(() => connect(client, { host: 'localhost', port })).toThrow(expect.objectContaining({
        code: 'ERR_INVALID_ARG_VALUE',
        message: "The property 'address.host' must be a numeric IPv4 or IPv6 address (look a name up with dns.lookup first). Received type string ('localhost')",
      }));
      const { address } = await lookup('localhost', { family: 4 });
      connect(client, { host: address, port });
      close(accept(server));
    })().finally(() => { close(server); close(client); });
  });

  it.each([
    ['inet', { host: '::1' }, /must be an IPv4 address for an inet socket/],
    ['inet6', { host: '127.0.0.1' }, /must be an IPv6 address for an inet6 socket \(an IPv4 one as ::ffff:a\.b\.c\.d\)/],
    ['inet', '/tmp/some.sock', /The "address" argument must be an object \{ host, port \} for an inet socket\. Received type string/],
    ['unix', { host: '127.0.0.1' }, /The "address" argument must be of type string \(a socket path\) for a unix socket/],
    ['inet', { host: '127.1' }, /numeric IPv4 or IPv6 address/],
    ['inet6', { host: '::1%no-such-interface' }, /numeric IPv4 or IPv6 address/],
    ['inet', { host: '127.0.0.1', port: 65536 }, /"address.port" is out of range/],
  ] as const)('%s socket, bind to %j: TypeError or RangeError, nothing bound', (family, address, message) => {
    const fd = socket(family);
    using([fd], () => {
      expect(() => bind(fd, address)).toThrow(message);
      expect(getsockname(fd)).toEqual(family === 'unix' ? '' : { address: family === 'inet' ? '0.0.0.0' : '::', family: family === 'inet' ? 'IPv4' : 'IPv6', port: 0 });
    });
  });

  it('connect needs a port; an inet6 socket reaches an IPv4 peer written ::ffff:a.b.c.d', () => {
    const fd = socket('inet6');
    const server = socket('inet6');
    using([fd, server], () => {
      expect(() => connect(fd, { host: '::1' })).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE', message: expect.stringContaining('"address.port"') }));
      bind(server, { host: '::' });
      listen(server);
      connect(fd, { host: '::ffff:127.0.0.1', port: inet(getsockname(server)).port });
      expect(inet(getpeername(fd)).address).toBe('::ffff:127.0.0.1');
      close(accept(server));
    });
  });

  it('getsockname of an fd that is no socket: ENOTSOCK; an unknown family, or seqpacket over IP: refused', () => {
    const file = openSync(join(tmp.path, 'not-a-socket'), 'w');
    try {
      expect(() => getsockname(file)).toThrow(expect.objectContaining({ code: 'ENOTSOCK', syscall: 'getsockname' }));
      expect(() => bind(file, { port: 0 })).toThrow(expect.objectContaining({ code: 'ENOTSOCK', syscall: 'bind' }));
    } finally {
      closeSync(file);
    }
    expect(() => socket('ipx' as SocketFamily)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE', message: expect.stringContaining("'unix', 'inet', 'inet6'") }));
    expect(() => socket('inet', 'seqpacket')).toThrow(expect.objectContaining({ syscall: 'socket' }));
  });
});

// Python's socket module on the other end: it prints its port, then echoes one TCP connection
// and answers one UDP datagram, upper-cased, to the address it came from.
const pythonPeer = `
import socket, sys
family = socket.AF_INET6 if sys.argv[1] == 'inet6' else socket.AF_INET
host = sys.argv[2]
tcp = socket.socket(family, socket.SOCK_STREAM)
tcp.bind((host, 0)); tcp.listen(1)
udp = socket.socket(family, socket.SOCK_DGRAM)
udp.bind((host, 0))
print(tcp.getsockname()[1], udp.getsockname()[1], flush=True)
conn, peer = tcp.accept()
conn.sendall(('tcp peer ' + str(peer[1]) + ': ').encode() + conn.recv(100).upper())
conn.close()
data, sender = udp.recvfrom(100)
udp.sendto(('udp peer ' + str(sender[1]) + ': ').encode() + data.upper(), sender)
`;

describe.each(families)('interop over $name with Python\'s socket module', ({ family, loopback }) => {
  it('TCP and UDP: Python sees the port getsockname gave; iolab sees the address Python answers from', async () => {
    const python = spawn('python3', ['-c', pythonPeer, family, loopback], { stdio: ['ignore', 'pipe', 'inherit'] });
    const exited = once(python, 'exit');
    try {
      const [line] = (await once(createInterface(python.stdout), 'line')) as [string];
      const [tcpPort, udpPort] = line.split(' ').map(Number);
      const tcp = socket(family, 'stream');
      const udp = socket(family, 'dgram');
      using([tcp, udp], () => {
        connect(tcp, { host: loopback, port: tcpPort });
        const mine = inet(getsockname(tcp)).port;
        sendmsg(tcp, [Buffer.from('hello')]);
        expect(receive(tcp).text).toBe(`tcp peer ${mine}: HELLO`);
        bind(udp, { host: loopback });
        sendmsg(udp, [Buffer.from('datagram')], { to: { host: loopback, port: udpPort } });
        const got = receive(udp);
        expect(got).toEqual({ text: `udp peer ${inet(getsockname(udp)).port}: DATAGRAM`, from: { address: loopback, family: family === 'inet' ? 'IPv4' : 'IPv6', port: udpPort } });
      });
      expect((await exited)[0]).toBe(0);
    } finally {
      python.kill();
    }
  });
});

describe('constants for the flags recv and send take', () => {
  it('MSG_* and SOCK_* are the values Python\'s socket module has for them', () => {
    const names = Object.keys(constants).filter((k) => /^(MSG|SOCK)_/.test(k));
    expect(names.length).toBeGreaterThanOrEqual(18);
    const python = JSON.parse(execFileSync('python3', ['-c', 'import json, socket, sys; print(json.dumps({n: int(getattr(socket, n)) for n in sys.argv[1:]}))', ...names], { encoding: 'utf8' }));
    expect(Object.fromEntries(names.map((n) => [n, constants[n as keyof typeof constants]]))).toEqual(python);
  });

  it('ring.recv with MSG_PEEK leaves the bytes for the next read', async () => {
    const ring = new Ring({ entries: 8 });
    const [a, b] = socketpair('stream');
    try {
      sendmsg(a, [Buffer.from('peek')]);
      const buf = Buffer.alloc(8);
      expect(await ring.recv(b, buf, constants.MSG_PEEK | constants.MSG_DONTWAIT)).toBe(4);
      expect(receive(b).text).toBe('peek');
    } finally {
      close(a);
      close(b);
      await ring.close();
    }
  });
});
