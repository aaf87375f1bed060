// RingSocket, the node:stream Duplex over a Ring stream: node:http served over it with
// keep-alive (1,000 requests, every body checked), stream.pipeline through a Python echo peer,
// backpressure from a slow consumer (receiving pauses, the pool stays free, nothing is lost),
// the peer's reset, destroy() and the fd, the Ring closed under it, and TLS over it.
import { describe, expect, it } from 'vitest';
import { execFileSync, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { join } from 'node:path';
import { once } from 'node:events';
import { Duplex } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import tls from 'node:tls';
import { bind, getsockname, getsockopt, listen, setsockopt, socket, socketpair, writevSync, type AddressInfo } from '../src/index.js';
import { RingSocket as PublicRingSocket, type BufferRing, type Ring } from '../src/ring/index.js';
import { RingSocketDuplex as RingSocket } from '../src/ring/duplex.js';
import { ringTestSetup } from './support/ring.js';
import { waitFor } from './support/echo.js';

const { newRing, track, untrack, dir } = ringTestSetup('iolab-ring-duplex-');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Buffers of the pool JS holds (0 once every chunk was given back). */
function heldCount(pool: BufferRing): number {
  let n = 0;
  for (let i = 0; i < pool.count; i++) if (pool.held(i)) n++;
  return n;
}

/** Once every socket closed (its fd too), every buffer of the pool is back. */
async function expectAllClosed(sockets: RingSocket[], pool: BufferRing): Promise<void> {
  await waitFor(() => sockets.every((s) => s.closed), 10_000, 'every RingSocket closed');
  expect(heldCount(pool)).toBe(0);
}

/** A listening TCP socket on 127.0.0.1 (closed after the test) and its port. */
function listenLocal(): { fd: number; port: number } {
  const fd = track(socket('inet', 'stream'));
  bind(fd, { host: '127.0.0.1', port: 0 });
  listen(fd);
  return { fd, port: (getsockname(fd) as AddressInfo).port };
}

/** A RingSocket connected by the Ring to a listening socket on 127.0.0.1, with its Ring, pool
 * (8 buffers) and fd. */
async function connectedSocket() {
  const ring = newRing();
  const pool = ring.setupBufRing({ count: 8, size: 4096 });
  const listening = listenLocal();
  const fd = await ring.socket('inet', 'stream');
  await ring.connect(fd, { host: '127.0.0.1', port: listening.port });
  return { ring, pool, listening, fd, s: new RingSocket(ring, fd, { bufferRing: pool }) };
}

/** Accepts with the Ring until it closes, making a RingSocket of each connection. */
function acceptSockets(ring: Ring, listenFd: number, pool: BufferRing, onSocket: (s: RingSocket) => void): void {
  void (async () => {
    for (;;) {
      let fd: number;
      try {
        fd = await ring.accept(listenFd);
      } catch {
        return; // the Ring closed
      }
      onSocket(new RingSocket(ring, fd, { bufferRing: pool }));
    }
  })();
}

/** Serves each connection accepted with the Ring on `server` (node:http or node:https): the
 * sockets made so far. */
function serveOnRing(ring: Ring, listenFd: number, pool: BufferRing, server: http.Server): RingSocket[] {
  const sockets: RingSocket[] = [];
  acceptSockets(ring, listenFd, pool, (s) => {
    sockets.push(s);
    s.setNoDelay(true); // as net.Server does for http (its noDelay): else Nagle holds a body behind its headers
    server.emit('connection', s);
  });
  return sockets;
}

/** POSTs body through `client` (node:http or node:https); the response, its body, and whether
 * the client found the server's certificate good (TLS). */
async function post(client: typeof http | typeof https, options: https.RequestOptions, body: Buffer) {
  let authorized: boolean | undefined;
  const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
    const req = client.request({ host: '127.0.0.1', method: 'POST', headers: { 'content-length': body.length }, ...options }, (r) => {
      authorized = (r.socket as tls.TLSSocket).authorized;
      resolve(r);
    });
    req.on('error', reject);
    req.end(body);
  });
  const parts: Buffer[] = [];
  for await (const c of res) parts.push(c as Buffer);
  return { res, body: Buffer.concat(parts), authorized };
}

/** The body the server answers request `i` with: its size varies from 0 to past 4 pool buffers. */
function responseBody(i: number): Buffer {
  const size = (i * 7919) % 20_000;
  const out = Buffer.alloc(size);
  for (let k = 0; k < size; k++) out[k] = (i + k * 31) & 0xff;
  return out;
}

describe('RingSocket', () => {
  it('serves node:http with keep-alive: 1,000 requests, every body checked both ways', async () => {
    const ring = newRing();
    const pool = ring.setupBufRing({ count: 64, size: 4096 });
    const listening = listenLocal();
    let requests = 0;
    const server = http.createServer((req, res) => {
      const hash = createHash('sha256');
      req.on('data', (c: Buffer) => hash.update(c));
      req.on('end', () => {
        const i = Number(req.url!.slice(1));
        requests++;
        res.setHeader('x-request-sha256', hash.digest('hex'));
        res.end(responseBody(i));
      });
    });
    const sockets = serveOnRing(ring, listening.fd, pool, server);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
    try {
      const one = async (i: number) => {
        const body = randomBytes((i * 104_729) % 12_000); // up to 3 pool buffers
        const got = await post(http, { port: listening.port, path: `/${i}`, agent }, body);
        expect(got.res.statusCode).toBe(200);
        expect(got.res.headers['x-request-sha256']).toBe(createHash('sha256').update(body).digest('hex'));
        expect(got.body.equals(responseBody(i))).toBe(true);
      };
      for (let i = 0; i < 1000; i += 8) await Promise.all(Array.from({ length: Math.min(8, 1000 - i) }, (_, k) => one(i + k)));
      expect(requests).toBe(1000);
      expect(sockets.length).toBeGreaterThan(0);
      expect(sockets.length).toBeLessThanOrEqual(4); // the connections were kept alive
      expect(sockets[0].remoteAddress).toBe('127.0.0.1');
      expect(RingSocket).toBe(PublicRingSocket); // the export is the class, a node:stream Duplex
      expect(sockets[0]).toBeInstanceOf(Duplex);
      expect(sockets[0].localPort).toBe(listening.port);
      expect([sockets[0].localFamily, sockets[0].remoteFamily]).toEqual(['IPv4', 'IPv4']);
      expect(sockets.reduce((n, s) => n + s.bytesRead, 0)).toBeGreaterThan(1000 * 50);
    } finally {
      agent.destroy();
    }
    // The client closed: every server-side socket ends, closes its fd and gives its buffers back.
    await expectAllClosed(sockets, pool);
  });

  it('stream.pipeline: a file through the socket to a Python echo peer and back, byte-exact', async () => {
    const ring = newRing();
    const pool = ring.setupBufRing({ count: 16, size: 4096 });
    const peer = spawn('python3', ['-c', `
import socket, sys
l = socket.socket(); l.bind(('127.0.0.1', 0)); l.listen(1)
print(l.getsockname()[1], flush=True)
c, _ = l.accept()
while True:
    b = c.recv(65536)
    if not b: break
    c.sendall(b)
c.shutdown(socket.SHUT_WR)
c.close()
`], { stdio: ['ignore', 'pipe', 'inherit'] });
    const exited = once(peer, 'exit');
    const [line] = (await once(peer.stdout!, 'data')) as [Buffer];
    const fd = track(await ring.socket('inet', 'stream'));
    await ring.connect(fd, { host: '127.0.0.1', port: Number(String(line).trim()) });
    const input = join(dir().path, 'in');
    const output = join(dir().path, 'out');
    fs.writeFileSync(input, randomBytes(8 << 20));
    const s = new RingSocket(ring, untrack(fd), { bufferRing: pool, allowHalfOpen: true });
    await Promise.all([
      pipeline(fs.createReadStream(input), s), // ends with shutdown(SHUT_WR): Python reads EOF
      pipeline(s, fs.createWriteStream(output)),
    ]);
    expect(fs.readFileSync(output).equals(fs.readFileSync(input))).toBe(true);
    expect(s.bytesWritten).toBe(8 << 20);
    expect(s.bytesRead).toBe(8 << 20);
    const [code] = (await exited) as [number];
    expect(code).toBe(0);
    await waitFor(() => s.closed, 5000, 'closed');
    expect(() => fs.fstatSync(fd)).toThrow(/EBADF/); // destroy closed the fd
    expect(heldCount(pool)).toBe(0);
  });

  it('_writev: more chunks at once than one sendmsg takes (IOV_MAX) all arrive, in order', async () => {
    const ring = newRing();
    const pool = ring.setupBufRing({ count: 8, size: 4096 });
    const [mine, theirs] = socketpair('stream');
    const s = new RingSocket(ring, mine, { bufferRing: pool });
    const peer = new net.Socket({ fd: theirs, readable: true, writable: true });
    const parts: Buffer[] = [];
    peer.on('data', (c: Buffer) => parts.push(c));
    const chunks = Array.from({ length: 3000 }, (_, i) => Buffer.from(`${i},`));
    s.cork();
    for (const c of chunks) s.write(c);
    s.uncork(); // one _writev of 3000 chunks
    s.end();
    await once(peer, 'end');
    expect(Buffer.concat(parts).equals(Buffer.concat(chunks))).toBe(true);
    expect(s.bytesWritten).toBe(Buffer.concat(chunks).length);
    peer.destroy();
    s.destroy();
    await once(s, 'close');
  });

  it('RingStream.pause()/resume(): nothing comes while paused, also when it was starved (ENOBUFS) as it paused; every byte once resumed', async () => {
    const ring = newRing();
    const pool = ring.setupBufRing({ count: 2, size: 64 });
    const [mine, theirs] = track(socketpair('stream'));
    const held: number[] = [];
    const got: Buffer[] = [];
    let keep = true;
    const stream = ring.recvMultishot(mine, pool, {
      data(id, length) {
        got.push(Buffer.from(pool.view(id).subarray(0, length)));
        if (keep) held.push(id);
        else pool.release(id);
      },
      end() {},
    });
    const data = randomBytes(4096);
    writevSync(theirs, [data]);
    await waitFor(() => ring.stats.recvNoBuffers > 0, 5000, 'the pool ran dry'); // starved, both buffers held
    stream.pause();
    keep = false;
    for (const id of held.splice(0)) pool.release(id); // buffers back: a held stream takes no wake-up
    const before = Buffer.concat(got).length;
    await sleep(200);
    expect(Buffer.concat(got).length).toBe(before);
    stream.resume();
    await waitFor(() => Buffer.concat(got).length === data.length, 5000, 'every byte');
    expect(Buffer.concat(got).equals(data)).toBe(true);
    await stream.close();
  });

  it('RingStream.pause() with its recv armed: nothing comes until resume(), then every byte', async () => {
    const ring = newRing();
    const pool = ring.setupBufRing({ count: 64, size: 4096 });
    const [mine, theirs] = track(socketpair('stream'));
    const got: Buffer[] = [];
    const stream = ring.recvMultishot(mine, pool, {
      data(id, length) {
        got.push(Buffer.from(pool.view(id).subarray(0, length)));
        pool.release(id);
      },
      end() {},
    });
    await ring.nop(); // armed in the kernel
    stream.pause(); // its recv cancelled
    await sleep(50);
    const data = randomBytes(8192);
    writevSync(theirs, [data]);
    await sleep(200);
    expect(got.length).toBe(0);
    stream.resume();
    await waitFor(() => Buffer.concat(got).length === data.length, 5000, 'every byte');
    expect(Buffer.concat(got).equals(data)).toBe(true);
    await stream.close();
  });

  it('backpressure: a consumer that does not read pauses receiving; the pool stays free for other sockets; nothing is lost', async () => {
    const ring = newRing();
    const pool = ring.setupBufRing({ count: 16, size: 4096 });
    const listening = listenLocal();
    const accepted: RingSocket[] = [];
    acceptSockets(ring, listening.fd, pool, (s) => accepted.push(s));
    const slowPeer = net.connect(listening.port, '127.0.0.1');
    const otherPeer = net.connect(listening.port, '127.0.0.1');
    await waitFor(() => accepted.length === 2, 5000, 'two connections');
    const [slow, other] = accepted[0].remotePort === slowPeer.localPort ? accepted : [accepted[1], accepted[0]];
    // Fixed socket buffers (128 KiB each once doubled), so what the kernel can hold between the
    // two is far below the 4 MiB sent: a reader that woke fast would otherwise let TCP's
    // autotuning grow them to hold it all, and the peer's write would finish without a pause.
    setsockopt(slow.fd, 'SO_RCVBUF', 64 << 10);
    setsockopt((slowPeer as unknown as { _handle: { fd: number } })._handle.fd, 'SO_SNDBUF', 64 << 10);
    const data = randomBytes(4 << 20);
    let peerDone = false;
    slowPeer.write(data, () => (peerDone = true));
    slowPeer.end();
    slow.pause(); // nobody reads: the readable buffer fills to its highWaterMark (16 KiB)
    await sleep(300);
    // Receiving paused: what is buffered no longer grows (beyond the highWaterMark, what came
    // before the pause landed), and the rest waits in the sockets (the peer's write is not done).
    const buffered = slow.readableLength;
    await sleep(300);
    expect(slow.readableLength).toBe(buffered);
    expect(buffered).toBeLessThan(512 << 10);
    expect(peerDone).toBe(false);
    // what came after the pause waits in the pool, uncopied, up to half of it (the rest copied)
    expect(heldCount(pool)).toBeLessThanOrEqual(pool.count / 2);
    // The pool serves another socket meanwhile.
    const got = once(other, 'data');
    otherPeer.write('still served');
    expect(String((await got)[0])).toBe('still served');
    // A slow reader takes it all, in order.
    const parts: Buffer[] = [];
    slow.on('readable', () => {
      let c: Buffer | null;
      while ((c = slow.read(8192) as Buffer | null) !== null) parts.push(c);
    });
    await once(slow, 'end');
    expect(Buffer.concat(parts).equals(data)).toBe(true);
    expect(peerDone).toBe(true);
    otherPeer.destroy();
    slowPeer.destroy();
    await expectAllClosed(accepted, pool);
  });

  it("the peer's reset: 'error' (ECONNRESET) then 'close' (hadError true), as net.Socket; the fd closed", async () => {
    const ring = newRing();
    const pool = ring.setupBufRing({ count: 8, size: 4096 });
    const listening = listenLocal();
    const accepted: RingSocket[] = [];
    acceptSockets(ring, listening.fd, pool, (s) => accepted.push(s));
    const peer = net.connect(listening.port, '127.0.0.1');
    await waitFor(() => accepted.length === 1, 5000, 'a connection');
    const s = accepted[0];
    const events: string[] = [];
    s.on('error', (err: NodeJS.ErrnoException) => events.push(`error ${err.code}`));
    s.on('close', (hadError: boolean) => events.push(`close ${hadError}`));
    s.resume();
    const closedEvent = new Promise((resolve) => s.on('close', resolve)); // once() would reject on 'error'
    peer.resetAndDestroy(); // SO_LINGER 0: an RST
    await closedEvent;
    expect(events).toEqual(['error ECONNRESET', 'close true']);
    expect(() => fs.fstatSync(s.fd)).toThrow(/EBADF/);
    expect(heldCount(pool)).toBe(0);
  });

  it('destroy(): closes the fd, or leaves it to a caller that owns it (closeFd: false); the Ring closed under a socket ends it with an error', async () => {
    const ring = newRing();
    const pool = ring.setupBufRing({ count: 8, size: 4096 });
    const listening = listenLocal();
    const owned = track(socket('inet', 'stream'));
    const plain = socket('inet', 'stream');
    for (const fd of [owned, plain]) await ring.connect(fd, { host: '127.0.0.1', port: listening.port });
    const kept = new RingSocket(ring, owned, { bufferRing: pool, closeFd: false });
    const closing = new RingSocket(ring, plain, { bufferRing: pool });
    kept.destroy();
    closing.destroy();
    // 'close' says no error, as net.Socket's (hadError false)
    expect(await Promise.all([once(kept, 'close'), once(closing, 'close')])).toEqual([[false], [false]]);
    expect(fs.fstatSync(owned).isSocket()).toBe(true);
    expect(() => fs.fstatSync(plain)).toThrow(/EBADF/);
    expect(kept.readyState).toBe('closed');

    const fd = await ring.socket('inet', 'stream');
    await ring.connect(fd, { host: '127.0.0.1', port: listening.port });
    const s = new RingSocket(ring, fd, { bufferRing: pool });
    const errored = once(s, 'error');
    await ring.close();
    const [err] = (await errored) as [Error & { code?: string }];
    expect(err.code).toBe('ERR_RING_CLOSED');
    await waitFor(() => s.closed, 5000, 'closed');
    expect(() => fs.fstatSync(fd)).toThrow(/EBADF/);
  });

  it("destroy(): a close(2) that fails is not swallowed: the fd closed behind the socket's back gives 'error' EBADF, then 'close' with hadError", async () => {
    const ring = newRing();
    const pool = ring.setupBufRing({ count: 8, size: 4096 });
    const [mine, theirs] = socketpair('stream');
    const s = new RingSocket(ring, mine, { bufferRing: pool });
    const events: unknown[] = [];
    s.on('error', (err: Error & { code?: string }) => events.push(err.code)).on('close', (hadError: boolean) => events.push(hadError));
    // (no fd is opened between here and the socket's close: the number is not reused meanwhile)
    fs.closeSync(mine);
    s.destroy();
    await waitFor(() => s.closed, 5000, 'closed');
    expect(events).toEqual(['EBADF', true]);
    fs.closeSync(theirs);
  });

  it('carries TLS: node:https served over it (tls.TLSSocket on the Duplex), with a self-signed certificate', async () => {
    const key = join(dir().path, 'key.pem');
    const cert = join(dir().path, 'cert.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert,
      '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost'], { stdio: 'ignore' });
    const ring = newRing();
    const pool = ring.setupBufRing({ count: 16, size: 4096 });
    const listening = listenLocal();
    const server = https.createServer({ key: fs.readFileSync(key), cert: fs.readFileSync(cert) }, (req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (c: Buffer) => parts.push(c));
      req.on('end', () => res.end(createHash('sha256').update(Buffer.concat(parts)).digest('hex')));
    });
    const sockets = serveOnRing(ring, listening.fd, pool, server);
    const agent = new https.Agent({ keepAlive: true, maxSockets: 1, ca: fs.readFileSync(cert), servername: 'localhost' });
    try {
      for (const size of [0, 100, 5000, 100_000]) {
        const body = randomBytes(size);
        const got = await post(https, { port: listening.port, agent, servername: 'localhost' }, body);
        expect(String(got.body)).toBe(createHash('sha256').update(body).digest('hex'));
        expect(got.authorized).toBe(true); // the client checked the server's certificate
      }
      expect(sockets.length).toBe(1);
    } finally {
      agent.destroy();
    }
    await expectAllClosed(sockets, pool);
  });

  it('setTimeout emits timeout after idling, as net.Socket; setNoDelay/setKeepAlive set the socket options', async () => {
    const { fd, s } = await connectedSocket();
    s.setNoDelay(true).setKeepAlive(true);
    expect(getsockopt(fd, 'TCP_NODELAY')).toBe(true);
    expect(getsockopt(fd, 'SO_KEEPALIVE')).toBe(true);
    const started = Date.now();
    await new Promise<void>((resolve) => s.setTimeout(100, resolve));
    expect(Date.now() - started).toBeGreaterThanOrEqual(95);
    expect(s.destroyed).toBe(false); // the listener decides
    // activity arms it again, as net.Socket's
    const again = once(s, 'timeout');
    s.write('x');
    await again;
    // setNoDelay() with no argument turns Nagle off, as net.Socket's
    s.setNoDelay(false);
    expect(getsockopt(fd, 'TCP_NODELAY')).toBe(false);
    s.setNoDelay();
    expect(getsockopt(fd, 'TCP_NODELAY')).toBe(true);
    // setTimeout(0) turns the timer off: no 'timeout' once its time has passed
    const timeouts: number[] = [];
    s.on('timeout', () => timeouts.push(Date.now()));
    s.setTimeout(20);
    s.setTimeout(0);
    await sleep(200);
    expect(timeouts).toEqual([]);
    expect(() => s.setTimeout('20' as never)).toThrow(expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' }));
    // a new duration replaces the armed one (not a refresh of the old 20 ms): 20 s, then 30 ms
    s.setTimeout(20_000);
    await sleep(200);
    expect(timeouts).toEqual([]);
    s.setTimeout(30);
    const armed = Date.now();
    await once(s, 'timeout');
    expect(Date.now() - armed).toBeLessThan(10_000);
    timeouts.length = 0;
    s.setTimeout(0);
    // destroy() clears an armed timer: nothing fires on the destroyed socket
    s.setTimeout(20);
    s.destroy();
    await once(s, 'close');
    await sleep(200);
    expect(timeouts).toEqual([]);
  });

  it("after destroy() its fd number may name another socket: address(), the address getters and resetAndDestroy() read nothing of it ({}, undefined, no throw, as net.Socket)", async () => {
    const { ring, pool, listening, fd, s } = await connectedSocket();
    const read = new RingSocket(ring, await ring.socket('inet', 'stream'), { bufferRing: pool });
    expect(read.address()).toEqual({ address: '0.0.0.0', family: 'IPv4', port: 0 }); // read once before destroy
    s.destroy();
    read.destroy();
    await Promise.all([once(s, 'close'), once(read, 'close')]);
    const other = track(socket('inet', 'stream')); // the lowest free number: the one s had
    expect(other).toBe(fd);
    await ring.connect(other, { host: '127.0.0.1', port: listening.port }); // it has a peer, as s had
    const otherLinger = getsockopt(other, 'SO_LINGER');
    expect(s.address()).toEqual({});
    expect(read.address()).toEqual({});
    expect([s.localAddress, s.localPort, s.localFamily, s.remoteAddress, s.remotePort]).toEqual([undefined, undefined, undefined, undefined, undefined]);
    expect(s.resetAndDestroy()).toBe(s);
    expect(getsockopt(other, 'SO_LINGER')).toEqual(otherLinger); // not the other socket's to reset
    // net.Socket, the same way
    const n = net.connect(listening.port, '127.0.0.1');
    await once(n, 'connect');
    n.destroy();
    await once(n, 'close');
    expect([n.address(), n.localPort, n.remoteAddress, n.resetAndDestroy() === n]).toEqual([{}, undefined, undefined, true]);
  });
});
