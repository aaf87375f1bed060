// onRing(server): node:http, node:https and node:net servers listening on a Ring with net.Server's
// contract (listen's forms, address, close once the last connection ends, getConnections,
// maxConnections, ref/unref, the events), and RingSocket as the drop-in net.Socket they get:
// ref/unref under a keep-alive Agent, a reset read as an error, destroy()'s callbacks,
// setTimeout's values.
import { afterAll, describe, expect, it } from 'vitest';
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { close, onRing, Ring, RingSocket, socketpair } from '../src/index.js';
import { projectRoot } from '../src/native.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';
import { newProcessTag, processTagVariable } from './support/procs.js';

const tmp = shortTempDir('iolab-ring-server-');
checkLeaksAfterAll(tmp);
const rings: Ring[] = [];
afterAll(async () => {
  await Promise.all(rings.map((r) => r.close()));
});
function newRing(): Ring {
  const ring = new Ring();
  rings.push(ring);
  return ring;
}

function get(port: number, path: string, agent?: http.Agent): Promise<{ status: number; body: string; socket: net.Socket }> {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path, agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, body, socket: res.socket }));
    }).on('error', reject);
  });
}

const portOf = (server: net.Server) => (server.address() as net.AddressInfo).port;

describe('onRing: a net.Server on the Ring', () => {
  it('node:http by one line: listen(port, host, cb), address(), requests, getConnections, close() once the last connection ends', async () => {
    const ring = newRing();
    const server = onRing(http.createServer((req, res) => res.end(`hello ${req.url} over ${req.socket instanceof RingSocket ? 'the Ring' : 'net'}`)), { ring, bufferCount: 64 });
    const events: string[] = [];
    server.on('listening', () => events.push('listening'));
    server.on('close', () => events.push('close'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    expect(server.listening).toBe(true);
    expect(server.address()).toMatchObject({ address: '127.0.0.1', family: 'IPv4' });
    const agent = new http.Agent({ keepAlive: true });
    for (let i = 0; i < 3; i++) expect((await get(portOf(server), `/${i}`, agent)).body).toBe(`hello /${i} over the Ring`);
    const count = await new Promise<number>((resolve, reject) => server.getConnections((err, n) => (err ? reject(err) : resolve(n))));
    expect(count).toBe(1); // the Agent kept its one connection alive
    const port = portOf(server);
    const closed = new Promise<Error | undefined>((resolve) => server.close(resolve));
    expect(server.address()).toBeNull();
    // accepting stopped at once: a connection made now waits in the socket's queue, never
    // answered, until the fd closes a loop turn later (net closes it at once: refused); then refused
    await expect(get(port, '/late', new http.Agent()).catch((e: Error & { code?: string }) => e.code)).resolves.toMatch(/^(ECONNRESET|ECONNREFUSED)$/);
    await expect(get(port, '/later', new http.Agent()).catch((e: Error & { code?: string }) => e.code)).resolves.toBe('ECONNREFUSED');
    agent.destroy(); // the last connection ends: then 'close'
    expect(await closed).toBeUndefined();
    expect(events).toEqual(['listening', 'close']);
    expect(server.listening).toBe(false);
  });

  it("listen's other forms: an options object, a port string, a Unix path; errors as net gives them", async () => {
    const ring = newRing();
    const a = onRing(net.createServer((s) => s.end('a')), { ring, bufferCount: 16 });
    await new Promise<void>((resolve) => a.listen({ port: 0, host: '127.0.0.1', backlog: 8 }, resolve));
    const port = portOf(a);
    const sock = join(tmp.path, 's.sock');
    const b = onRing(net.createServer((s) => s.end('b')), { ring, bufferCount: 16 });
    await new Promise<void>((resolve) => b.listen(sock, resolve));
    expect(b.address()).toBe(sock);
    const read = (conn: net.Socket) => new Promise<string>((resolve) => {
      let got = '';
      conn.on('data', (d) => (got += d)).on('end', () => resolve(got));
    });
    expect(await read(net.connect(port, '127.0.0.1'))).toBe('a');
    expect(await read(net.connect(sock))).toBe('b');
    // the port in use: 'error' as net emits it (asynchronously), not a throw
    const c = onRing(net.createServer(), { ring, bufferCount: 16 });
    const [err] = (await once(c.listen(String(port) as unknown as number, '127.0.0.1'), 'error')) as [Error & { code: string; syscall: string; port: number }];
    expect(err).toMatchObject({ code: 'EADDRINUSE', syscall: 'listen', port });
    expect(err.message).toBe(`listen EADDRINUSE: address already in use 127.0.0.1:${port}`);
    expect(c.listening).toBe(false);
    expect(() => c.listen(70000)).toThrow(expect.objectContaining({ code: 'ERR_SOCKET_BAD_PORT' }));
    expect(() => a.listen(0)).toThrow(expect.objectContaining({ code: 'ERR_SERVER_ALREADY_LISTEN' }));
    expect(() => onRing({} as net.Server)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
    await Promise.all([a, b].map((s) => new Promise((r) => s.close(r))));
  });

  it("maxConnections: the connection over it is closed and 'drop' is emitted, as net does", async () => {
    const ring = newRing();
    const held: net.Socket[] = [];
    const server = onRing(net.createServer((s) => held.push(s)), { ring, bufferCount: 16 });
    server.maxConnections = 1;
    const drops: unknown[] = [];
    server.on('drop', (d) => drops.push(d));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const first = net.connect(portOf(server), '127.0.0.1');
    await once(server, 'connection');
    const second = net.connect(portOf(server), '127.0.0.1');
    second.on('error', () => {});
    await once(second, 'close');
    expect(drops).toHaveLength(1);
    expect(drops[0]).toMatchObject({ localPort: portOf(server) });
    first.destroy();
    for (const s of held) s.destroy();
    await new Promise((r) => server.close(r));
  });

  it('node:https on it: TLS over the RingSockets it accepts', async () => {
    const key = join(tmp.path, 'key.pem');
    const cert = join(tmp.path, 'cert.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert,
      '-days', '1', '-subj', '/CN=localhost'], { stdio: 'ignore' });
    const server = onRing(https.createServer({ key: fs.readFileSync(key), cert: fs.readFileSync(cert) }, (req, res) => res.end('secure')), { ring: newRing(), bufferCount: 16 });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const body = await new Promise<string>((resolve, reject) => {
      https.get({ host: '127.0.0.1', port: portOf(server), ca: fs.readFileSync(cert), servername: 'localhost' }, (res) => {
        let b = '';
        res.on('data', (c) => (b += c)).on('end', () => resolve(b));
      }).on('error', reject);
    });
    expect(body).toBe('secure');
    await new Promise((r) => server.close(r));
  });

  it("fastify through its documented serverFactory: app.listen, requests, app.close stops accepting", async () => {
    const { default: Fastify } = await import('fastify');
    const ring = newRing();
    const app = Fastify({ serverFactory: (handler) => onRing(http.createServer(handler), { ring, bufferCount: 16 }) });
    app.get('/', async (req) => ({ hello: 'world', ring: req.raw.socket instanceof RingSocket }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    const port = portOf(app.server);
    expect(JSON.parse((await get(port, '/')).body)).toEqual({ hello: 'world', ring: true });
    await app.close();
    expect(app.server.listening).toBe(false);
    const fresh = new http.Agent({ keepAlive: false }); // not the global Agent's socket, which close() ended
    await expect(get(port, '/', fresh).catch((e: Error & { code?: string }) => e.code)).resolves.toBe('ECONNREFUSED');
  });

  it('out of fds (EMFILE): accepting pauses and resumes once fds are free; the server never stops', async () => {
    // The server in a child whose open-file limit is 64: the held connections take its fds, the
    // next accept fails with EMFILE, and a request behind them is answered once they close.
    const index = pathToFileURL(join(projectRoot, 'dist', 'index.js')).href;
    const code = `
      import http from 'node:http';
      const { onRing } = await import(${JSON.stringify(index)});
      const server = onRing(http.createServer((req, res) => res.end('ok')), { bufferCount: 16 });
      server.listen(0, '127.0.0.1', () => console.log(server.address().port));`;
    const child = spawn('prlimit', ['--nofile=64:64', process.execPath, '--input-type=module', '-e', code],
      { env: { ...process.env, [processTagVariable]: newProcessTag() }, stdio: ['ignore', 'pipe', 'inherit'] });
    const held: net.Socket[] = [];
    try {
      const port = Number(String((await once(child.stdout, 'data'))[0]).trim());
      for (let i = 0; i < 80; i++) {
        const s = net.connect(port, '127.0.0.1');
        s.on('error', () => {});
        held.push(s);
        await once(s, 'connect');
      }
      let done = false;
      const answered = get(port, '/', new http.Agent()).finally(() => (done = true));
      await new Promise((r) => setTimeout(r, 200)); // its accept fails meanwhile (EMFILE), and is retried
      expect(done).toBe(false); // not answered while the server had no fd for it
      for (const s of held) s.destroy();
      expect((await answered).body).toBe('ok');
    } finally {
      for (const s of held) s.destroy();
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
  });

  it('unref(): a process whose only work left is a listening server and idle keep-alive RingSockets exits, as with net', async () => {
    // A child: a server on the Ring, unref()'d; an Agent that keeps its socket (a RingSocket
    // from createConnection) alive and unref()s it while idle. Without ref/unref on the Ring's
    // ops, the child would never exit; before RingSocket had unref(), the Agent threw.
    const index = pathToFileURL(join(projectRoot, 'dist', 'index.js')).href;
    const code = `
      import http from 'node:http';
      const { onRing, Ring, RingSocket, socket } = await import(${JSON.stringify(index)});
      const ring = new Ring();
      const pool = ring.setupBufRing({ count: 16, size: 4096 });
      const server = onRing(http.createServer((req, res) => res.end('ok')), { ring, bufferRing: pool });
      server.keepAliveTimeout = 200; // the server's side of the idle connection keeps the loop alive until then, as net's
      server.listen(0, '127.0.0.1', async () => {
        const port = server.address().port;
        const agent = new http.Agent({ keepAlive: true });
        agent.createConnection = (options, callback) => {
          const fd = socket('inet', 'stream');
          ring.connect(fd, { host: '127.0.0.1', port }).then(() => callback(null, new RingSocket(ring, fd, { bufferRing: pool })), callback);
        };
        const body = await new Promise((resolve, reject) => http.get({ port, agent }, (res) => {
          let b = ''; res.on('data', (c) => (b += c)); res.on('end', () => resolve(b));
        }).on('error', reject));
        console.log(body);
        server.unref();
      });`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', code], { env: { ...process.env, [processTagVariable]: newProcessTag() }, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    const [status, signal] = await once(child, 'exit');
    clearTimeout(killer);
    expect({ status, signal, out: out.trim() }).toEqual({ status: 0, signal: null, out: 'ok' });
  });

  it('ref() after unref(): a server, and a stream, keep the process alive again; a stream unref()d alone lets it exit; a closed one\'s unref() does nothing', async () => {
    // Each child prints 'ready' once its only work is what it ref()'d again; the parent then
    // asks it something (a request; a line on its stdin, a socket the stream reads): an answer
    // shows it stayed. Only an unref()'d stream: the child exits by itself.
    const index = JSON.stringify(pathToFileURL(join(projectRoot, 'dist', 'index.js')).href);
    const children = {
      server: `import http from 'node:http';
        const { onRing } = await import(${index});
        const server = onRing(http.createServer((req, res) => { res.end('answered'); server.close(); }), { bufferCount: 16 });
        server.listen(0, '127.0.0.1', () => { server.unref(); server.ref(); console.log('ready ' + server.address().port); });`,
      stream: `const { Ring } = await import(${index});
        const ring = new Ring();
        const pool = ring.setupBufRing({ count: 2, size: 64 });
        const stream = ring.recvMultishot(0, pool, { data(id, length) { console.log('got ' + pool.bytes(id, length)); process.exit(0); }, end() {} });
        stream.unref(); stream.ref(); console.log('ready');`,
      // a closed stream's unref() touches nothing, not the stream that took its slot since
      reused: `const { Ring, socketpair } = await import(${index});
        const ring = new Ring();
        const pool = ring.setupBufRing({ count: 2, size: 64 });
        const [a] = socketpair('stream');
        const first = ring.recvMultishot(a, pool, { data() {}, end() {} });
        await first.close();
        const stream = ring.recvMultishot(0, pool, { data(id, length) { console.log('got ' + pool.bytes(id, length)); process.exit(0); }, end() {} });
        first.unref(); first.ref(); first.unref(); console.log('ready');`,
      unrefd: `const { Ring } = await import(${index});
        const ring = new Ring();
        const pool = ring.setupBufRing({ count: 2, size: 64 });
        ring.recvMultishot(0, pool, { data() {}, end() {} }).unref(); console.log('ready');`,
    };
    for (const [name, code] of Object.entries(children)) {
      // (stdin a socket: libuv makes a child's pipes with socketpair)
      const child = spawn(process.execPath, ['--input-type=module', '-e', code], { env: { ...process.env, [processTagVariable]: newProcessTag() }, stdio: ['pipe', 'pipe', 'inherit'] });
      const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      let out = '';
      const exited = once(child, 'exit');
      await new Promise<void>((resolve) => child.stdout.on('data', (d) => { out += d; if (out.includes('\n')) resolve(); }));
      if (name === 'server') {
        const port = Number(out.trim().split(' ')[1]);
        out += await new Promise<string>((resolve) => http.get({ port, host: '127.0.0.1' }, (res) => {
          let b = ''; res.on('data', (c) => (b += c)); res.on('end', () => resolve(b));
        }).on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error')));
      } else if (name === 'stream' || name === 'reused') {
        child.stdin.write('ping');
      }
      const [status, signal] = await exited;
      clearTimeout(killer);
      child.stdin.destroy();
      const expected = { server: /^ready \d+\nanswered$/, stream: /^ready\ngot ping\n$/, reused: /^ready\ngot ping\n$/, unrefd: /^ready\n$/ }[name];
      expect({ name, status, signal }).toEqual({ name, status: 0, signal: null });
      expect(out, name).toMatch(expected!);
    }
  });
});

describe('RingSocket as net.Socket', () => {
  async function pair(ring: Ring) {
    const server = onRing(net.createServer(), { ring, bufferCount: 16 });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const accepted = once(server, 'connection');
    const peer = net.connect(portOf(server), '127.0.0.1');
    await once(peer, 'connect');
    const [socket] = (await accepted) as [RingSocket & net.Socket];
    return { server, peer, socket };
  }

  it("a peer's reset while a send waits: 'error' (ECONNRESET or EPIPE), then 'close', and never 'end'", async () => {
    const { server, peer, socket } = await pair(newRing());
    const events: string[] = [];
    socket.on('end', () => events.push('end'));
    socket.on('error', (e: Error & { code?: string }) => events.push(`error ${e.code}`));
    const closed = new Promise((resolve) => socket.once('close', resolve)); // once() would reject on 'error'
    peer.pause(); // reads nothing: the socket's send waits
    socket.write(Buffer.alloc(4 << 20));
    await new Promise((r) => setTimeout(r, 50));
    peer.resetAndDestroy();
    await closed;
    expect(events).toHaveLength(1);
    expect(events[0]).toMatch(/^error (ECONNRESET|EPIPE)$/);
    await new Promise((r) => server.close(r));
  });

  it('destroy() with a write waiting: its callback gets ERR_STREAM_DESTROYED and no error is emitted', async () => {
    const { server, peer, socket } = await pair(newRing());
    peer.pause();
    const errors: Error[] = [];
    socket.on('error', (e) => errors.push(e));
    const written = new Promise<Error | null | undefined>((resolve) => socket.write(Buffer.alloc(8 << 20), resolve));
    await new Promise((r) => setTimeout(r, 20));
    socket.destroy();
    expect(await written).toMatchObject({ code: 'ERR_STREAM_DESTROYED' });
    await once(socket, 'close');
    await new Promise((r) => setTimeout(r, 20));
    expect(errors).toEqual([]);
    peer.destroy();
    await new Promise((r) => server.close(r));
  });

  it('resetAndDestroy(): the peer reads ECONNRESET, not an end; a Unix socket refuses it', async () => {
    const ring = newRing();
    const { server, peer, socket } = await pair(ring);
    const seen = new Promise<string>((resolve) => {
      peer.on('end', () => resolve('end'));
      peer.on('error', (e: Error & { code?: string }) => resolve(e.code ?? 'error'));
    });
    expect(socket.resetAndDestroy()).toBe(socket);
    expect(await seen).toBe('ECONNRESET');
    await new Promise((r) => server.close(r));
    const [a, b] = socketpair('stream');
    const unix = new RingSocket(ring, a, { bufferRing: ring.setupBufRing({ count: 2, size: 64 }) });
    expect(() => unix.resetAndDestroy()).toThrow(expect.objectContaining({ code: 'ERR_INVALID_HANDLE_TYPE' }));
    unix.destroy();
    await new Promise((r) => unix.once('close', r));
    close(b);
  });

  it("setTimeout takes what net takes: capped at 2^31-1 with a warning; negative, NaN and Infinity are RangeErrors; net.Socket's fields", async () => {
    const { server, peer, socket } = await pair(newRing());
    for (const bad of [-1, Number.NaN, Infinity]) expect(() => socket.setTimeout(bad)).toThrow(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }));
    const warned = once(process, 'warning');
    const fired: number[] = [];
    socket.setTimeout(30 * 24 * 3600 * 1000, () => fired.push(1)); // 30 days
    expect(((await warned) as [Error])[0].name).toBe('TimeoutOverflowWarning');
    expect(socket.timeout).toBe(2 ** 31 - 1);
    await new Promise((r) => setTimeout(r, 50));
    expect(fired).toEqual([]); // not after 1 ms, as an overflowed timer would
    expect({ pending: socket.pending, connecting: socket.connecting, readyState: socket.readyState, bufferSize: socket.bufferSize }).toEqual({ pending: false, connecting: false, readyState: 'open', bufferSize: 0 });
    expect(socket.unref()).toBe(socket);
    expect(socket.ref()).toBe(socket);
    socket.destroy();
    peer.destroy();
    await new Promise((r) => server.close(r));
  });
});
