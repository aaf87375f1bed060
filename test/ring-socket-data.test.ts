// What a RingSocket says about its bytes holds: a write whose callback said it was written
// reaches the peer even when destroy() follows (as with net.Socket: the kernel has it), and a
// paused socket holds in JS no more than its highWaterMark and one chunk, whatever burst the
// kernel had taken from the socket when the pause landed.
import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { once } from 'node:events';
import { setsockopt } from '../src/index.js';
import { RingSocketDuplex as RingSocket } from '../src/ring/duplex.js';
import type { BufferRing, Ring } from '../src/ring/index.js';
import { ringTestSetup } from './support/ring.js';
import { waitFor } from './support/echo.js';

const { newRing, track, untrack } = ringTestSetup('iolab-ring-socket-data-');
const turns = async (n: number) => { for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r)); };
const fdOf = (s: net.Socket) => (s as unknown as { _handle: { fd: number } })._handle.fd;

/** A net.Server on 127.0.0.1 and a RingSocket connected to it, with the server's side. */
async function connected(ring: Ring, pool: BufferRing) {
  const server = net.createServer();
  const accepted = once(server, 'connection');
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const fd = track(await ring.socket('inet', 'stream'));
  await ring.connect(fd, { host: '127.0.0.1', port: (server.address() as net.AddressInfo).port });
  const peer = (await accepted)[0] as net.Socket;
  const socket = new RingSocket(ring, untrack(fd), { bufferRing: pool });
  return { server, peer, socket };
}

describe('RingSocket: bytes a write called written', () => {
  it('reach the peer when destroy() follows: the callback comes once the kernel has them', async () => {
    const ring = newRing();
    const pool = ring.setupBufRing({ count: 16, size: 4096 });
    const { server, peer, socket } = await connected(ring, pool);
    // small buffers both ways, so the kernel holds little and most of what is written waits
    setsockopt(socket.fd, 'SO_SNDBUF', 16 << 10);
    setsockopt(fdOf(peer), 'SO_RCVBUF', 16 << 10);
    peer.pause();
    const data = randomBytes(2 << 20);
    // written one at a time, each once the last was called written, until one waits for the peer
    let acked = 0;
    socket.on('error', () => {}); // the destroyed write's callback carries ERR_STREAM_DESTROYED
    for (let at = 0; at < data.length; at += 4096) {
      const chunk = data.subarray(at, at + 4096);
      const written = new Promise<boolean>((resolve) => socket.write(chunk, (err) => resolve(!err)));
      if (!(await Promise.race([written, turns(50).then(() => false)]))) break;
      acked += chunk.length;
    }
    const ackedAtDestroy = acked;
    expect(ackedAtDestroy).toBeLessThan(data.length); // the peer does not read: most of it waits
    socket.destroy();
    await once(socket, 'close');
    peer.resume();
    const parts: Buffer[] = [];
    peer.on('data', (c: Buffer) => parts.push(c));
    await once(peer, 'end');
    const received = Buffer.concat(parts);
    expect(received.length).toBeGreaterThanOrEqual(ackedAtDestroy);
    expect(received.equals(data.subarray(0, received.length))).toBe(true);
    peer.destroy();
    server.close();
  });
});

describe('RingSocket: a paused socket', () => {
  for (const [name, count] of [['a pool with room to spare', 4096], ['a pool of 16 buffers', 16]] as const) {
    it(`holds at most its highWaterMark and one chunk in JS after a burst (${name}); every byte comes, in order, once read`, async () => {
      const ring = newRing({ entries: 256, cqEntries: 8192 });
      const pool = ring.setupBufRing({ count, size: 4096 });
      const { server, peer, socket } = await connected(ring, pool);
      const other = await connected(ring, pool);
      socket.pause(); // nobody reads: the readable buffer fills to its highWaterMark (16 KiB)
      const data = randomBytes(16 << 20);
      peer.write(data);
      peer.end();
      // the kernel takes what the socket holds in bursts; JS has seen a good part of it
      await waitFor(() => socket.bytesRead >= Math.min(1 << 20, (count * pool.size) / 2), 20_000, 'a burst received');
      await turns(20);
      const held = socket.readableLength;
      if (count === 4096) expect(held).toBeLessThanOrEqual(socket.readableHighWaterMark + pool.size);
      if (count === 4096) {
        // a read below the highWaterMark copies parked chunks out only up to it again
        expect(socket.read(pool.size)).toHaveLength(pool.size);
        await turns(5);
        expect(socket.readableLength).toBeLessThanOrEqual(socket.readableHighWaterMark + pool.size);
      }
      // what the kernel took beyond it waits in the pool while the pool has room: half of it at
      // most, so the pool goes on serving other sockets
      expect(pool.heldBuffers).toBeLessThanOrEqual(count / 2 + 1);
      const got = once(other.socket, 'data');
      other.peer.write('still served');
      expect(String((await got)[0])).toBe('still served');
      // a reader takes it all, in order
      const parts: Buffer[] = count === 4096 ? [data.subarray(0, pool.size)] : [];
      socket.on('data', (c: Buffer) => parts.push(c));
      socket.resume();
      await once(socket, 'end');
      expect(Buffer.concat(parts).equals(data)).toBe(true);
      for (const s of [socket, other.socket]) s.destroy();
      for (const p of [peer, other.peer]) p.destroy();
      for (const s of [server, other.server]) s.close();
      await waitFor(() => pool.heldBuffers === 0, 10_000, 'every buffer back');
    });
  }
});
