// When a RingSocket's write goes to the socket inside the call (a non-blocking send, as net's
// uv_try_write) and when it goes as an SQE: at once when JS handles one event or none (an idle
// socket, one connection's request), queued while JS handles a dispatch of several (a loaded
// server: the sends go out in one submit instead of a syscall each). Either way every byte
// arrives, in order.
import { describe, expect, it } from 'vitest';
import { once } from 'node:events';
import { readvSync, socketpair, waitFd, writevSync } from '../src/index.js';
import { RingSocketDuplex as RingSocket } from '../src/ring/duplex.js';
import { ringTestSetup } from './support/ring.js';

const { newRing, track, untrack } = ringTestSetup('iolab-ring-direct-send-');

/** The `expected` text from the peer end, the loop let run meanwhile (a queued send is submitted
 * when the loop turns), for at most 1,000 turns: what came by then. */
async function received(fd: number, expected: string): Promise<string> {
  const buf = Buffer.alloc(4096);
  let text = '';
  for (let turn = 0; turn < 1000 && text.length < expected.length; turn++) {
    if (waitFd(fd, 'read', 0)) text += buf.subarray(0, readvSync(fd, [buf])).toString();
    else await new Promise((r) => setImmediate(r));
  }
  return text;
}

describe('RingSocket: a write sent inside the call', () => {
  it('outside any dispatch, and from the handler of a lone event; not from a dispatch of several, whose replies still arrive', async () => {
    const ring = newRing();
    const pool = ring.setupBufRing({ count: 16, size: 4096 });
    const pairs = [0, 1, 2].map(() => track(socketpair('stream')));
    const sockets = pairs.map(([mine]) => new RingSocket(ring, untrack(mine), { bufferRing: pool }));
    const direct = () => ring.stats.streamSendsDirect;

    // an idle socket's write: the kernel has it when write() returns
    let before = direct();
    sockets[0].write('idle');
    expect(direct() - before).toBe(1);
    expect(await received(pairs[0][1], 'idle')).toBe('idle');

    // every socket answers what it receives, from its 'data' handler
    const seen: number[] = [];
    sockets.forEach((s, i) => s.on('data', (chunk: Buffer) => {
      seen.push(i);
      s.write(`re:${chunk}`);
    }));

    // one request alone: the reply goes at once
    before = direct();
    const one = once(sockets[1], 'data');
    writevSync(pairs[1][1], [Buffer.from('a')]);
    await one;
    expect(direct() - before).toBe(1);
    expect(await received(pairs[1][1], 're:a')).toBe('re:a');

    // three requests written before the Ring's next reap come in one dispatch: the replies
    // are queued as SQEs
    seen.length = 0;
    before = direct();
    const all = Promise.all(sockets.map((s) => once(s, 'data')));
    pairs.forEach(([, peer], i) => writevSync(peer, [Buffer.from(`m${i}`)]));
    await all;
    expect(seen.sort()).toEqual([0, 1, 2]);
    expect(direct() - before).toBe(0);
    expect(await Promise.all(pairs.map(([, peer], i) => received(peer, `re:m${i}`)))).toEqual(['re:m0', 're:m1', 're:m2']);

    for (const s of sockets) s.destroy();
    await Promise.all(sockets.map((s) => once(s, 'close')));
  });
});
