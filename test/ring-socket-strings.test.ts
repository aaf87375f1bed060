// RingSocket writes strings as net.Socket does: a differential search over writes of strings in
// every encoding Writable takes (UTF-8 and Latin-1 encoded by the addon, the rest through
// Buffer.from) and Buffers, lone surrogates and characters past Latin-1 included, some corked
// together (one _writev), some past what the socket takes at once: the peer reads the same bytes
// from both, and bytesWritten says the same number.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import net from 'node:net';
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { RingSocketDuplex as RingSocket } from '../src/ring/duplex.js';
import { ringTestSetup } from './support/ring.js';

const { newRing, track, untrack } = ringTestSetup('iolab-ring-socket-strings-');
const ENCODINGS = ['utf8', 'utf-8', 'latin1', 'binary', 'ascii', 'hex', 'base64', 'base64url', 'ucs2', 'utf16le'] as const;

type Write = { data: string | Uint8Array; encoding: (typeof ENCODINGS)[number]; corked: boolean };

const write = fc.record({
  data: fc.oneof(
    fc.string({ unit: 'binary', maxLength: 40 }),
    fc.string({ unit: fc.constantFrom('a', 'é', 'ÿ', 'Ā', '€', '\ud800', '\udfff', '😀', '\0'), maxLength: 40 }),
    fc.uint8Array({ maxLength: 40 }),
    // past what a 16 KiB send buffer takes at once: the rest waits in the stream's queue
    fc.constantFrom('x'.repeat(300_000), 'ü€'.repeat(100_000)),
  ),
  encoding: fc.constantFrom(...ENCODINGS),
  corked: fc.boolean(),
}).map((w): Write => (
  // hex of an odd length aborts node 20's own net.Socket in a corked write (StringBytes'
  // assertion): hex strings here are whole bytes
  w.encoding === 'hex' && typeof w.data === 'string' ? { ...w, data: Buffer.from(w.data).toString('hex') } : w
));

/** Writes `writes` to `socket` (corked runs as one uncork), ends it; resolves with bytesWritten. */
async function play(socket: net.Socket | RingSocket, writes: Write[]): Promise<number> {
  for (const w of writes) {
    if (w.corked && !socket.writableCorked) socket.cork();
    if (!w.corked && socket.writableCorked) socket.uncork();
    if (typeof w.data === 'string') (socket as Writable).write(w.data, w.encoding);
    else socket.write(w.data);
  }
  if (socket.writableCorked) socket.uncork();
  socket.end();
  await once(socket, 'finish');
  return socket.bytesWritten;
}

describe('RingSocket: strings as net.Socket writes them', () => {
  it('the same bytes reach the peer, and bytesWritten says the same, for any writes of strings and Buffers', async () => {
    const ring = newRing();
    const pool = ring.setupBufRing({ count: 16, size: 4096 });
    const server = net.createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as net.AddressInfo).port;
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(write, { maxLength: 12 }), async (writes) => {
        runs++;
        const accepted = once(server, 'connection');
        const fd = track(await ring.socket('inet', 'stream'));
        await ring.connect(fd, { host: '127.0.0.1', port });
        const ringPeer = (await accepted)[0] as net.Socket;
        const socket = new RingSocket(ring, untrack(fd), { bufferRing: pool });
        const netAccepted = once(server, 'connection');
        const client = net.connect(port, '127.0.0.1');
        await once(client, 'connect');
        const netPeer = (await netAccepted)[0] as net.Socket;
        const [ringBytes, netBytes, ringRead, netRead] = await Promise.all([
          play(socket, writes), play(client, writes), buffer(ringPeer), buffer(netPeer),
        ]);
        expect(ringRead.equals(netRead)).toBe(true);
        expect(ringBytes).toBe(netBytes);
        expect(ringBytes).toBe(netRead.length);
        socket.destroy();
        client.destroy();
        ringPeer.destroy();
        netPeer.destroy();
      }),
      { numRuns: 60 },
    );
    expect(runs).toBe(60);
    server.close();
  });
});
