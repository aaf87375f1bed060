// RingSocket's writes in a batch: a reply written while a socket's chunk is read, in a dispatch
// that hands out several sockets' chunks, goes to the kernel with the others' in the Ring's next
// submit (no send(2) inside the call); a reply to a lone chunk goes at once. Either way every
// reply arrives whole and in order, its callback says written only once the kernel has it, and a
// destroy() right after the write still lets it out, as net.Socket's.
import { describe, expect, it } from 'vitest';
import net from 'node:net';
import { once } from 'node:events';
import { text } from 'node:stream/consumers';
import { RingSocketDuplex as RingSocket } from '../src/ring/duplex.js';
import { ringTestSetup } from './support/ring.js';

const { newRing, track, untrack } = ringTestSetup('iolab-ring-socket-batch-');
const SOCKETS = 8;

/** A net.Server on 127.0.0.1 with `n` RingSockets connected to it, each with the server's side. */
async function pairs(n: number) {
  const ring = newRing();
  const pool = ring.setupBufRing({ count: 64, size: 4096 });
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  const out: { peer: net.Socket; socket: RingSocket }[] = [];
  for (let i = 0; i < n; i++) {
    const accepted = once(server, 'connection');
    const fd = track(await ring.socket('inet', 'stream'));
    await ring.connect(fd, { host: '127.0.0.1', port });
    const peer = (await accepted)[0] as net.Socket;
    out.push({ peer, socket: new RingSocket(ring, untrack(fd), { bufferRing: pool }) });
  }
  return { ring, server, pairs: out };
}


const reply = (chunk: Buffer) => `re:${chunk.toString()}`.repeat(64);

/** What `peer` reads until it has at least `bytes` (its listener removed then). */
function readAtLeast(peer: net.Socket, bytes: number): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    const on = (c: Buffer) => {
      text += c.toString();
      if (text.length < bytes) return;
      peer.off('data', on);
      resolve(text);
    };
    peer.on('data', on);
  });
}

describe('RingSocket: replies to chunks reaped together', () => {
  it('go out in the next submit, no send inside the call; a reply to a lone chunk goes at once; each callback after the kernel has it', async () => {
    const { ring, server, pairs: all } = await pairs(SOCKETS);
    const called: string[] = [];
    for (const [i, { socket }] of all.entries()) {
      socket.on('data', (chunk: Buffer) => {
        socket.write(reply(chunk), (err) => called.push(err ? `${i}: ${err.message}` : `${i}`));
      });
    }
    const direct = ring.stats.streamSendsDirect;
    // every peer writes in the same turn: the Ring reaps their chunks together
    const got = all.map(({ peer }) => readAtLeast(peer, reply(Buffer.from('x')).length));
    for (const [i, { peer }] of all.entries()) peer.write(`${i}`);
    expect(await Promise.all(got)).toEqual(all.map((_, i) => reply(Buffer.from(`${i}`))));
    expect(ring.stats.streamSendsDirect - direct).toBe(0);
    expect(called.sort()).toEqual(all.map((_, i) => `${i}`).sort());

    // alone in its reap, a reply is offered to the socket inside the write
    const lone = readAtLeast(all[0].peer, reply(Buffer.from('y')).length);
    all[0].peer.write('y');
    expect(await lone).toBe(reply(Buffer.from('y')));
    expect(ring.stats.streamSendsDirect - direct).toBe(1);
    for (const { peer, socket } of all) { socket.destroy(); peer.destroy(); }
    server.close();
  });

  it('a destroy() right after the write lets the reply out first, as net.Socket (its bytes go to the kernel before the fd\'s ops are cancelled)', async () => {
    const { ring, server, pairs: all } = await pairs(SOCKETS);
    const direct = ring.stats.streamSendsDirect;
    for (const { socket } of all) {
      socket.on('error', () => {}); // the write's callback, cut short by destroy(), says so
      socket.on('data', (chunk: Buffer) => {
        socket.write(reply(chunk));
        socket.destroy();
      });
    }
    const got = all.map(({ peer }) => text(peer));
    for (const [i, { peer }] of all.entries()) peer.write(`${i}`);
    expect(await Promise.all(got)).toEqual(all.map((_, i) => reply(Buffer.from(`${i}`))));
    expect(ring.stats.streamSendsDirect - direct).toBe(0); // every reply was sent later
    await Promise.all(all.map(({ socket }) => (socket.closed ? undefined : once(socket, 'close'))));
    server.close();
  });
});

describe('RingSocket: writes made in a handler, in a batch', () => {
  it('a socket\'s writes of one chunk go out and are called written together, before the next socket\'s; a peer whose second write went at once behind a reply sent later gets every reply at once from then on', async () => {
    const { ring, server, pairs: all } = await pairs(SOCKETS);
    const log: string[] = [];
    for (const [i, { socket }] of all.entries()) {
      socket.on('data', (chunk: Buffer) => {
        // the first waits for the batch's submit; the second, buffered by Writable behind it,
        // goes when the first is called written
        socket.write(`a${chunk}`, () => log.push(`a${i}`));
        socket.write(`b${chunk}`, () => log.push(`b${i}`));
      });
    }
    const round = async (tag: string) => {
      log.length = 0;
      const direct = ring.stats.streamSendsDirect;
      const got = all.map(({ peer }) => readAtLeast(peer, 4));
      for (const { peer } of all) peer.write(tag);
      expect(await Promise.all(got)).toEqual(all.map(() => `a${tag}b${tag}`));
      // every callback came, a socket's two together
      expect(log).toHaveLength(2 * SOCKETS);
      for (let at = 0; at < log.length; at += 2) expect(log[at + 1]).toBe(`b${log[at].slice(1)}`);
      return ring.stats.streamSendsDirect - direct;
    };
    expect(await round('1')).toBe(SOCKETS); // the first replies later, the seconds at once
    expect(await round('2')).toBe(2 * SOCKETS); // both at once: these peers pipeline
    for (const { peer, socket } of all) { socket.destroy(); peer.destroy(); }
    server.close();
  });
});

describe('RingSocket: between sockets of a batch, as net.Socket between its reads', () => {
  it('what a data handler queued with process.nextTick and Promises runs before the next socket\'s data, as with net.Socket', async () => {
    const order = async (sockets: (net.Socket | RingSocket)[], peers: net.Socket[]) => {
      const log: string[] = [];
      const got = sockets.map((socket, i) => new Promise<void>((resolve) => socket.once('data', () => {
        log.push(`data ${i}`);
        process.nextTick(() => log.push(`tick ${i}`));
        void Promise.resolve().then(() => { log.push(`promise ${i}`); resolve(); });
      })));
      for (const peer of peers) peer.write('x'); // in one turn: one reap, one epoll wait
      await Promise.all(got);
      // each socket's three entries together, whichever socket came first
      const groups: string[] = [];
      for (let at = 0; at < log.length; at += 3) groups.push(log.slice(at, at + 3).map((e) => e.split(' ')[0]).join(','));
      return groups;
    };
    const { server, pairs: all } = await pairs(SOCKETS);
    const ringOrder = await order(all.map((p) => p.socket), all.map((p) => p.peer));
    // net.Socket the same way: clients of a net server
    const netServer = net.createServer();
    await new Promise<void>((r) => netServer.listen(0, '127.0.0.1', r));
    const clients: net.Socket[] = [];
    const accepted: net.Socket[] = [];
    for (let i = 0; i < SOCKETS; i++) {
      const connection = once(netServer, 'connection');
      const client = net.connect((netServer.address() as net.AddressInfo).port, '127.0.0.1');
      await once(client, 'connect');
      clients.push(client);
      accepted.push((await connection)[0] as net.Socket);
    }
    const netOrder = await order(accepted, clients);
    expect(netOrder).toEqual(Array(SOCKETS).fill('data,tick,promise'));
    expect(ringOrder).toEqual(netOrder);
    for (const { peer, socket } of all) { socket.destroy(); peer.destroy(); }
    for (const s of [...clients, ...accepted]) s.destroy();
    server.close();
    netServer.close();
  });
});
