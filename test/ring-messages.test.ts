// One message layer (native/sys/unix_msg.{h,cc}) for the sync sendmsg/recvmsg and the Ring's: the
// same rules through both (the eof rule for zero-length seqpacket messages, one payload byte
// to carry fds on a stream, the socket's type read when the op is queued, fds to send copied
// when it is queued), and a property: random message sequences give identical results
// through the plain calls and through the Ring.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import fs from 'node:fs';
import { join } from 'node:path';
import { native, type RecvOptions, type RecvResult, type SendOptions, type SocketType } from '../src/native.js';
import { recvmsg, sendmsg } from '../src/syscalls.js';
import { Ring } from '../src/ring/index.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';

const tmp = shortTempDir('iolab-ring-msg-');
checkLeaksAfterAll(tmp);

const inode = (fd: number) => fs.fstatSync(fd).ino;

async function withRing<T>(body: (ring: InstanceType<typeof Ring>) => Promise<T>): Promise<T> {
  const ring = new Ring({ entries: 16 });
  try {
    return await body(ring);
  } finally {
    await ring.close();
  }
}

function pair(type: SocketType): [number, number] {
  return native.socketpair(type);
}

describe('the rules, through the Ring as through the sync calls', () => {
  it('a zero-length seqpacket message from a live peer is not eof; after the peer shuts down it is', async () => {
    await withRing(async (ring) => {
      const [a, b] = pair('seqpacket');
      sendmsg(a, []);
      const plain = recvmsg(b, [Buffer.alloc(8)]);
      sendmsg(a, []);
      const viaRing = await ring.recvmsg(b, [Buffer.alloc(8)]);
      expect(plain).toMatchObject({ bytesRead: 0, eof: false });
      expect(viaRing).toEqual(plain);
      native.close(a);
      expect(await ring.recvmsg(b, [Buffer.alloc(8)])).toMatchObject({ bytesRead: 0, eof: true });
      native.close(b);
    });
  });

  it('sendmsg on a stream needs one payload byte to carry fds or credentials', async () => {
    await withRing(async (ring) => {
      const [a, b] = pair('stream');
      const f = fs.openSync(join(tmp.path, 'x'), 'w');
      const plain = (() => { try { sendmsg(a, [], { fds: [f] }); } catch (e) { return e; } })();
      const viaRing = await ring.sendmsg(a, [], { fds: [f] }).catch((e: unknown) => e);
      expect(plain).toMatchObject({ name: 'TypeError', code: 'ERR_INVALID_ARG_VALUE' });
      expect(viaRing).toEqual(plain);
      await expect(ring.sendmsg(a, [Buffer.alloc(0)], { credentials: true })).rejects.toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }));
      // a datagram socket carries them with no payload at all
      const [c, d] = pair('dgram');
      expect(await ring.sendmsg(c, [], { fds: [f] })).toBe(0);
      const got = await ring.recvmsg(d, [], { maxFds: 1 });
      expect(got).toMatchObject({ bytesRead: 0, eof: false });
      expect(inode(got.fds[0])).toBe(inode(f));
      for (const fd of [a, b, c, d, f, ...got.fds]) native.close(fd);
    });
  });

  it('the socket type behind the eof rule is read when recvmsg is queued, not when it completes', async () => {
    await withRing(async (ring) => {
      const [a, b] = pair('stream');
      const pending = ring.recvmsg(b, [Buffer.alloc(8)]);
      ring.submit();
      await new Promise((r) => setTimeout(r, 5));
      // b's number now names a datagram socket; the queued recvmsg still reads the stream
      native.close(b);
      const [c, d] = pair('dgram');
      expect([c, d]).toContain(b);
      native.close(a); // the stream's peer goes away: 0 bytes, which on a stream is eof
      expect(await pending).toMatchObject({ bytesRead: 0, eof: true });
      native.close(c);
      native.close(d);
    });
  });

  it('fds to send are copied when the op is queued: closing one and opening another file before the flush sends the original', async () => {
    await withRing(async (ring) => {
      const [a, b] = pair('stream');
      const original = fs.openSync(join(tmp.path, 'original'), 'w');
      const originalInode = inode(original);
      const sent = ring.sendmsg(a, [Buffer.from('m')], { fds: [original] }); // queued, not yet submitted
      fs.closeSync(original);
      const other = fs.openSync(join(tmp.path, 'other'), 'w');
      expect(other).toBe(original); // the number is reused
      expect(await sent).toBe(1);
      const got = recvmsg(b, [Buffer.alloc(1)], { maxFds: 1 });
      expect(got.fds).toHaveLength(1);
      expect(inode(got.fds[0])).toBe(originalInode);
      expect(inode(got.fds[0])).not.toBe(inode(other));
      expect(native.liveObjects().ownedFds).toBe(0); // the copy was closed when the op settled
      for (const fd of [a, b, other, ...got.fds]) native.close(fd);
    });
  });

  it('an fd that is not open rejects the Ring sendmsg with EBADF, as the sync call throws it', async () => {
    await withRing(async (ring) => {
      const [a, b] = pair('dgram');
      const plain = (() => { try { sendmsg(a, [Buffer.from('m')], { fds: [987654] }); } catch (e) { return e; } })();
      expect(plain).toMatchObject({ code: 'EBADF', syscall: 'sendmsg' });
      await expect(ring.sendmsg(a, [Buffer.from('m')], { fds: [987654] })).rejects.toMatchObject({ code: 'EBADF', syscall: 'sendmsg', message: (plain as Error).message });
      native.close(a);
      native.close(b);
    });
  });
});

// ---- the property ----

interface Message {
  bytes: number;
  fds: number;
  credentials: boolean;
  recvBytes: number;
  maxFds: number;
  controlFds?: number;
}

type Outcome = { error: string } | { value: unknown };

/** Runs `op` (sync, or returning a Promise) and describes its result or error by its words. */
async function outcome(op: () => unknown): Promise<Outcome> {
  try {
    return { value: await op() };
  } catch (e) {
    const err = e as Error & { code?: string };
    return { error: `${err.name} ${err.code} ${err.message}` };
  }
}

/** A received result with fds replaced by the files they name (then closed). */
function described(r: Outcome, buffer: Buffer): Outcome {
  if ('error' in r) return r;
  const got = r.value as RecvResult;
  const files = got.fds.map(inode);
  for (const fd of got.fds) native.close(fd);
  return { value: { ...got, fds: files, data: buffer.subarray(0, got.bytesRead).toString('hex') } };
}

type Io = {
  sendmsg(fd: number, buffers: Buffer[], options: SendOptions): unknown;
  recvmsg(fd: number, buffers: Buffer[], options: RecvOptions): unknown;
};

/** Plays the messages on one socket pair through one Io: send one, receive what it left. */
async function play(io: Io, type: SocketType, messages: Message[], sources: number[], passCredentials: boolean) {
  const [first, b] = pair(type);
  let a = first;
  native.setPassCredentials(b, passCredentials);
  const log: Outcome[] = [];
  let pending = 0; // stream bytes sent and not yet read (a stream recv with none would block)
  try {
    for (const [i, m] of messages.entries()) {
      const payload = Buffer.alloc(m.bytes, i + 1);
      const fds = Array.from({ length: m.fds }, (_, k) => sources[k % sources.length]);
      const sent = await outcome(() => io.sendmsg(a, [payload], { fds, credentials: m.credentials }));
      log.push(sent);
      if ('value' in sent) pending += sent.value as number;
      if (type === 'stream' && pending === 0) continue;
      const buffer = Buffer.alloc(type === 'stream' ? Math.max(1, m.recvBytes) : m.recvBytes);
      const got = described(await outcome(() => io.recvmsg(b, [buffer], { maxFds: m.maxFds, controlFds: m.controlFds })), buffer);
      if ('value' in got) pending -= type === 'stream' ? (got.value as RecvResult).bytesRead : 0;
      log.push(got);
    }
    native.close(a);
    a = -1;
    if (type !== 'dgram') {
      // what is left, then the eof
      for (let k = 0; k < 64; k++) {
        const buffer = Buffer.alloc(512);
        const got = described(await outcome(() => io.recvmsg(b, [buffer], { maxFds: 253 })), buffer);
        log.push(got);
        if ('error' in got || (got.value as RecvResult).eof) break;
      }
    }
  } finally {
    if (a >= 0) native.close(a);
    native.close(b);
  }
  return log;
}

describe('plain and Ring give identical results', () => {
  it('for random message sequences (0 bytes included, 0-253 fds, credentials) on stream, seqpacket and dgram sockets', async () => {
    const sources = ['s1', 's2', 's3'].map((name) => fs.openSync(join(tmp.path, name), 'w'));
    const fdCount = fc.oneof(fc.constant(0), fc.nat(4), fc.integer({ min: 0, max: 253 }));
    const message = fc.record({
      bytes: fc.oneof(fc.constant(0), fc.nat(300)),
      fds: fdCount,
      credentials: fc.boolean(),
      recvBytes: fc.oneof(fc.constant(0), fc.nat(320)),
      maxFds: fdCount,
      controlFds: fc.option(fdCount, { nil: undefined }),
    });
    try {
      await withRing(async (ring) => {
        await fc.assert(
          fc.asyncProperty(fc.constantFrom<SocketType>('stream', 'seqpacket', 'dgram'), fc.array(message, { maxLength: 8 }), fc.boolean(),
            async (type, messages, passCredentials) => {
              const plain = await play({ sendmsg, recvmsg }, type, messages, sources, passCredentials);
              const viaRing = await play(ring, type, messages, sources, passCredentials);
              expect(viaRing).toEqual(plain);
            }),
          { numRuns: 60 },
        );
      });
    } finally {
      for (const fd of sources) native.close(fd);
    }
  });
});
