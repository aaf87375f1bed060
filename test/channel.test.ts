// The shared-memory channel (src/ring/channel.ts over native/channel/) within one process, both
// sides in this thread (a worker's side: test/channel-worker.test.ts). Messages whole and in order across the ring's
// wrap, every byte checked; the views and their lifetime; backpressure; closing from either side;
// bad arguments and a socket that carries no channel. test/channel-process.test.ts has the
// child processes, the dead peer and the foreign (Python) peer.
import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { Channel, close, socketpair, memfdCreate, sendmsg, liveObjects } from '../src/index.js';
import { message } from './support/channel-region.js';
import { checkLeaksAfterAll, openFdCount } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';

const tmp = shortTempDir('iolab-channel-');
checkLeaksAfterAll(tmp);

/** Both sides of a fresh channel, the socketpair's own fds closed (each side has its copy). */
async function pair(capacity?: number): Promise<[Channel, Channel]> {
  const [a, b] = socketpair('stream');
  try {
    return await Promise.all([Channel.create(a, capacity === undefined ? undefined : { capacity }), Channel.join(b)]);
  } finally {
    close(a);
    close(b);
  }
}

describe('Channel within one process', () => {
  it('carries messages whole and in order, a list of buffers as one message, an empty one too', async () => {
    const [x, y] = await pair();
    expect(x.capacity).toBe(4 << 20);
    expect(x.maxMessageBytes).toBe((2 << 20) - 8);
    expect(x.trySend(Buffer.from('one'))).toBe(true);
    await x.send([Buffer.from('two '), new Uint8Array([0x70, 0x61, 0x72, 0x74, 0x73]), new DataView(new ArrayBuffer(0))]);
    await x.send(new Uint8Array(0));
    expect(Buffer.from((await y.receive())!).toString()).toBe('one');
    expect(Buffer.from((await y.receive())!).toString()).toBe('two parts');
    expect((await y.receive())!.length).toBe(0);
    // and the other way
    y.trySend(Buffer.from('back'));
    expect(Buffer.from((await x.receive())!).toString()).toBe('back');
    await x.close();
    expect(await y.receive()).toBeNull();
    expect(y.closed).toBe(true);
    await y.close();
  });

  it('across many wraps of a small ring: 5,000 messages of random sizes, every byte checked, the writer waiting for room', async () => {
    const [x, y] = await pair(4096);
    const sizes = Array.from({ length: 5000 }, (_, i) => (i % 97 === 0 ? x.maxMessageBytes : randomBytes(2).readUInt16LE() % 700));
    let waited = 0;
    const writer = (async () => {
      for (let i = 0; i < sizes.length; i++) {
        const m = message(i, sizes[i]);
        if (!x.trySend(m)) {
          waited++;
          await x.send(m);
        }
      }
      await x.close();
    })();
    let i = 0;
    for await (const view of y) {
      expect(view.length).toBe(sizes[i]);
      expect(Buffer.compare(view, message(i, sizes[i]))).toBe(0);
      i++;
    }
    await writer;
    expect(i).toBe(sizes.length);
    expect(waited).toBeGreaterThan(0);
  });

  it("'message' listeners get every message as a view valid while they run; removing the last lets the process idle", async () => {
    const [x, y] = await pair(8192);
    const got: string[] = [];
    const listener = (view: Uint8Array) => got.push(Buffer.from(view).toString());
    y.on('message', listener);
    for (let i = 0; i < 300; i++) await x.send(Buffer.from(`m${i}`));
    while (got.length < 300) await new Promise((r) => setImmediate(r));
    expect(got).toEqual(Array.from({ length: 300 }, (_, i) => `m${i}`));
    await expect(y.receive()).rejects.toMatchObject({ code: 'ERR_CHANNEL_BUSY', message: expect.stringMatching(/gives its messages to its 'message' listeners/) });
    expect(liveObjects().ringOps).toBe(1); // y asleep: its Ring's recv keeps the process alive
    y.off('message', listener);
    // nothing waits now: the recv was cancelled, so the process could end
    await new Promise((r) => setTimeout(r, 50));
    expect(liveObjects().ringOps).toBe(0);
    x.trySend(Buffer.from('later'));
    expect(Buffer.from((await y.receive())!).toString()).toBe('later');
    await Promise.all([x.close(), y.close()]);
  });

  it("on/once/off: 'message', 'error' and 'close' only; a once listener runs once and can be removed by its function", async () => {
    const [x, y] = await pair(4096);
    const on = y.on.bind(y) as (event: string, listener: unknown) => void;
    expect(() => on('data', () => {})).toThrow(expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_VALUE',
      message: "The \"event\" argument must be one of 'message', 'error', 'close'. Received data" }));
    expect(() => on('message', 'f')).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE', message: 'The "listener" argument must be of type function. Received type string' }));
    const got: string[] = [];
    const removed = () => got.push('removed');
    y.once('message', removed);
    y.off('message', removed); // never called: off finds the once wrapper by the function
    y.once('message', (view) => got.push(`once ${Buffer.from(view).toString()}`));
    y.on('message', (view) => got.push(Buffer.from(view).toString()));
    for (const word of ['a', 'b']) x.trySend(Buffer.from(word));
    while (got.length < 3) await new Promise((r) => setImmediate(r));
    expect(got).toEqual(['once a', 'a', 'b']);
    await Promise.all([x.close(), y.close()]);
  });

  it('a second receive() while one waits is refused (ERR_CHANNEL_BUSY); the first gets the next message', async () => {
    const [x, y] = await pair(4096);
    const first = y.receive();
    await expect(y.receive()).rejects.toMatchObject({ code: 'ERR_CHANNEL_BUSY', message: 'a receive() is already waiting: ask for the next message once the last one came' });
    x.trySend(Buffer.from('to the first'));
    expect(Buffer.from((await first)!).toString()).toBe('to the first');
    await Promise.all([x.close(), y.close()]);
  });

  it('zeroCopy: a view is valid until the next receive, and close() detaches every view', async () => {
    const [a, b] = socketpair('stream');
    const [x, y] = await Promise.all([Channel.create(a, { capacity: 4096 }), Channel.join(b, { zeroCopy: true })]);
    close(a);
    close(b);
    x.trySend(Buffer.from('first'));
    const first = (await y.receive())!;
    expect(Buffer.from(first).toString()).toBe('first');
    expect(first.buffer.byteLength).toBe(4096 + 2 * 4096); // a view into the mapped region: no copy
    await y.close();
    expect(first.length).toBe(0);
    expect(first.buffer.byteLength).toBe(0);
    await x.close();
  });

  it('send waits for room and resolves in order once the reader frees it; nothing is copied while it waits', async () => {
    const [x, y] = await pair(4096);
    // two of the largest fill a fresh ring (each is half of it)
    expect(x.trySend(Buffer.alloc(x.maxMessageBytes, 1))).toBe(true);
    expect(x.trySend(Buffer.alloc(x.maxMessageBytes, 2))).toBe(true);
    const pending = [x.send(Buffer.alloc(x.maxMessageBytes, 3)), x.send(Buffer.from('after'))];
    expect(x.trySend(Buffer.from('x'))).toBe(false); // sends wait: no overtaking
    let settled = 0;
    for (const p of pending) void p.then(() => settled++);
    await new Promise((r) => setTimeout(r, 30));
    expect(settled).toBe(0);
    expect((await y.receive())![0]).toBe(1);
    expect((await y.receive())![0]).toBe(2);
    expect((await y.receive())![0]).toBe(3);
    expect(Buffer.from((await y.receive())!).toString()).toBe('after');
    await Promise.all(pending);
    await Promise.all([x.close(), y.close()]);
  });

  it('a list handed to send() and changed while it waits (an element made null): that send rejects with ERR_INVALID_ARG_TYPE once room comes; nothing throws, the channel goes on', async () => {
    const [x, y] = await pair(4096);
    expect(x.trySend(Buffer.alloc(x.maxMessageBytes, 1))).toBe(true);
    expect(x.trySend(Buffer.alloc(x.maxMessageBytes, 2))).toBe(true);
    const list: (Buffer | null)[] = [Buffer.from('a'), Buffer.from('b')];
    const outcome = x.send(list as Buffer[]).then(() => 'sent', (e: { code?: string }) => e.code);
    const next = x.send(Buffer.from('next')).then(() => 'sent'); // waits behind it
    list[1] = null;
    await new Promise((r) => setImmediate(r)); // its wait for room begins
    expect((await y.receive())![0]).toBe(1);
    expect((await y.receive())![0]).toBe(2);
    expect(await outcome).toBe('ERR_INVALID_ARG_TYPE');
    expect(await next).toBe('sent'); // in the same flush: the refusal stops no other send
    expect(Buffer.from((await y.receive())!).toString()).toBe('next');
    await x.send(Buffer.from('after'));
    expect(Buffer.from((await y.receive())!).toString()).toBe('after');
    await Promise.all([x.close(), y.close()]);
  });

  it('trySendMany copies in order until one does not fit; sendMany waits for room, in order with send; a bad message throws with the count sent before it', async () => {
    const [x, y] = await pair(4096);
    const half = x.maxMessageBytes; // two fill the ring
    // records of 108 and 2,000 bytes fit the 4,096; the third's 2,048 does not
    const list = [Buffer.alloc(100, 1), Buffer.alloc(half - 48, 2), Buffer.alloc(half, 3), Buffer.alloc(10, 4)];
    expect(x.trySendMany(list)).toBe(2); // the third does not fit now: nothing of it copied
    const rest = x.sendMany(list.slice(2));
    const after = x.send(Buffer.from('after'));
    expect(x.trySendMany([Buffer.from('x')])).toBe(0); // sends wait: no overtaking
    expect(x.trySend(Buffer.from('x'))).toBe(false);
    const got: number[] = [];
    for (let i = 0; i < 5; i++) got.push((await y.receive())![0]);
    await Promise.all([rest, after]);
    expect(got).toEqual([1, 2, 3, 4, 'a'.charCodeAt(0)]);
    // each message whole, a list of views as one message, an empty one too
    expect(x.trySendMany([[Buffer.from('ga'), Buffer.from('thered')], new Uint8Array(0)])).toBe(2);
    expect(Buffer.from((await y.receive())!).toString()).toBe('gathered');
    expect((await y.receive())!.length).toBe(0);
    // a message that is no view, or too long: those before it are sent, err.sent says how many
    expect(() => x.trySendMany([Buffer.from('ok'), 'text' as never, Buffer.from('never')])).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE', sent: 1, message: expect.stringContaining('"messages[1]"') }));
    await expect(x.sendMany([Buffer.from('ok2'), Buffer.alloc(half + 1)])).rejects.toMatchObject({ code: 'ERR_OUT_OF_RANGE', sent: 1 });
    expect(Buffer.from((await y.receive())!).toString()).toBe('ok');
    expect(Buffer.from((await y.receive())!).toString()).toBe('ok2');
    // one found once room came: the count takes in what the first try sent too
    expect(x.trySend(Buffer.alloc(half - 48, 5))).toBe(true);
    const waited = x.sendMany([Buffer.alloc(100, 6), Buffer.alloc(half, 7), Buffer.alloc(half + 1)]); // the first goes; the second waits
    const failed = waited.catch((err: unknown) => err);
    expect((await y.receive())![0]).toBe(5); // room: the second goes, the third fails
    expect(await failed).toMatchObject({ code: 'ERR_OUT_OF_RANGE', sent: 2 });
    expect([(await y.receive())![0], (await y.receive())![0]]).toEqual([6, 7]);
    expect(() => x.trySendMany('no list' as never)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
    await Promise.all([x.close(), y.close()]);
  });

  it("'message' listeners get at most 1,024 messages a loop turn: 3,000 waiting do not hold up an immediate set before them; all come, in order", async () => {
    const [x, y] = await pair(1 << 20);
    for (let i = 0; i < 3000; i++) expect(x.trySend(Buffer.from([i & 0xff, i >> 8]))).toBe(true);
    const got: number[] = [];
    let atImmediate = -1;
    const all = new Promise<void>((resolve) => y.on('message', (m) => {
      got.push(m[0] | (m[1] << 8));
      if (got.length === 3000) resolve();
    }));
    setImmediate(() => (atImmediate = got.length));
    await all;
    expect(atImmediate).toBeGreaterThan(0);
    expect(atImmediate).toBeLessThanOrEqual(2048);
    expect(got).toEqual(Array.from({ length: 3000 }, (_, i) => i));
    await Promise.all([x.close(), y.close()]);
  });

  it("a 'message' listener's message is lent: valid while the listener runs, its bytes reused by later ones; receive() gives copies of their own", async () => {
    const [x, y] = await pair(4096);
    const lent: Uint8Array[] = [];
    const copies: string[] = [];
    y.on('message', (m) => {
      lent.push(m);
      copies.push(Buffer.from(m).toString());
    });
    const words = Array.from({ length: 40 }, (_, i) => `word ${i} `.repeat(1 + (i % 5)));
    for (const w of words) await x.send(Buffer.from(w));
    while (copies.length < words.length) await new Promise((r) => setImmediate(r));
    expect(copies).toEqual(words);
    // one pool for all of them: a copy of each cost no allocation of its own
    expect(new Set(lent.map((m) => m.buffer)).size).toBe(1);
    await Promise.all([x.close(), y.close()]);
    expect(lent.every((m) => m.length === 0)).toBe(true); // close() leaves every view empty
  });

  it("a listener that leaves mid-batch: receive() gets the rest as copies of their own, which the listeners' next batch leaves as they were", async () => {
    const [x, y] = await pair(8192);
    for (let i = 0; i < 5; i++) expect(x.trySend(Buffer.from(`first ${i}`))).toBe(true);
    let lentBuffer: ArrayBufferLike | undefined;
    const leave = (m: Uint8Array) => {
      lentBuffer = m.buffer;
      y.off('message', leave); // the other four were taken in the same batch
    };
    y.on('message', leave);
    while (lentBuffer === undefined) await new Promise((r) => setImmediate(r));
    const rest: Uint8Array[] = [];
    for (let i = 1; i < 5; i++) rest.push((await y.receive())!);
    const text = (ms: Uint8Array[]) => ms.map((m) => Buffer.from(m).toString());
    expect(text(rest)).toEqual(['first 1', 'first 2', 'first 3', 'first 4']);
    expect(rest.filter((m) => m.buffer === lentBuffer)).toEqual([]);
    let seen = 0;
    y.on('message', () => seen++);
    for (let i = 0; i < 5; i++) x.trySend(Buffer.from(`LATER ${i}`));
    while (seen < 5) await new Promise((r) => setImmediate(r));
    expect(text(rest)).toEqual(['first 1', 'first 2', 'first 3', 'first 4']);
    await Promise.all([x.close(), y.close()]);
    expect(text(rest)).toEqual(['first 1', 'first 2', 'first 3', 'first 4']); // close() leaves copies whole
  });

  it('options.spin: microseconds from 0 to 1000, else a TypeError or RangeError; 0 sleeps at once', async () => {
    const [a, b] = socketpair('stream');
    await expect(Channel.create(a, { spin: -1 })).rejects.toMatchObject({ name: 'RangeError', code: 'ERR_OUT_OF_RANGE', message: expect.stringMatching(/options\.spin/) });
    await expect(Channel.join(b, { spin: '5' as never })).rejects.toMatchObject({ name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' });
    await expect(Channel.join(b, { spin: 1001 })).rejects.toMatchObject({ code: 'ERR_OUT_OF_RANGE' });
    const [x, y] = await Promise.all([Channel.create(a, { capacity: 4096, spin: 0 }), Channel.join(b, { spin: 1000 })]);
    close(a);
    close(b);
    for (let i = 0; i < 50; i++) {
      const back = y.receive();
      x.trySend(Buffer.from([i]));
      expect((await back)![0]).toBe(i);
      const reply = x.receive();
      y.trySend(Buffer.from([i + 1]));
      expect((await reply)![0]).toBe(i + 1);
    }
    await Promise.all([x.close(), y.close()]);
  });

  it('an empty message that waits for room is sent once room comes', async () => {
    const [x, y] = await pair(4096);
    x.trySend(Buffer.alloc(x.maxMessageBytes));
    x.trySend(Buffer.alloc(x.maxMessageBytes));
    const sent = x.send(new Uint8Array(0)); // 8 bytes of record, none of payload
    expect((await y.receive())!.length).toBe(x.maxMessageBytes);
    expect((await y.receive())!.length).toBe(x.maxMessageBytes);
    await sent;
    expect((await y.receive())!.length).toBe(0);
    await Promise.all([x.close(), y.close()]);
  });

  it('a side already asleep for messages that starts waiting for room is woken when room comes', async () => {
    const [x, y] = await pair(4096);
    x.on('message', () => {}); // x sleeps for messages from here on
    await new Promise((r) => setTimeout(r, 20));
    while (x.trySend(Buffer.alloc(1000)));
    const last = Buffer.alloc(1000, 9);
    const sent = x.send(last); // waits: 4 of 1,008 bytes fill the ring
    for (let i = 0; i < 4; i++) await y.receive(); // room, and no message back to wake x with
    await sent;
    expect(Buffer.compare((await y.receive())!, last)).toBe(0);
    await Promise.all([x.close(), y.close()]);
  });

  it('close() ends waiting sends with ERR_CHANNEL_CLOSED and a waiting receive with null; later calls say closed', async () => {
    const [x, y] = await pair(4096);
    x.trySend(Buffer.alloc(x.maxMessageBytes));
    x.trySend(Buffer.alloc(x.maxMessageBytes));
    const waiting = expect(x.send(Buffer.alloc(x.maxMessageBytes))).rejects.toMatchObject({ code: 'ERR_CHANNEL_CLOSED', message: 'the channel is closed' });
    const receiving = x.receive();
    await x.close();
    await waiting;
    expect(await receiving).toBeNull();
    expect(() => x.trySend(Buffer.from('x'))).toThrow(expect.objectContaining({ code: 'ERR_CHANNEL_CLOSED' }));
    await expect(x.send(Buffer.from('x'))).rejects.toMatchObject({ code: 'ERR_CHANNEL_CLOSED' });
    expect(await x.receive()).toBeNull();
    await x.close(); // idempotent
    // the other side reads what was sent before the close, then the end; its sends now fail
    expect((await y.receive())!.length).toBe(y.maxMessageBytes);
    expect((await y.receive())!.length).toBe(y.maxMessageBytes);
    expect(await y.receive()).toBeNull();
    expect(() => y.trySend(Buffer.from('x'))).toThrow(expect.objectContaining({ code: 'ERR_CHANNEL_CLOSED' }));
    await y.close();
  });

  it("the other side's close ends a waiting receive and a waiting send on this side", async () => {
    const [x, y] = await pair(4096);
    const receiving = y.receive();
    y.trySend(Buffer.alloc(y.maxMessageBytes));
    y.trySend(Buffer.alloc(y.maxMessageBytes));
    const sending = y.send(Buffer.alloc(y.maxMessageBytes)).catch((err: unknown) => err);
    const closed = new Promise<void>((r) => y.once('close', () => r()));
    await x.close();
    expect(await receiving).toBeNull();
    const err = await sending;
    expect(err).toMatchObject({ code: 'ERR_CHANNEL_CLOSED', message: 'the other side closed the channel' });
    expect(err).not.toHaveProperty('sent'); // a count is sendMany's alone
    await closed;
    expect(y.closed).toBe(true);
  });

  it("a send made after the other side closed fails with ERR_CHANNEL_CLOSED on every path, while this side waited for nothing", async () => {
    // y never waits, so no wake-up tells it: the send itself must see the other side's flag
    const [x, y] = await pair(4096);
    x.trySend(Buffer.from('before'));
    await x.close();
    const closedByPeer = { code: 'ERR_CHANNEL_CLOSED', message: 'the other side closed the channel' };
    expect(() => y.trySend(Buffer.from('late'))).toThrow(expect.objectContaining(closedByPeer));
    await expect(y.send(Buffer.from('late'))).rejects.toMatchObject(closedByPeer);
    await expect(y.send([Buffer.from('la'), Buffer.from('te')])).rejects.toMatchObject(closedByPeer);
    expect(() => y.trySendMany([Buffer.from('late'), Buffer.from('r')])).toThrow(expect.objectContaining({ ...closedByPeer, sent: 0 }));
    await expect(y.sendMany([Buffer.from('late')])).rejects.toMatchObject(closedByPeer);
    // what x sent before its close still comes, then the end
    expect(Buffer.from((await y.receive())!).toString()).toBe('before');
    expect(await y.receive()).toBeNull();
    await y.close();
  });

  it('refuses bad arguments with Node-style errors, creating nothing', async () => {
    const [a, b] = socketpair('stream');
    const [s1, s2] = socketpair('seqpacket');
    const before = liveObjects();
    await expect(Channel.create(a, { capacity: 5000 })).rejects.toMatchObject({ name: 'RangeError', code: 'ERR_OUT_OF_RANGE', message: expect.stringMatching(/options\.capacity.*power of two/) });
    await expect(Channel.create(a, { capacity: 1024 })).rejects.toMatchObject({ code: 'ERR_OUT_OF_RANGE' });
    await expect(Channel.create(a, 'big' as never)).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_TYPE', message: 'The "options" argument must be of type object. Received type string (\'big\')' });
    await expect(Channel.create(s1)).rejects.toMatchObject({ name: 'TypeError', code: 'ERR_INVALID_ARG_VALUE', message: expect.stringMatching(/Unix stream socket/) });
    const memfd = memfdCreate('not-a-socket');
    await expect(Channel.create(memfd)).rejects.toMatchObject({ code: 'ENOTSOCK', syscall: 'getsockopt' });
    await expect(Channel.create(-1)).rejects.toMatchObject({ code: 'ERR_OUT_OF_RANGE' });
    const [x, y] = await pair(4096);
    expect(() => x.trySend('text' as never)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
    expect(() => x.trySend(Buffer.alloc(x.maxMessageBytes + 1))).toThrow(expect.objectContaining({ name: 'RangeError', code: 'ERR_OUT_OF_RANGE' }));
    await expect(x.send([Buffer.alloc(x.maxMessageBytes), Buffer.alloc(1)])).rejects.toMatchObject({ code: 'ERR_OUT_OF_RANGE' });
    await Promise.all([x.close(), y.close()]);
    expect(liveObjects()).toEqual(before);
    for (const fd of [a, b, s1, s2, memfd]) close(fd);
  });

  it('options of null are the defaults, as undefined is (both sides)', async () => {
    const [a, b] = socketpair('stream');
    try {
      const [x, y] = await Promise.all([Channel.create(a, null as never), Channel.join(b, null as never)]);
      expect(x.capacity).toBe(4 << 20); // docs/channel.md's default
      x.trySend(Buffer.from('defaults'));
      expect(Buffer.from((await y.receive())!).toString()).toBe('defaults');
      await Promise.all([x.close(), y.close()]);
    } finally {
      close(a);
      close(b);
    }
  });

  it('join: a socket that carries no channel, or one closed before it did, fails with ERR_CHANNEL_PROTOCOL', async () => {
    const [a, b] = socketpair('stream');
    sendmsg(a, [Buffer.from('hello, not a channel')]);
    await expect(Channel.join(b)).rejects.toMatchObject({ code: 'ERR_CHANNEL_PROTOCOL', message: expect.stringMatching(/not a channel/) });
    const [c, d] = socketpair('stream');
    const memfd = memfdCreate('unsealed');
    sendmsg(c, [Buffer.from('iolabch1')], { fds: [memfd] });
    await expect(Channel.join(d)).rejects.toMatchObject({ code: 'ERR_CHANNEL_PROTOCOL', message: expect.stringMatching(/not sealed/) });
    close(c);
    await expect(Channel.join(d)).rejects.toMatchObject({ code: 'ERR_CHANNEL_PROTOCOL', message: expect.stringMatching(/closed the socket before/) });
    for (const fd of [a, b, d, memfd]) close(fd);
  });
});

describe('Many channels', () => {
  it("1,000 channels in one thread share one Ring: one fd each side (its socket copy), all of them waiting at once", async () => {
    const fdsBefore = openFdCount();
    const pairs: [Channel, Channel][] = [];
    for (let i = 0; i < 1000; i++) pairs.push(await pair(4096));
    // per side: its copy of the socket (the pair's own fds are closed); one io_uring fd in all
    expect(openFdCount() - fdsBefore).toBe(2 * 1000 + 1);
    expect(liveObjects()).toMatchObject({ rings: 1, mappings: 2 * 1000 });
    const got = pairs.map(([, y]) => y.receive()); // 1,000 receives asleep on the one Ring
    await new Promise((r) => setTimeout(r, 20));
    expect(liveObjects().ringOps).toBe(1000);
    pairs.forEach(([x], i) => x.trySend(Buffer.from(`to ${i}`)));
    expect((await Promise.all(got)).map((m) => Buffer.from(m!).toString())).toEqual(pairs.map((_, i) => `to ${i}`));
    await Promise.all(pairs.flat().map((c) => c.close()));
    expect(liveObjects()).toMatchObject({ rings: 0, ringOps: 0, mappings: 0 });
    expect(openFdCount()).toBe(fdsBefore);
  }, 60_000);
});
