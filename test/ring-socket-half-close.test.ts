// A peer that sends its request and half-closes at once (write, then shutdown: `Connection:
// close` clients, pipelines through a RingSocket) gets its answer from node:http on the Ring, as
// from node's own server. The request's bytes and the EOF often come in one reap; node:http must
// see the request end before the socket does, or it aborts the request unanswered.
import { describe, expect, it } from 'vitest';
import http from 'node:http';
import net from 'node:net';
import { onRing } from '../src/index.js';
import { RingSocketDuplex as RingSocket } from '../src/ring/duplex.js';
import { ringTestSetup } from './support/ring.js';

const { newRing } = ringTestSetup('iolab-ring-half-close-');

/** One request written with the half-close right behind it; what came back. */
function ask(port: number, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const client = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    let reply = '';
    client.on('data', (c: Buffer) => (reply += c));
    client.on('end', () => { client.destroy(); resolve(reply); });
    client.on('error', reject);
    client.end(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
  });
}

describe.each(['ring', 'node'] as const)('%s: a request and the half-close in one go', (kind) => {
  it('is answered every time (50 connections, one after another)', async () => {
    const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
      req.resume();
      req.on('end', () => res.end(`answer ${req.url}`));
    };
    const server = kind === 'ring' ? onRing(http.createServer(handler), { ring: newRing(), bufferCount: 16 }) : http.createServer(handler);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as net.AddressInfo;
    const replies: string[] = [];
    for (let i = 0; i < 50; i++) replies.push(await ask(port, `/${i}`));
    await new Promise<void>((r) => server.close(() => r()));
    const bad = replies.map((r, i) => (/^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\nanswer \/\d+$/.test(r) && r.endsWith(`answer /${i}`) ? null : `${i}: ${JSON.stringify(r.slice(0, 60))}`)).filter(Boolean);
    expect(bad).toEqual([]);
  });
});

/** A client socket of `kind` (a RingSocket over a Ring-connected fd, or net's) connected to a
 * net.Server on 127.0.0.1, with the server's side of it. */
async function clientOf(kind: 'ring' | 'node', allowHalfOpen: boolean) {
  const server = net.createServer();
  const accepted = new Promise<net.Socket>((r) => server.once('connection', r));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  let socket: net.Socket;
  if (kind === 'ring') {
    const ring = newRing();
    const fd = await ring.socket('inet', 'stream');
    await ring.connect(fd, { host: '127.0.0.1', port });
    socket = new RingSocket(ring, fd, { bufferRing: ring.setupBufRing({ count: 16, size: 4096 }), allowHalfOpen }) as unknown as net.Socket;
  } else {
    socket = await new Promise<net.Socket>((r) => { const s = net.connect({ port, host: '127.0.0.1', allowHalfOpen }, () => r(s)); });
  }
  return { server, socket, peer: await accepted };
}

describe.each(['ring', 'node'] as const)('%s: ending a socket whose peer is gone', (kind) => {
  it("end() after the peer's FIN and then its reset finishes without an error (shutdown's ENOTCONN is none)", async () => {
    const { server, socket, peer } = await clientOf(kind, true);
    const errors: Error[] = [];
    socket.on('error', (e) => errors.push(e));
    socket.resume();
    const args: Record<string, unknown[]> = {};
    socket.once('finish', (...a: unknown[]) => (args.finish = a));
    const ended = new Promise((r) => socket.once('end', (...a: unknown[]) => r(args.end = a)));
    peer.end(); // its FIN: our read side ends, nothing reads any more
    await ended;
    peer.resetAndDestroy(); // then its RST: the connection is gone
    await new Promise((r) => peer.once('close', r));
    await new Promise((r) => setImmediate(r));
    const finished = new Promise((r) => socket.once('finish', r));
    socket.end();
    await finished;
    await new Promise((r) => socket.once('close', (...a: unknown[]) => r(args.close = a)));
    expect(errors).toEqual([]);
    expect(args).toEqual({ end: [], finish: [], close: [false] }); // net's arguments: none, none, hadError
    server.close();
  });

  it('destroySoon() with bytes still queued: they all reach the peer, then the socket closes', async () => {
    const { server, socket, peer } = await clientOf(kind, false);
    const data = Buffer.alloc(4 << 20, 7); // more than the socket buffers take at once: the write waits
    socket.write(data);
    socket.destroySoon();
    let got = 0;
    peer.on('data', (c: Buffer) => (got += c.length));
    await new Promise((r) => socket.once('close', r));
    await new Promise((r) => peer.once('end', r));
    expect(got).toBe(data.length);
    peer.destroy();
    server.close();
  });
});
