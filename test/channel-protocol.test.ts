// The Channel as a peer written from docs/channel.md sees it: the test is the other side, with
// the shared region and the socket in its hands. Where a joiner's queue goes on (its indexes as
// it found them), its flags (set while it sleeps, cleared once it woke), the wake-up bytes (one
// per sleep it found, the flag taken with it), the tail a closing side publishes, the largest
// channel, and the indexes a join refuses. Mutants of native/channel/ that changed these and
// nothing else survived every other channel test.
import { describe, expect, it } from 'vitest';
import { Channel, close, readvSync, sendmsg, socketpair, waitFd } from '../src/index.js';
import { native } from '../src/native.js';
import { craftedRegion, HEAD, HEADER, READER_WAITING, TAIL, WRITER_WAITING } from './support/channel-region.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';

const tmp = shortTempDir('iolab-channel-protocol-');
checkLeaksAfterAll(tmp);

const CAPACITY = 4096;

/** A region laid out by the test as a creator, `edit` applied before the join; the joined
 * Channel (side 1: it reads direction 0, writes direction 1) and the test's end of the socket. */
async function joined(edit: (words: BigUint64Array, u32: Uint32Array) => void = () => {}, zeroCopy = false, capacity = CAPACITY) {
  const { memfd, mapping, words, u32 } = craftedRegion(capacity, edit);
  const [peer, mine] = socketpair('stream');
  sendmsg(peer, [Buffer.from('iolabch1')], { fds: [memfd] });
  close(memfd);
  let channel: Channel;
  try {
    channel = await Channel.join(mine, { zeroCopy });
  } catch (err) {
    close(peer);
    native.munmap(mapping);
    throw err;
  } finally {
    close(mine);
  }
  const side = {
    channel, words, u32, peer,
    queue: (d: number) => new Uint8Array(mapping, HEADER + d * capacity, capacity),
    /** The wake-up bytes that came on the test's end so far. */
    wakes() {
      let n = 0;
      const buf = Buffer.alloc(64);
      while (waitFd(peer, 'read', 0)) n += readvSync(peer, [buf]);
      return n;
    },
    /** Publishes a message into direction 0 as a writer does (without waking anyone). */
    publish(text: string) {
      const at = Number(words[HEAD(0)] % BigInt(CAPACITY));
      new Uint32Array(mapping, HEADER + at, 2).set([text.length, 0]);
      new Uint8Array(mapping, HEADER + at + 8, text.length).set(Buffer.from(text));
      words[HEAD(0)] += BigInt(8 + Math.ceil(text.length / 8) * 8);
    },
    async end() {
      await channel.close();
      close(peer);
      native.munmap(mapping);
    },
  };
  side.wakes(); // the joiner's own byte, which tells a creator its pid
  return side;
}

/** Direction 0 full of 16-byte messages, its writer (the test) asleep for room. */
function fullWithWriterWaiting(w: BigUint64Array, u32: Uint32Array): void {
  for (let at = 0; at < CAPACITY; at += 16) new Uint32Array(w.buffer, HEADER + at, 2).set([8, 0]);
  w[HEAD(0)] = BigInt(CAPACITY);
  u32[WRITER_WAITING(0)] = 1;
}

const turns = async (n = 3) => { for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r)); };

describe('Channel: what the other side sees of this one', () => {
  it('a joiner writes on from where its queue\'s indexes stand, not from 0', async () => {
    const side = await joined((w) => { w[HEAD(1)] = w[TAIL(1)] = 64n; });
    try {
      expect(side.channel.trySend(Buffer.from('abc'))).toBe(true);
      expect(side.words[HEAD(1)]).toBe(80n);
      expect([...new Uint32Array(side.queue(1).buffer, HEADER + CAPACITY + 64, 2)]).toEqual([3, 0]);
      expect(Buffer.from(side.queue(1).subarray(72, 75)).toString()).toBe('abc');
    } finally {
      await side.end();
    }
  });

  it('a writer that finds the reader asleep takes its flag and sends one wake-up byte; none while it is awake', async () => {
    const side = await joined((_w, u32) => { u32[READER_WAITING(1)] = 1; });
    try {
      for (const m of ['one', 'two', 'three']) expect(side.channel.trySend(Buffer.from(m))).toBe(true);
      expect(side.u32[READER_WAITING(1)]).toBe(0);
      expect(side.wakes()).toBe(1);
    } finally {
      await side.end();
    }
  });

  it('a reader sets its flag while it waits and clears it once woken, whoever took it', async () => {
    const side = await joined();
    try {
      const got = side.channel.receive();
      await turns();
      expect(side.u32[READER_WAITING(0)]).toBe(1);
      // a lazy writer: publishes and wakes, but leaves the flag as it was
      side.publish('hello');
      native.writev(side.peer, [Buffer.from('w')]);
      expect(Buffer.from((await got)!).toString()).toBe('hello');
      await turns();
      expect(side.u32[READER_WAITING(0)]).toBe(0);
      // awake and asked nothing: a message published now needs no wake-up (the flag says so)
      side.publish('later');
      expect(side.u32[READER_WAITING(0)]).toBe(0);
      expect(Buffer.from((await side.channel.receive())!).toString()).toBe('later');
    } finally {
      await side.end();
    }
  });

  it('a writer waiting for room sets its flag; a reader that frees the queue takes the flag and wakes it, once', async () => {
    const side = await joined();
    try {
      let sent = 0;
      while (side.channel.trySend(Buffer.alloc(8, sent))) sent++;
      expect(sent).toBe(CAPACITY / 16);
      const waiting = side.channel.send(Buffer.from('room?'));
      await turns();
      expect(side.u32[WRITER_WAITING(1)]).toBe(1);
      // the test reads everything, as a reader does, then wakes the writer it found waiting
      side.words[TAIL(1)] = side.words[HEAD(1)];
      side.u32[WRITER_WAITING(1)] = 0;
      native.writev(side.peer, [Buffer.from('w')]);
      await waiting;
      expect(side.words[HEAD(1)] - side.words[TAIL(1)]).toBe(16n);
      expect(side.u32[WRITER_WAITING(1)]).toBe(0);
    } finally {
      await side.end();
    }
  });

  it('a reader wakes a writer waiting for room once half the queue is free, not before (docs/channel.md)', async () => {
    // receive() takes every small message waiting at once; a message over half its 64 KiB slab
    // is taken alone, so 40 KiB messages free the queue one at a time: 6 fill 240 KiB of 256
    const capacity = 256 << 10;
    const record = 8 + (40 << 10);
    const side = await joined((w, u32) => {
      for (let at = 0; at + record <= capacity; at += record) new Uint32Array(w.buffer, HEADER + at, 2).set([40 << 10, 0]);
      w[HEAD(0)] = BigInt(6 * record);
      u32[WRITER_WAITING(0)] = 1;
    }, false, capacity);
    try {
      for (const left of [5, 4]) {
        expect((await side.channel.receive())?.length).toBe(40 << 10);
        expect(side.words[TAIL(0)], `${left} left`).toBe(BigInt((6 - left) * record));
        expect(side.wakes(), `${left} left: over half the queue is still taken`).toBe(0);
        expect(side.u32[WRITER_WAITING(0)]).toBe(1);
      }
      await side.channel.receive();
      expect(side.words[TAIL(0)]).toBe(BigInt(3 * record));
      expect(side.wakes()).toBe(1);
      expect(side.u32[WRITER_WAITING(0)]).toBe(0);
    } finally {
      await side.end();
    }
  });

  it('a reader that frees half the queue or more wakes a writer waiting for room, with one byte', async () => {
    // the test's writer filled direction 0 with 16-byte messages and sleeps for room
    const side = await joined(fullWithWriterWaiting);
    try {
      for (let i = 0; i < CAPACITY / 16; i++) await side.channel.receive();
      await turns();
      expect(side.words[TAIL(0)]).toBeGreaterThanOrEqual(BigInt(CAPACITY / 2));
      expect(side.u32[WRITER_WAITING(0)]).toBe(0);
      expect(side.wakes()).toBe(1);
    } finally {
      await side.end();
    }
  });

  it('a side that closes while it holds a message\'s view publishes the tail past it', async () => {
    const side = await joined((w, u32) => {
      new Uint32Array(w.buffer, HEADER, 2).set([2, 0]);
      new Uint8Array(w.buffer, HEADER + 8, 2).set(Buffer.from('hi'));
      w[HEAD(0)] = 16n;
      void u32;
    }, true);
    try {
      const view = (await side.channel.receive())!;
      expect(Buffer.from(view).toString()).toBe('hi');
      expect(side.words[TAIL(0)]).toBe(0n); // the view is the queue's bytes: not released while handed out
    } finally {
      await side.channel.close();
      expect(side.words[TAIL(0)]).toBe(16n);
      close(side.peer);
    }
  });
});

describe('Channel: the bounds of a region', () => {
  it('the largest channel, queues of 1 GiB each, is created and joined (its pages come as written)', async () => {
    const [a, b] = socketpair('stream');
    const [x, y] = await Promise.all([Channel.create(a, { capacity: 1 << 30 }), Channel.join(b)]).finally(() => {
      close(a);
      close(b);
    });
    try {
      expect([x.capacity, y.capacity]).toEqual([1 << 30, 1 << 30]);
      expect(x.trySend(Buffer.from('big'))).toBe(true);
      expect(Buffer.from((await y.receive())!).toString()).toBe('big');
    } finally {
      await Promise.all([x.close(), y.close()]);
    }
  });

  it.each([
    ['magic', (_w: BigUint64Array, _u: Uint32Array, u8: Uint8Array) => { u8[7] = 0x32; }, /does not start with the channel's magic/],
    ['version', (_w: BigUint64Array, u32: Uint32Array) => { u32[2] = 2; }, /version is not this one's/],
    ['header size', (_w: BigUint64Array, u32: Uint32Array) => { u32[3] = 8192; }, /version is not this one's/],
    ['capacity', (w: BigUint64Array) => { w[2] = 5000n; }, /capacity is not a power of two in range/],
  ] as const)('a header whose %s is not a channel\'s is refused at the join', async (_name, edit, why) => {
    await expect(joined(edit as (w: BigUint64Array, u32: Uint32Array) => void)).rejects.toMatchObject({ code: 'ERR_CHANNEL_PROTOCOL', message: expect.stringMatching(why) });
  });

  it.each([1, 9, 4095])('a queue index one past a multiple of 8 (%d) is refused at the join', async (index) => {
    for (const edit of [(w: BigUint64Array) => { w[TAIL(0)] = w[HEAD(0)] = BigInt(index); }, (w: BigUint64Array) => { w[HEAD(1)] = w[TAIL(1)] = BigInt(index); }]) {
      await expect(joined(edit)).rejects.toMatchObject({ code: 'ERR_CHANNEL_PROTOCOL', message: expect.stringMatching(/multiple of 8/) });
    }
  });
});
