// onRing and RingSocket against net's contract where mutants nobody chose survived every test:
// each case runs the same scenario on node:net's own server and on onRing's, and expects the same
// observations (net is the oracle): allowHalfOpen's default and its true, pauseOnConnect,
// setTimeout(0, cb) removing cb; and an accept that fails for want of fds (EMFILE) backing off
// rather than spinning.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { onRing, Ring, RingSocket, socket as newSocket } from '../src/index.js';
import { projectRoot } from '../src/native.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { newProcessTag, processTagVariable } from './support/procs.js';
import { shortTempDir } from './support/temp.js';

const tmp = shortTempDir('iolab-ring-server-defaults-');
checkLeaksAfterAll(tmp);
let ring: Ring;
beforeAll(() => {
  ring = new Ring();
});
afterAll(() => ring.close());

type Kind = 'net' | 'ring';
const kinds: Kind[] = ['net', 'ring'];

/** A net.Server made with `options`, listening on node:net's own handle or on the Ring. */
async function listening(kind: Kind, options: net.ServerOpts): Promise<net.Server> {
  const server = net.createServer(options);
  if (kind === 'ring') onRing(server, { ring, bufferCount: 16 });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

/** Connects a plain net client; resolves with it and the server's socket for it. */
async function connected(server: net.Server): Promise<{ client: net.Socket; socket: net.Socket }> {
  const accepted = once(server, 'connection') as Promise<[net.Socket]>;
  const client = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
  await once(client, 'connect');
  const [socket] = await accepted;
  return { client, socket };
}

async function closeAll(server: net.Server, ...sockets: net.Socket[]): Promise<void> {
  for (const s of sockets) s.destroy();
  await new Promise((r) => server.close(r));
}

/** What `observed` does once `ender`, its peer, ends its side: whether it ends its own then
 * (allowHalfOpen false) or stays writable, and what the peer reads after its end. */
async function afterPeerEnds(observed: net.Socket, ender: net.Socket) {
  const enderGot: string[] = [];
  ender.setEncoding('utf8');
  ender.on('data', (d: string) => enderGot.push(d));
  const enderEnded = once(ender, 'end');
  observed.resume();
  const ended = once(observed, 'end');
  ender.end('bye');
  await ended;
  // net ends a socket that allows no half-open a tick after its 'end'
  await new Promise((r) => setImmediate(r));
  const afterEnd = { writable: observed.writable, writableEnded: observed.writableEnded };
  if (!observed.writableEnded) observed.end('late words');
  await enderEnded;
  return { afterEnd, peerGot: enderGot.join('') };
}

/** A server's connection whose client ends first. */
async function halfClose(kind: Kind, options: net.ServerOpts) {
  const server = await listening(kind, options);
  const { client, socket } = await connected(server);
  const seen = await afterPeerEnds(socket, client);
  await closeAll(server, client, socket);
  return seen;
}

describe('onRing keeps net.Server\'s options for its connections', () => {
  it.each([{}, { allowHalfOpen: false }, { allowHalfOpen: true }])('allowHalfOpen %j: the socket ends with its peer, or stays writable, as net\'s', async (options) => {
    const [fromNet, fromRing] = [await halfClose('net', options), await halfClose('ring', options)];
    expect(fromRing).toEqual(fromNet);
    // net's own, to be sure the case tells the two apart
    expect(fromNet.afterEnd.writableEnded).toBe(options.allowHalfOpen !== true);
  });

  it.each(kinds)('pauseOnConnect on %s: the socket comes paused, no data flows until resume(), then all of it', async (kind) => {
    const server = await listening(kind, { pauseOnConnect: true });
    const { client, socket } = await connected(server);
    expect({ isPaused: socket.isPaused(), readableFlowing: socket.readableFlowing }).toEqual({ isPaused: true, readableFlowing: false });
    const got: Buffer[] = [];
    socket.on('data', (d: Buffer) => got.push(d)); // does not resume a socket paused on purpose
    client.end('while paused');
    // the bytes reached this process (a second connection's data shows the loop ran past them)
    const second = await connected(server);
    second.client.end('x');
    await new Promise((r) => setImmediate(r));
    expect(Buffer.concat(got).toString()).toBe('');
    socket.resume();
    await once(socket, 'end');
    expect(Buffer.concat(got).toString()).toBe('while paused');
    await closeAll(server, client, socket, second.client, second.socket);
  });

  it.each(kinds)("setTimeout(0, cb) on %s removes cb as a 'timeout' listener, and adds none", async (kind) => {
    const server = await listening(kind, {});
    const { client, socket } = await connected(server);
    const cb = () => {};
    const base = socket.listenerCount('timeout');
    socket.setTimeout(1000, cb);
    expect(socket.listenerCount('timeout')).toBe(base + 1);
    socket.setTimeout(0, cb);
    expect(socket.listenerCount('timeout')).toBe(base);
    socket.setTimeout(0, cb);
    expect(socket.listenerCount('timeout')).toBe(base);
    expect(socket.timeout).toBe(0);
    // the largest timer a setTimeout takes is taken as it is, with no warning (beyond it: a warning, and 1 ms)
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on('warning', onWarning);
    socket.setTimeout(2 ** 31 - 1);
    await new Promise((r) => setImmediate(r));
    process.off('warning', onWarning);
    expect([socket.timeout, warnings]).toEqual([2 ** 31 - 1, []]);
    socket.setTimeout(0);
    // a callback that is not a function is refused, and not added
    expect(() => socket.setTimeout(10, 'x' as never)).toThrow(expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' }));
    expect(socket.listenerCount('timeout')).toBe(base);
    await closeAll(server, client, socket);
  });
});

/** The same from the client's side: a socket the program made itself (net.connect, or a
 * RingSocket over a connected fd) whose server ends first. */
async function halfCloseClient(kind: Kind, options: { allowHalfOpen?: boolean }) {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  const accepted = once(server, 'connection') as Promise<[net.Socket]>;
  let client: net.Socket;
  if (kind === 'net') {
    client = net.connect({ port, host: '127.0.0.1', ...options });
    await once(client, 'connect');
  } else {
    const fd = newSocket('inet', 'stream');
    await ring.connect(fd, { host: '127.0.0.1', port });
    client = new RingSocket(ring, fd, { bufferRing: ring.setupBufRing({ count: 4, size: 1024 }), ...options }) as unknown as net.Socket;
  }
  const [peer] = await accepted;
  const seen = await afterPeerEnds(client, peer);
  await closeAll(server, client, peer);
  return seen;
}

describe('RingSocket made by hand keeps net.Socket\'s allowHalfOpen', () => {
  it.each([{}, { allowHalfOpen: false }, { allowHalfOpen: true }])('allowHalfOpen %j: it ends with its peer, or stays writable, as net.Socket', async (options) => {
    const [fromNet, fromRing] = [await halfCloseClient('net', options), await halfCloseClient('ring', options)];
    expect(fromRing).toEqual(fromNet);
    expect(fromNet.afterEnd.writableEnded).toBe(options.allowHalfOpen !== true);
  });
});

describe('onRing out of fds', () => {
  it('an accept that fails with EMFILE waits before it tries again (10 ms, doubling), it does not spin', async () => {
    // The server in a child whose open-file limit is 64; 80 held connections take its fds. The
    // child answers each line on stdin with its Ring's count of SQEs submitted: while every
    // accept fails, a second of back-off costs each of the four accept loops a handful.
    const index = pathToFileURL(join(projectRoot, 'dist', 'index.js')).href;
    const code = `
      import http from 'node:http';
      const { onRing, Ring } = await import(${JSON.stringify(index)});
      const ring = new Ring();
      const server = onRing(http.createServer((req, res) => res.end('ok')), { ring, bufferCount: 16 });
      server.listen(0, '127.0.0.1', () => console.log(server.address().port));
      process.stdin.on('data', () => console.log(ring.stats.sqesSubmitted));`;
    const child = spawn('prlimit', ['--nofile=64:64', process.execPath, '--input-type=module', '-e', code],
      { env: { ...process.env, [processTagVariable]: newProcessTag() }, stdio: ['pipe', 'pipe', 'inherit'] });
    const lines: string[] = [];
    let waiting: (() => void) | undefined;
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d: string) => {
      lines.push(...d.trim().split('\n'));
      waiting?.();
    });
    const next = async () => {
      while (lines.length === 0) await new Promise<void>((r) => (waiting = r));
      return Number(lines.shift());
    };
    const held: net.Socket[] = [];
    try {
      const port = await next();
      for (let i = 0; i < 80; i++) {
        const s = net.connect(port, '127.0.0.1');
        s.on('error', () => {});
        held.push(s);
        await once(s, 'connect');
      }
      await new Promise((r) => setTimeout(r, 100)); // the server took what it could and met EMFILE
      child.stdin.write('\n');
      const before = await next();
      await new Promise((r) => setTimeout(r, 1000));
      child.stdin.write('\n');
      const after = await next();
      // backing off: at most about 7 tries a loop in a second (10, 20, 40... ms); at 0 ms, hundreds
      expect(after - before).toBeLessThan(60);
    } finally {
      for (const s of held) s.destroy();
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
  });
});
