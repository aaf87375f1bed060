// The Channel's bounds against what mutants of native/channel/ showed no test reached: a record
// whose header sits inside the queue but whose body runs past the queue's end (the one check that
// stops it could be removed and every channel test passed), the other ways a published record
// can be one the writer cannot have made, each refused with ERR_CHANNEL_PROTOCOL and no view
// outside the queue; random peers that walk their head to the queue's end before breaking a
// record there; and a peer that races this side's sleeps for thousands of rounds, so a wake-up
// this side fails to send, or a sleep that misses a message, shows as a round that never ends.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { Channel, close, socketpair, sendmsg } from '../src/index.js';
import { native, projectRoot } from '../src/native.js';
import { craftedRegion, HEAD, HEADER, TAIL } from './support/channel-region.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { buildFixture, shortTempDir } from './support/temp.js';

const tmp = shortTempDir('iolab-channel-bounds-');
checkLeaksAfterAll(tmp);

const MESSAGE = 0;
const PADDING = 1;

/** A sealed region as a creator lays it out, its direction 0 (the one the joiner reads) holding
 * tail and head as given and a record header { length, kind } at the tail. */
function regionWithRecord(capacity: number, tail: number, head: number, length: number, kind: number) {
  return craftedRegion(capacity, (words, u32, u8) => {
    words[HEAD(0)] = BigInt(head);
    words[TAIL(0)] = BigInt(tail);
    const at = (HEADER + (tail % capacity)) / 4;
    u32[at] = length;
    u32[at + 1] = kind;
    // what a reader past the queue's end would hand out: the other queue's first bytes, marked
    u8.fill(0xee, HEADER + capacity, HEADER + capacity + 16);
  });
}

async function joinPassed(memfd: number, zeroCopy: boolean): Promise<Channel> {
  const [a, b] = socketpair('stream');
  try {
    sendmsg(a, [Buffer.from('iolabch1')], { fds: [memfd] });
    return await Channel.join(b, { zeroCopy });
  } finally {
    close(a);
    close(b);
  }
}

describe('Channel: a published record the writer cannot have made is refused, never handed out', () => {
  const capacity = 4096;
  const cases: [string, number, number, number, number][] = [
    // [what, tail, head, length, kind]
    ['its header in the last 8 bytes, its body past the queue\'s end', capacity - 8, capacity + 8, 8, MESSAGE],
    ['16 bytes before the end, 24 bytes long', capacity - 16, capacity + 16, 24, MESSAGE],
    ['a head more than a queue ahead of the tail', 0, capacity + 8, 8, MESSAGE],
    ['a kind that is neither a message nor padding', 0, 16, 8, 2],
    ['padding that stops short of the queue\'s end', 0, 32, 8, PADDING],
    ['padding that runs past the queue\'s end', capacity - 16, capacity + 16, 16, PADDING],
  ];
  it.each(cases)('%s: receive() fails with ERR_CHANNEL_PROTOCOL, copies and views alike', async (_what, tail, head, length, kind) => {
    const region = regionWithRecord(capacity, tail, head, length, kind);
    try {
      for (const zeroCopy of [false, true]) {
        const channel = await joinPassed(region.memfd, zeroCopy);
        try {
          const got = await channel.receive().then((m) => ({ message: m && Buffer.from(m).toString('hex') }), (err) => err);
          expect(got, `zeroCopy ${zeroCopy}`).toMatchObject({ code: 'ERR_CHANNEL_PROTOCOL' });
          expect(channel.closed).toBe(true);
        } finally {
          await channel.close();
        }
      }
    } finally {
      native.munmap(region.mapping);
      close(region.memfd);
    }
  });

  it("a padding record that ends at the queue's end, then a message at 0: the message, whole", async () => {
    // the valid neighbour of the cases above, so they fail for the break alone
    const region = regionWithRecord(capacity, capacity - 16, capacity + 16, 8, PADDING);
    const u8 = new Uint8Array(region.mapping);
    new Uint32Array(region.mapping, HEADER, 2).set([3, MESSAGE]);
    u8.set(Buffer.from('abc'), HEADER + 8);
    try {
      const channel = await joinPassed(region.memfd, true);
      try {
        expect(Buffer.from((await channel.receive())!).toString()).toBe('abc');
      } finally {
        await channel.close();
      }
    } finally {
      native.munmap(region.mapping);
      close(region.memfd);
    }
  });
});

describe('Channel against peers that walk to the queue\'s end and break a record there', () => {
  const peerScript = join(projectRoot, 'test/fixtures/channel-hostile-peer.py');
  const runs = Number(process.env.IOLAB_FUZZ_RUNS ?? 16);
  const seed = Number(process.env.IOLAB_FUZZ_SEED ?? 90_417);
  const record = fc.tuple(fc.constant('record'), fc.oneof(fc.integer({ min: 0, max: 200 }), fc.constantFrom(0xfffffff8)), fc.constantFrom(0, 0, 1, 2), fc.constantFrom(1, 1, 2));
  // the creating peer's head and tail start 8 to 64 bytes before the end of the queue it writes
  // (aligned, so the join takes them), then it publishes records of any length and kind there
  const plan = fc.record({
    before: fc.constantFrom(8, 16, 24, 64),
    capacity: fc.constantFrom(4096, 8192),
    // views are what can be checked against the queue's bounds: most runs take them
    zeroCopy: fc.constantFrom(true, true, true, false),
    steps: fc.tuple(record, fc.array(fc.oneof(record, fc.tuple(fc.constant('send'), fc.integer({ min: 0, max: 40 }))), { maxLength: 3 }))
      .map(([first, rest]) => [first, ...rest]),
  });

  it(`${runs} peers from seed ${seed}: each message the peer's, or ERR_CHANNEL_PROTOCOL; no view leaves the queue`, async () => {
    await fc.assert(fc.asyncProperty(plan, async (p) => {
      const end = `cap-${p.before}`;
      const peerPlan = { role: 'create', capacity: p.capacity, helloPieces: 1, helloFds: 1, steps: p.steps,
        prelude: [['poke', 'out_head', 'abs', end], ['poke', 'out_tail', 'abs', end]] };
      const [mine, theirs] = socketpair('stream');
      const child = spawn('python3', ['-S', peerScript, JSON.stringify(peerPlan)], { stdio: ['ignore', 'ignore', 'pipe', theirs] });
      let stderr = '';
      child.stderr!.on('data', (d) => (stderr += d));
      const exited = once(child, 'exit');
      close(theirs);
      const channel = await Channel.join(mine, { zeroCopy: p.zeroCopy }).finally(() => close(mine));
      try {
        for (;;) {
          let m: Uint8Array | null;
          try {
            m = await channel.receive();
          } catch (err) {
            expect((err as { code?: string }).code).toMatch(/^ERR_CHANNEL_(PROTOCOL|PEER_GONE)$/);
            break;
          }
          if (m === null) break;
          if (p.zeroCopy) {
            expect(m.byteOffset).toBeGreaterThanOrEqual(HEADER);
            expect(m.byteOffset + m.length).toBeLessThanOrEqual(HEADER + p.capacity);
          }
          // nothing from the other queue (or past the mapping) is ever a message's bytes
          expect(m.length).toBeLessThanOrEqual(channel.maxMessageBytes);
        }
      } finally {
        await channel.close();
        await exited;
      }
      expect(stderr).not.toMatch(/Traceback/);
    }), { seed, numRuns: runs });
  }, 60_000);
});

describe('Channel against a peer that races its sleeps', () => {
  /** Starts test/fixtures/channel-racing-peer.c in `mode` on a fresh channel (this side creates it). */
  async function racing(rounds: number, mode: 'pingpong' | 'drain') {
    const program = buildFixture(tmp.path, 'channel-racing-peer');
    const [mine, theirs] = socketpair('stream');
    const child = spawn(program, [String(rounds), mode], { stdio: ['ignore', 'ignore', 'pipe', theirs] });
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr += d));
    const exited = (once(child, 'exit') as Promise<[number | null, string | null]>).then(([code]) => ({ code, stderr: stderr.trim() }));
    close(theirs);
    const channel = await Channel.create(mine, { capacity: 4096 }).finally(() => close(mine));
    return { channel, exited };
  }

  it('20,000 rounds of ping-pong with a C peer that publishes as this side goes to sleep, and sleeps as it publishes: no wake-up lost either way', async () => {
    const rounds = 20_000;
    const { channel, exited } = await racing(rounds, 'pingpong');
    let echoed = 0;
    const echo = (async () => {
      for await (const m of channel) {
        if (!channel.trySend(m)) await channel.send(m);
        echoed++;
      }
    })().catch((err: Error) => err); // the peer's exit ends a receive that waits: its code says why
    // 3: its message sat unread with this side asleep; 4: this side's reply came with no wake-up
    expect(await exited).toEqual({ code: 0, stderr: '' });
    await echo;
    await channel.close();
    expect(echoed).toBe(rounds);
  }, 60_000);

  it('20,000 messages of 1 to 2 KiB through a 4 KiB queue (one fits at a time, mostly) to a C peer that frees room as this side goes to sleep for it: none lost, no wake-up missed', async () => {
    const rounds = 20_000;
    const { channel, exited } = await racing(rounds, 'drain');
    const sends = (async () => {
      for (let i = 0; i < rounds; i++) {
        const m = Buffer.alloc(1000 + ((i * 37) % 1040));
        for (let j = 0; j < m.length; j++) m[j] = (i * 7 + j) & 0xff;
        if (!channel.trySend(m)) await channel.send(m);
      }
    })().catch((err: Error) => err);
    // 5: this side slept for room with its queue empty, the peer's tail past everything it sent
    expect(await exited).toEqual({ code: 0, stderr: '' });
    expect(await sends).toBeUndefined();
    await channel.close();
  }, 60_000);
});
