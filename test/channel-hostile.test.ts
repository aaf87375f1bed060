// The Channel against a side that breaks the layout on purpose (docs/channel.md's trust rule:
// shared memory is read once, in C, and only validated private copies go up). Each case here
// was a reported defect: a region whose indexes point past the queue, a header field or a
// record length changed between two reads, a send from a view that faults, a hello that
// carries more than one fd, a second join on one socket, a listener that throws, a kept view.
// test/channel-fuzz.test.ts searches the same surface at random.
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { Channel, close, socketpair, sendmsg, liveObjects } from '../src/index.js';
import { native, projectRoot } from '../src/native.js';
import { execFileSync } from 'node:child_process';
import { checkLeaksAfterAll, openFdCount } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';
import { craftedRegion } from './support/channel-region.js';

const tmp = shortTempDir('iolab-channel-hostile-');
checkLeaksAfterAll(tmp);

const dist = (file: string) => pathToFileURL(join(projectRoot, 'dist', file)).href;
const HEADER = 4096;
const DIR = (d: number) => 64 + 192 * d;

/** Joins over a fresh socketpair to which the hello and memfd were sent. */
async function joinPassed(memfd: number, options?: { zeroCopy?: boolean }): Promise<Channel> {
  const [a, b] = socketpair('stream');
  try {
    sendmsg(a, [Buffer.from('iolabch1')], { fds: [memfd] });
    return await Channel.join(b, options);
  } finally {
    close(a);
    close(b);
  }
}

describe('Channel: a creator that lays the region out wrong cannot make this side write or read outside it', () => {
  it("join refuses indexes that are not a multiple of 8 or a queue holding more than its capacity", async () => {
    const capacity = 4096;
    const cases: [string, (w: BigUint64Array) => void][] = [
      // the reported write: the joiner's first send put a padding header 5 bytes past the mapping
      ['outgoing head and tail at capacity - 3', (w) => { w[DIR(1) / 8] = w[(DIR(1) + 64) / 8] = BigInt(capacity - 3); }],
      ['incoming tail at 3', (w) => { w[(DIR(0) + 64) / 8] = 3n; }],
      ['outgoing head a capacity and 8 ahead of its tail', (w) => { w[DIR(1) / 8] = BigInt(capacity + 8); }],
      ['outgoing tail ahead of its head', (w) => { w[(DIR(1) + 64) / 8] = 8n; }],
    ];
    for (const [name, edit] of cases) {
      const region = craftedRegion(capacity, edit);
      try {
        await expect(joinPassed(region.memfd), name).rejects.toMatchObject({ code: 'ERR_CHANNEL_PROTOCOL', message: expect.stringMatching(/queue/) });
      } finally {
        native.munmap(region.mapping);
        close(region.memfd);
      }
    }
  });

  it("a record that runs past the queue's end, within what was published: refused after the messages before it, taken in one batch, by receive() and by a listener", async () => {
    // Queue 0 (the joiner reads it) of 4,096 bytes: from the reader's tail at 4,032, a message of
    // 8 bytes (16 with its header), one of 24 (32), then at 4,080 one of 40 (48): published (the
    // head is 96 past the tail, across the wrap), but 32 bytes of it would lie past the queue's end.
    const capacity = 4096;
    const crafted = () => craftedRegion(capacity, (w, u32) => {
      const record = (at: number, length: number, fill: number) => {
        u32[(HEADER + at) / 4] = length;
        u32[(HEADER + at) / 4 + 1] = 0;
        new Uint8Array(w.buffer, HEADER + at + 8, Math.min(length, capacity - at - 8)).fill(fill);
      };
      record(4032, 8, 1);
      record(4048, 24, 2);
      record(4080, 40, 3);
      w[(DIR(0) + 64) / 8] = 4032n; // tail
      w[DIR(0) / 8] = 4032n + 96n; // head
    });
    for (const zeroCopy of [false, true]) {
      for (const listener of [false, true]) {
        const what = `zeroCopy ${zeroCopy}, ${listener ? 'listener' : 'receive()'}`;
        const region = crafted(); // each case its own: a reader moves the tail, a close sets its flag
        const channel = await joinPassed(region.memfd, { zeroCopy });
        const got: Uint8Array[] = [];
        let error: unknown;
        try {
          if (listener) {
            const ended = new Promise<void>((resolve) => channel.once('close', resolve));
            channel.on('error', (err) => (error = err));
            channel.on('message', (m) => got.push(Uint8Array.from(m)));
            await ended;
          } else {
            for (;;) got.push(Uint8Array.from((await channel.receive())!));
          }
        } catch (err) {
          error = err;
        } finally {
          await channel.close();
          native.munmap(region.mapping);
          close(region.memfd);
        }
        expect(got.map((m) => [m.length, m[0]]), what).toEqual([[8, 1], [24, 2]]);
        expect(error, what).toMatchObject({ code: 'ERR_CHANNEL_PROTOCOL' });
      }
    }
  });

  it('a record longer than what was published, inside the queue: refused, never a view over unpublished bytes', async () => {
    // Only the first 16 bytes are published (one record of 8), but its header says 1,000: the
    // record fits the queue, so only the check against what was published stops it.
    const region = craftedRegion(4096, (w, u32) => {
      u32[HEADER / 4] = 1000;
      w[DIR(0) / 8] = 16n;
    });
    try {
      for (const zeroCopy of [false, true]) {
        const channel = await joinPassed(region.memfd, { zeroCopy });
        try {
          await expect(channel.receive(), `zeroCopy ${zeroCopy}`).rejects.toMatchObject({ code: 'ERR_CHANNEL_PROTOCOL' });
        } finally {
          await channel.close();
        }
      }
    } finally {
      native.munmap(region.mapping);
      close(region.memfd);
    }
  });

  it('a tail the reader moved past what was written, after the join: the send that looks for room refuses, the channel ends, no unread record is overwritten', async () => {
    const capacity = 4096;
    const region = craftedRegion(capacity);
    const channel = await joinPassed(region.memfd);
    try {
      // this side (the joiner) writes queue 1; nobody reads it: 256 records of 16 bytes fill it
      let sent = 0;
      while (channel.trySend(Buffer.alloc(8, sent))) sent++;
      expect(sent).toBe(capacity / 16);
      const head = region.words[DIR(1) / 8];
      expect(head).toBe(BigInt(capacity));
      const queue = new Uint8Array(region.mapping, HEADER + capacity, capacity);
      const before = Buffer.from(queue);
      // 8 bytes past the head: as if the reader had read more than was ever written
      region.words[(DIR(1) + 64) / 8] = head + 8n;
      expect(() => channel.trySend(Buffer.from('overrun!'))).toThrow(expect.objectContaining({ code: 'ERR_CHANNEL_PROTOCOL' }));
      expect(channel.closed).toBe(true);
      await expect(channel.receive()).rejects.toMatchObject({ code: 'ERR_CHANNEL_PROTOCOL' });
      expect(Buffer.from(queue).equals(before)).toBe(true);
      expect(region.words[DIR(1) / 8]).toBe(head);
    } finally {
      await channel.close();
      native.munmap(region.mapping);
      close(region.memfd);
    }
  });

  it.each([['send()', false], ['sendMany()', true]])('%s waiting for room when the reader moves its tail past what was written: rejects with ERR_CHANNEL_PROTOCOL (a count for sendMany alone), the channel ends', async (_what, many) => {
    const capacity = 4096;
    const region = craftedRegion(capacity);
    const [a, b] = socketpair('stream');
    let channel: Channel | undefined;
    try {
      sendmsg(a, [Buffer.from('iolabch1')], { fds: [region.memfd] });
      channel = await Channel.join(b);
      let sent = 0;
      while (channel.trySend(Buffer.alloc(8, sent))) sent++;
      const waiting = (many ? channel.sendMany([Buffer.alloc(8), Buffer.alloc(8)]) : channel.send(Buffer.alloc(8))).catch((err: unknown) => err);
      const head = region.words[DIR(1) / 8];
      region.words[(DIR(1) + 64) / 8] = head + 8n; // read past the head
      sendmsg(a, [Buffer.from([1])]); // the wake-up the reader sends: the send looks again
      const err = await waiting;
      expect(err).toMatchObject({ code: 'ERR_CHANNEL_PROTOCOL' });
      if (many) expect(err).toHaveProperty('sent', 0);
      else expect(err).not.toHaveProperty('sent');
      expect(channel.closed).toBe(true);
    } finally {
      await channel?.close();
      close(a);
      close(b);
      native.munmap(region.mapping);
      close(region.memfd);
    }
  });

  it('a capacity and a record length flipped by the other side while this side reads them: the checked copy is the one used', async () => {
    // A worker rewrites the capacity (4 KiB / 1 GiB) and the first record's length (8 / 8,176)
    // as fast as it can, while this thread joins and receives, 40 times. Read twice, the
    // joiner took a 1 GiB capacity over a 12 KiB region, and a view was sized from a length
    // the check never saw (an 8-byte record came up as 8,176 bytes).
    const capacity = 4096;
    const region = craftedRegion(capacity, (w, u32) => {
      u32[HEADER / 4] = 8; // length 8, kind 0, at queue 0 offset 0
      w[DIR(0) / 8] = 16n; // published
    });
    const stop = new Int32Array(new SharedArrayBuffer(8)); // [0]: stop; [1]: the worker runs
    const worker = new Worker(`
      const { workerData } = require('node:worker_threads');
      import(${JSON.stringify(dist('native.js'))}).then(({ native }) => {
        const mapping = native.mmap(workerData.memfd, ${HEADER + 2 * capacity}, { write: true });
        const u32 = new Uint32Array(mapping);
        const stop = new Int32Array(workerData.stop);
        Atomics.store(stop, 1, 1);
        for (let i = 0; Atomics.load(stop, 0) === 0; i++) {
          u32[4] = i & 1 ? ${1 << 30} : ${capacity};
          u32[${HEADER / 4}] = i & 2 ? 8176 : 8;
        }
        native.munmap(mapping);
      });
    `, { eval: true, workerData: { memfd: region.memfd, stop: stop.buffer } });
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    const seen = { capacities: new Set<number>(), lengths: new Set<number>(), refused: 0 };
    try {
      while (Atomics.load(stop, 1) === 0) await new Promise((r) => setTimeout(r, 5));
      for (let trial = 0; trial < 40; trial++) {
        region.words[(DIR(0) + 64) / 8] = 0n; // the last joiner released the record
        let channel: Channel;
        try {
          channel = await joinPassed(region.memfd, { zeroCopy: true });
        } catch (err) {
          expect(err).toMatchObject({ code: 'ERR_CHANNEL_PROTOCOL' }); // the check read 1 GiB
          seen.refused++;
          continue;
        }
        seen.capacities.add(channel.capacity);
        try {
          seen.lengths.add((await channel.receive())!.length);
        } catch (err) {
          expect(err).toMatchObject({ code: 'ERR_CHANNEL_PROTOCOL' }); // the check read 8,176
        }
        await channel.close();
      }
    } finally {
      Atomics.store(stop, 0, 1);
      await exited;
      native.munmap(region.mapping);
      close(region.memfd);
    }
    expect([...seen.capacities]).toEqual([capacity]);
    expect([...seen.lengths].filter((n) => n !== 8)).toEqual([]);
  });

  it('a send from a view whose mapping shrank throws EFAULT, as ring.send rejects, and the channel goes on', () => {
    // in a child: before, memcpy from the view killed the process with SIGBUS
    const script = `
const { Channel, socketpair, close } = await import(${JSON.stringify(dist('index.js'))});
const { native } = await import(${JSON.stringify(dist('native.js'))});
const [a, b] = socketpair('stream');
const [x, y] = await Promise.all([Channel.create(a, { capacity: 16384 }), Channel.join(b)]);
const memfd = native.memfdCreate('shrunk');
native.ftruncate(memfd, 8192);
const mapping = native.mmap(memfd, 8192, { write: true });
native.ftruncate(memfd, 0);
const gone = new Uint8Array(mapping, 4096, 16);
const code = async (f) => { try { return 'ok ' + (await f()); } catch (e) { return e.code; } };
const result = {};
result.trySend = await code(() => x.trySend(gone));
result.list = await code(() => x.trySend([Buffer.from('a'), gone]));
result.send = await code(() => x.send(gone));
result.then = await code(() => x.trySend(Buffer.from('after')));
result.received = Buffer.from(await y.receive()).toString();
await Promise.all([x.close(), y.close()]);
native.munmap(mapping);
for (const fd of [a, b, memfd]) close(fd);
console.log(JSON.stringify({ result, live: native.liveObjects() }));
`;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000 });
    expect({ signal: child.signal, status: child.status, stderr: child.stderr }).toEqual({ signal: null, status: 0, stderr: '' });
    const report = JSON.parse(child.stdout);
    expect(report.result).toEqual({ trySend: 'EFAULT', list: 'EFAULT', send: 'EFAULT', then: 'ok true', received: 'after' });
    expect(report.live).toMatchObject({ rings: 0, ringOps: 0, mappings: 0, ownedFds: 0 });
  });
});

describe('Channel: the size a joiner maps by is one the file keeps', () => {
  it('a creator that shrinks its memfd and then seals it between the joiner\'s size check and seal check: refused, no SIGBUS', () => {
    // test/fixtures/shrink-at-fstat.c does the shrink and the seal inside the joiner's fstat, the
    // gap a racing creator would need. Size read before seals, the joiner mapped 12 KiB of a
    // 4 KiB file, and its first send died of SIGBUS.
    const preload = join(tmp.path, 'shrink-at-fstat.so');
    execFileSync('cc', ['-O2', '-Wall', '-Wextra', '-Werror', '-shared', '-fPIC', '-o', preload, join(projectRoot, 'test/fixtures/shrink-at-fstat.c'), '-ldl']);
    const script = `
const { Channel, socketpair, close, sendmsg } = await import(${JSON.stringify(dist('index.js'))});
const { native } = await import(${JSON.stringify(dist('native.js'))});
const bytes = ${HEADER + 2 * 4096};
const memfd = native.memfdCreate('iolab-shrink-then-seal');
native.ftruncate(memfd, bytes);
const header = Buffer.alloc(24); // written, not mapped: mmap's own fstat would set the hook off
header.write('iolabch1');
header.writeUInt32LE(1, 8);
header.writeUInt32LE(${HEADER}, 12);
header.writeUInt32LE(4096, 16);
(await import('node:fs')).writeSync(memfd, header, 0, 24, 0);
const [a, b] = socketpair('stream');
sendmsg(a, [Buffer.from('iolabch1')], { fds: [memfd] });
let result;
try {
  const channel = await Channel.join(b);
  channel.trySend(Buffer.alloc(1000)); // into the second queue: past the file's end
  result = 'joined, sent';
  await channel.close();
} catch (e) { result = e.code + ': ' + e.message; }
for (const fd of [a, b, memfd]) close(fd);
console.log(JSON.stringify(result));
`;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000, env: { ...process.env, LD_PRELOAD: [process.env.LD_PRELOAD, preload].filter(Boolean).join(' ') } }); // after ASan's runtime, under npm run test:asan
    expect({ signal: child.signal, stderr: child.stderr }).toEqual({ signal: null, stderr: '' });
    expect(JSON.parse(child.stdout)).toMatch(/^ERR_CHANNEL_PROTOCOL: .*not sealed/);
  });
});

describe('Channel: a peer cannot leak fds into this side or wedge it', () => {
  it('a hello in pieces, each with an fd: refused, and every fd that came is closed', async () => {
    const fdsBefore = openFdCount();
    const [a, b] = socketpair('stream');
    const memfds = [native.memfdCreate('first'), native.memfdCreate('second')];
    sendmsg(a, [Buffer.from('iola')], { fds: [memfds[0]] });
    sendmsg(a, [Buffer.from('bch1')], { fds: [memfds[1]] });
    for (const fd of memfds) close(fd);
    await expect(Channel.join(b)).rejects.toMatchObject({ code: 'ERR_CHANNEL_PROTOCOL', message: expect.stringMatching(/more fds than a channel does/) });
    close(a);
    close(b);
    expect(openFdCount()).toBe(fdsBefore);
  });

  it('a second join (or create) on a socket that carries a channel is refused; the first channel keeps working', async () => {
    const [a, b] = socketpair('stream');
    const [x, y] = await Promise.all([Channel.create(a, { capacity: 4096 }), Channel.join(b)]);
    const unsettled = (what: string) => new Promise((r) => setTimeout(r, 3000, `${what} did not settle in 3 s (it took the first channel's bytes for a hello)`));
    expect(await Promise.race([Channel.join(b).then(() => 'joined', (e) => e.message), unsettled('the second join')])).toMatch(/already carries a channel/);
    await expect(Channel.create(a)).rejects.toMatchObject({ code: 'ERR_CHANNEL_BUSY' });
    const got = y.receive();
    await new Promise((r) => setTimeout(r, 20)); // y asleep: its wake-up byte must reach it
    x.trySend(Buffer.from('still here'));
    const stalled = new Promise((r) => setTimeout(r, 3000, 'stalled: the wake-up went to the second join'));
    expect(await Promise.race([got.then((m) => Buffer.from(m!).toString()), stalled])).toBe('still here');
    await Promise.all([x.close(), y.close()]);
    close(a);
    close(b);
  });

  it("a 'message' listener that throws: reported as an uncaught exception, as an EventEmitter's, and every message still comes", () => {
    const script = `
const { Channel, socketpair, close } = await import(${JSON.stringify(dist('index.js'))});
const [a, b] = socketpair('stream');
const [x, y] = await Promise.all([Channel.create(a, { capacity: 4096 }), Channel.join(b)]);
close(a); close(b);
const start = Date.now();
const uncaught = [], unhandled = [], got = [];
process.on('uncaughtException', (e) => uncaught.push(e.message));
process.on('unhandledRejection', (e) => unhandled.push(String(e)));
y.on('message', (m) => { got.push(Buffer.from(m).toString()); throw new Error('listener ' + got.length); });
for (let i = 0; i < 5; i++) {
  await new Promise((r) => setTimeout(r, 10)); // each message wakes y from its sleep
  x.trySend(Buffer.from('m' + i));
}
while (got.length < 5 && Date.now() - start < 5000) await new Promise((r) => setTimeout(r, 10));
await new Promise((r) => setImmediate(r));
await Promise.all([x.close(), y.close()]);
console.log(JSON.stringify({ got, uncaught, unhandled }));
`;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000 });
    expect({ status: child.status, stderr: child.stderr }).toEqual({ status: 0, stderr: '' });
    expect(JSON.parse(child.stdout)).toEqual({
      got: ['m0', 'm1', 'm2', 'm3', 'm4'],
      uncaught: ['listener 1', 'listener 2', 'listener 3', 'listener 4', 'listener 5'],
      unhandled: [],
    });
  });

  it("the other side gone, with 'message' listeners: its error goes to an 'error' listener, else it is thrown (an uncaught exception), as an EventEmitter's", () => {
    const script = `
const { Channel, socketpair, close } = await import(${JSON.stringify(dist('index.js'))});
const { Worker } = await import('node:worker_threads');
const uncaught = [];
process.on('uncaughtException', (e) => uncaught.push(e.code));
const results = [];
for (const errorListener of [false, true]) {
  const [a, b] = socketpair('stream');
  const worker = new Worker('const { workerData } = require("node:worker_threads"); import(' + JSON.stringify(${JSON.stringify(dist('index.js'))}) + ').then(({ Channel }) => Channel.join(workerData.socket)).then(() => setInterval(() => {}, 1000));',
    { eval: true, workerData: { socket: b } });
  const x = await Channel.create(a, { capacity: 4096 });
  close(a);
  const heard = [];
  x.on('message', () => {});
  if (errorListener) x.on('error', (e) => heard.push(e.code));
  await worker.terminate();
  close(b);
  const start = Date.now();
  while (!x.closed && Date.now() - start < 10000) await new Promise((r) => setTimeout(r, 10));
  await new Promise((r) => setImmediate(r));
  results.push({ errorListener, heard, closed: x.closed });
}
console.log(JSON.stringify({ results, uncaught }));
`;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000 });
    expect({ status: child.status, stderr: child.stderr }).toEqual({ status: 0, stderr: '' });
    expect(JSON.parse(child.stdout)).toEqual({
      results: [{ errorListener: false, heard: [], closed: true }, { errorListener: true, heard: ['ERR_CHANNEL_PEER_GONE'], closed: true }],
      uncaught: ['ERR_CHANNEL_PEER_GONE'],
    });
  });

  it('Symbol.asyncDispose closes the channel, as `await using` does', async () => {
    const [a, b] = socketpair('stream');
    const [x, y] = await Promise.all([Channel.create(a, { capacity: 4096 }), Channel.join(b)]);
    close(a);
    close(b);
    await x[Symbol.asyncDispose]();
    expect(x.closed).toBe(true);
    expect(await y.receive()).toBeNull();
    await y[Symbol.asyncDispose]();
    expect(liveObjects()).toMatchObject({ rings: 0, mappings: 0 });
  });
});

describe('Channel: what a kept message holds', () => {
  it("zeroCopy: the last view handed out stays whole when the other side's end comes with it", async () => {
    // The creator (this test, over the raw region) publishes a record without a wake-up and
    // is gone: the joiner's waiting receive gets the record with the socket's end. Ending the
    // channel at once, as it did, detached the view before its receiver could read it.
    const region = craftedRegion(4096);
    const [a, b] = socketpair('stream');
    sendmsg(a, [Buffer.from('iolabch1')], { fds: [region.memfd] });
    const y = await Channel.join(b, { zeroCopy: true });
    close(b);
    const receiving = y.receive();
    await new Promise((r) => setTimeout(r, 20)); // y asleep
    new Uint8Array(region.mapping).set(Buffer.from('hello'), HEADER + 8);
    region.u32[HEADER / 4] = 5; // length 5, kind 0
    region.words[DIR(0) / 8] = 16n; // published, nobody woken
    close(a); // gone
    const view = (await receiving)!;
    await new Promise((r) => setTimeout(r, 20)); // its receiver busy elsewhere a while
    expect(Buffer.from(view).toString()).toBe('hello');
    await expect(y.receive()).rejects.toMatchObject({ code: 'ERR_CHANNEL_PEER_GONE' });
    expect(view.length).toBe(0); // the end detached it, once the next was asked for
    await y.close();
    native.munmap(region.mapping);
    close(region.memfd);
  });

  it("150 messages through a 4 KiB queue that wraps many times: receive()'s kept with received.push(m) each hold their own bytes (more than one slab of them); a listener's copies made while it runs too; its lent ones read as empty after close()", async () => {
    const [a, b] = socketpair('stream');
    const [x, y] = await Promise.all([Channel.create(a, { capacity: 4096 }), Channel.join(b)]);
    close(a);
    close(b);
    const kept: Uint8Array[] = [];
    const fromListener: Uint8Array[] = [];
    const copied: Buffer[] = [];
    const sizes = Array.from({ length: 150 }, (_, i) => 200 + ((i * 37) % 900)); // 120 of them: ~77 KiB
    const writer = (async () => {
      for (let i = 0; i < sizes.length; i++) await x.send(Buffer.alloc(sizes[i], i));
    })();
    for (let i = 0; i < 120; i++) kept.push((await y.receive())!);
    y.on('message', (m) => {
      fromListener.push(m);
      copied.push(Buffer.from(m)); // what a listener keeps
    });
    await writer;
    while (fromListener.length < 30) await new Promise((r) => setTimeout(r, 5));
    const wrong = [...kept, ...copied].filter((m, i) => m.length !== sizes[i] || m.some((byte) => byte !== (i & 0xff)));
    expect(wrong.length).toBe(0);
    // lent from the channel's pool, which later messages reused; close() leaves every view empty
    await Promise.all([x.close(), y.close()]);
    expect(fromListener.map((m) => m.length)).toEqual(fromListener.map(() => 0));
    expect(kept[0].length).toBe(sizes[0]); // a copy of its own: close() does not take it away
  });
});
