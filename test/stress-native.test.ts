// Randomized stress of every native boundary of the foundation (fast-check; runs under
// ASan too). Each property compares with what plain node:fs (or the kernel's documented rule)
// gives, and ends with the fd count and live-object counters where they started.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { closeSync, constants, fstatSync, openSync, readFileSync, readSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { native, projectRoot, type SocketType } from '../src/native.js';
import { recvmsg, sendmsg } from '../src/syscalls.js';
import { checkLeaksAfterAll, collectGarbage, openFdCount, settledLiveObjects, zeroLiveObjects } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';

const tmp = shortTempDir('iolab-stress-');
const page = native.constants.PAGE_SIZE;
const { O_CREAT, O_EXCL, O_RDWR } = constants;
// A datagram (or seqpacket message) longer than sk_sndbuf - 32 is refused with EMSGSIZE.
const sndbuf = Number(readFileSync('/proc/sys/net/core/wmem_default', 'utf8'));
let unique = 0;

checkLeaksAfterAll(tmp);

/** Checks at the end of each property: no fd and no live object left behind. */
async function expectNothingLeft(fdCount: number): Promise<void> {
  expect(openFdCount()).toBe(fdCount);
  expect(await settledLiveObjects()).toEqual(zeroLiveObjects);
}

/** Random cut points of `total` bytes into pieces; zero-length pieces are common, and one case
 * in eight uses exactly IOV_MAX (1,024) pieces. */
const splitOf = (total: number) =>
  fc.oneof(
    { weight: 7, arbitrary: fc.array(fc.nat(total), { maxLength: 48 }) },
    { weight: 1, arbitrary: fc.array(fc.nat(total), { minLength: 1023, maxLength: 1023 }) },
  );

function piecesOf(total: number, cuts: number[]): Buffer[] {
  const points = [0, ...cuts.map((c) => Math.min(c, total)).sort((a, b) => a - b), total];
  return points.slice(1).map((end, i) => Buffer.alloc(end - points[i]));
}

function fillFrom(pieces: Buffer[], data: Uint8Array): Buffer[] {
  let at = 0;
  for (const p of pieces) {
    p.set(data.subarray(at, at + p.length));
    at += p.length;
  }
  return pieces;
}

/** A byte count and a random split of it. */
const sizedSplit = (max: number) => fc.nat(max).chain((total) => fc.tuple(fc.constant(total), splitOf(total)));

describe('readv/writev random splits vs node:fs', () => {
  it('readv at random positions equals fs.readSync of the same range', async () => {
    const fds = openFdCount();
    const file = join(tmp.path, 'r.bin');
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 3000 }), sizedSplit(4000), fc.option(fc.nat(3500), { nil: undefined }), (data, [total, cuts], position) => {
        writeFileSync(file, data);
        const fd = openSync(file, 'r');
        try {
          const bufs = piecesOf(total, cuts);
          const n = native.readv(fd, bufs, position);
          const expected = Buffer.alloc(total);
          const m = total === 0 ? 0 : readSync(fd, expected, 0, total, position ?? 0);
          expect(n).toBe(m);
          expect(Buffer.concat(bufs).subarray(0, n)).toEqual(expected.subarray(0, m));
        } finally {
          closeSync(fd);
        }
      }),
      { numRuns: 60 },
    );
    await expectNothingLeft(fds);
  });

  it('writev/pwritev leaves the file exactly as fs.writeSync of the concatenation does', async () => {
    const fds = openFdCount();
    const a = join(tmp.path, 'wa.bin');
    const b = join(tmp.path, 'wb.bin');
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 500 }), fc.uint8Array({ maxLength: 3000 }), fc.nat(3000), fc.option(fc.nat(800), { nil: undefined }), (initial, data, seed, position) => {
        writeFileSync(a, initial);
        writeFileSync(b, initial);
        const cuts = Array.from({ length: seed % 50 }, (_, i) => (seed * (i + 7) * 2654435761) % (data.length + 1));
        const pieces = fillFrom(piecesOf(data.length, cuts), data);
        const fa = openSync(a, 'r+');
        const fb = openSync(b, 'r+');
        try {
          expect(native.writev(fa, pieces, position)).toBe(data.length);
          expect(writeSync(fb, data, 0, data.length, position ?? null)).toBe(data.length);
        } finally {
          closeSync(fa);
          closeSync(fb);
        }
        expect(readFileSync(a)).toEqual(readFileSync(b));
      }),
      { numRuns: 60 },
    );
    await expectNothingLeft(fds);
  });

  it('IOV_MAX (1,024) buffers read and write; one more is a RangeError and touches nothing', () => {
    const { IOV_MAX } = native.constants;
    const file = join(tmp.path, 'iov.bin');
    const data = Buffer.from(Array.from({ length: 4096 }, (_, i) => i % 251));
    writeFileSync(file, Buffer.alloc(0));
    const fd = openSync(file, 'r+');
    try {
      const pieces = fillFrom(Array.from({ length: IOV_MAX }, () => Buffer.alloc(4)), data);
      expect(native.writev(fd, pieces, 0)).toBe(4096);
      const back = Array.from({ length: IOV_MAX }, (_, i) => Buffer.alloc(i % 3 === 0 ? 0 : 8));
      expect(native.readv(fd, back, 0)).toBe(4096);
      expect(Buffer.concat(back).subarray(0, 4096)).toEqual(data);
      expect(() => native.writev(fd, [...pieces, Buffer.alloc(1)], 0)).toThrow(RangeError);
      expect(fstatSync(fd).size).toBe(4096);
    } finally {
      closeSync(fd);
    }
  });
});

const socketTypes: SocketType[] = ['stream', 'dgram', 'seqpacket'];

describe('sendmsg/recvmsg random splits, sizes and fds', () => {
  it('messages split at random on both sides arrive intact; datagram truncation is reported right', async () => {
    const fds = openFdCount();
    const pairs = Object.fromEntries(socketTypes.map((t) => [t, native.socketpair(t, { nonBlocking: true })])) as Record<SocketType, [number, number]>;
    try {
      fc.assert(
        fc.property(fc.constantFrom(...socketTypes), sizedSplit(3000), sizedSplit(3000), fc.nat(255), (type, [len, sendCuts], [room, recvCuts], fill) => {
          const [a, b] = pairs[type];
          const data = Buffer.from(Array.from({ length: len }, (_, i) => (i + fill) & 0xff));
          const sent = sendmsg(a, fillFrom(piecesOf(len, sendCuts), data));
          expect(sent).toBe(len);
          const bufs = piecesOf(room, recvCuts);
          if (type === 'stream') {
            if (len === 0) return; // nothing is queued for an empty stream send
            const got: Buffer[] = [];
            let total = 0;
            // the bytes of a stream may come over several reads; with no room (room 0) add some
            while (total < len) {
              const into = room === 0 ? [Buffer.alloc(len)] : piecesOf(room, recvCuts);
              const r = recvmsg(b, into);
              expect(r.dataTruncated).toBe(false);
              expect(r.bytesRead).toBeGreaterThan(0);
              got.push(Buffer.concat(into).subarray(0, r.bytesRead));
              total += r.bytesRead;
            }
            expect(Buffer.concat(got)).toEqual(data);
          } else {
            const r = recvmsg(b, bufs);
            expect(r.bytesRead).toBe(Math.min(len, room));
            expect(r.dataTruncated).toBe(len > room);
            expect(r.truncated).toBe(len > room);
            expect(r.eof).toBe(false);
            expect(Buffer.concat(bufs).subarray(0, r.bytesRead)).toEqual(data.subarray(0, r.bytesRead));
          }
          expect(native.waitFd(b, 'read', 0)).toBe(false); // nothing left over
        }),
        // a zero-length seqpacket message used to be reported as eof (fixed in recvmsg)
        { numRuns: 80, examples: [['seqpacket', [0, []], [0, []], 0]] },
      );
    } finally {
      for (const [a, b] of Object.values(pairs)) {
        native.close(a);
        native.close(b);
      }
    }
    await expectNothingLeft(fds);
  });

  it('sizes around SO_SNDBUF: datagrams over sndbuf-32 are EMSGSIZE, others arrive whole or truncated as reported', async () => {
    const fds = openFdCount();
    const pairs = { dgram: native.socketpair('dgram', { nonBlocking: true }), seqpacket: native.socketpair('seqpacket', { nonBlocking: true }) };
    const big = Buffer.alloc(sndbuf + 200, 0x5a);
    const into = Buffer.alloc(sndbuf + 200);
    try {
      fc.assert(
        fc.property(fc.constantFrom('dgram' as const, 'seqpacket' as const), fc.integer({ min: -300, max: 100 }), fc.integer({ min: -300, max: 100 }), (type, dLen, dRoom) => {
          const [a, b] = pairs[type];
          const len = sndbuf + dLen;
          const room = sndbuf + dRoom;
          const payload = big.subarray(0, len);
          if (len > sndbuf - 32) {
            expect(() => sendmsg(a, [payload])).toThrow(expect.objectContaining({ code: 'EMSGSIZE', syscall: 'sendmsg' }));
            return;
          }
          expect(sendmsg(a, [payload.subarray(0, 1000), payload.subarray(1000)])).toBe(len);
          into.fill(0);
          const r = recvmsg(b, [into.subarray(0, 5), into.subarray(5, room)]);
          expect(r.bytesRead).toBe(Math.min(len, room));
          expect(r.dataTruncated).toBe(len > room);
          expect(into.subarray(0, r.bytesRead).equals(big.subarray(0, r.bytesRead))).toBe(true);
        }),
        { numRuns: 40 },
      );
      // stream: a send past what the socket can buffer is a short write (non-blocking), and
      // exactly the accepted bytes come out the other end
      const [a, b] = native.socketpair('stream', { nonBlocking: true });
      try {
        fc.assert(
          fc.property(fc.integer({ min: sndbuf - 2000, max: 2 * sndbuf }), (len) => {
            const data = Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 13) & 0xff));
            const pieces = Array.from({ length: Math.ceil(len / 4096) }, (_, i) => data.subarray(0, Math.min(4096, len - i * 4096)));
            const sent = sendmsg(a, pieces);
            expect(sent).toBeGreaterThan(0);
            expect(sent).toBeLessThanOrEqual(len);
            let got = 0;
            const out = Buffer.alloc(sent);
            while (got < sent) got += recvmsg(b, [out.subarray(got)]).bytesRead;
            expect(out.equals(Buffer.concat(pieces).subarray(0, sent))).toBe(true);
            expect(native.waitFd(b, 'read', 0)).toBe(false);
          }),
          { numRuns: 10 },
        );
      } finally {
        native.close(a);
        native.close(b);
      }
    } finally {
      for (const [a, b] of Object.values(pairs)) {
        native.close(a);
        native.close(b);
      }
    }
    await expectNothingLeft(fds);
  });

  it('random fd counts against random maxFds (and control room): delivered whole or all closed', async () => {
    const fds = openFdCount();
    const file = join(tmp.path, 'fdsrc.txt');
    writeFileSync(file, 'x');
    const source = openSync(file, 'r');
    const ino = fstatSync(source).ino;
    const pairs = Object.fromEntries(socketTypes.map((t) => [t, native.socketpair(t, { nonBlocking: true })])) as Record<SocketType, [number, number]>;
    const { SCM_MAX_FD } = native.constants;
    const count = fc.oneof(fc.nat(6), fc.integer({ min: 0, max: SCM_MAX_FD }));
    try {
      fc.assert(
        fc.property(fc.constantFrom(...socketTypes), count, count, fc.option(count, { nil: undefined }), sizedSplit(64), (type, sendFds, maxFds, controlFds, [len, cuts]) => {
          const [a, b] = pairs[type];
          const before = openFdCount();
          const size = type === 'stream' ? Math.max(len, 1) : len; // fds ride on >= 1 byte of a stream
          sendmsg(a, piecesOf(size, cuts), { fds: Array<number>(sendFds).fill(source) });
          expect(openFdCount()).toBe(before);
          const r = recvmsg(b, [Buffer.alloc(64)], { maxFds, controlFds });
          expect(r.bytesRead).toBe(size);
          // the control buffer: room for controlFds fds (CMSG_SPACE) plus one SCM_CREDENTIALS (32
          // bytes); the kernel cuts (MSG_CTRUNC) an SCM_RIGHTS whose CMSG_LEN does not fit
          const room = (controlFds ?? SCM_MAX_FD) > 0 ? 16 + Math.ceil((4 * (controlFds ?? SCM_MAX_FD)) / 8) * 8 + 32 : 32;
          const fits = sendFds === 0 || 16 + 4 * sendFds <= room;
          const cut = sendFds > maxFds || !fits;
          if (cut) {
            expect(r).toMatchObject({ fds: [], fdsTruncated: true, truncated: true });
          } else {
            expect(r.fdsTruncated).toBe(false);
            expect(r.fds).toHaveLength(sendFds);
            for (const fd of r.fds) {
              expect(fstatSync(fd).ino).toBe(ino);
              native.close(fd);
            }
          }
          expect(openFdCount()).toBe(before);
        }),
        { numRuns: 120 },
      );
    } finally {
      closeSync(source);
      for (const [a, b] of Object.values(pairs)) {
        native.close(a);
        native.close(b);
      }
    }
    await expectNothingLeft(fds);
  });
});

describe('buffers changed by JS while arguments are read', () => {
  // An options getter (or an array element getter) runs JS in the middle of argument parsing;
  // if it detaches a buffer already turned into an iovec, the syscall would use freed memory.
  // The iovecs are taken last, so the detached buffer simply counts as empty.
  function detach(view: Uint8Array): void {
    structuredClone(view.buffer, { transfer: [view.buffer] });
    globalThis.gc?.();
  }

  it('a getter that detaches a buffer: sendmsg/recvmsg/readv/writev see it as empty, no crash', async () => {
    const fds = openFdCount();
    const [a, b] = native.socketpair('dgram', { nonBlocking: true });
    const file = join(tmp.path, 'getter.bin');
    writeFileSync(file, 'abcdef');
    const fd = openSync(file, 'r+');
    try {
      const out = new Uint8Array(1 << 16).fill(1);
      expect(sendmsg(a, [out], { get fds() { detach(out); return undefined; } })).toBe(0);
      const into = new Uint8Array(1 << 16);
      expect(recvmsg(b, [into], { get maxFds() { detach(into); return 0; } }).bytesRead).toBe(0);
      const first = new Uint8Array(1 << 16);
      const list = [first];
      Object.defineProperty(list, 1, { get() { detach(first); return new Uint8Array(3); }, enumerable: true });
      expect(native.readv(fd, list as Uint8Array[], 0)).toBe(3);
      const again = [new Uint8Array(1 << 16)];
      Object.defineProperty(again, 1, { get() { detach(again[0]); return Buffer.from('XY'); }, enumerable: true });
      expect(native.writev(fd, again as Uint8Array[], 0)).toBe(2);
      expect(readFileSync(file, 'utf8')).toBe('XYcdef');
    } finally {
      closeSync(fd);
      native.close(a);
      native.close(b);
    }
    await expectNothingLeft(fds);
  });
});

describe('shm: random sizes, offsets and mapping lifetimes', () => {
  function freshShm(size: number): number {
    const name = `/iolab-stress-${process.pid}-${unique++}`;
    const fd = native.shmOpen(name, O_CREAT | O_EXCL | O_RDWR, 0o600);
    native.shmUnlink(name);
    native.ftruncate(fd, size);
    return fd;
  }

  it('random sizes/offsets/lengths: maps iff in range; bytes written match fs.readSync', async () => {
    const fds = openFdCount();
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 5 * page + 300 }), fc.nat(6), fc.integer({ min: 0, max: 6 * page }), fc.nat(), fc.uint8Array({ minLength: 1, maxLength: 64 }), (size, offsetPages, length, at, bytes) => {
        const fd = freshShm(size);
        try {
          const offset = offsetPages * page;
          if (length === 0 || offset + length > size) {
            expect(() => native.mmap(fd, length, { write: true, offset })).toThrow(expect.objectContaining({ name: 'RangeError', code: 'ERR_OUT_OF_RANGE' }));
            return;
          }
          const m = native.mmap(fd, length, { write: true, offset });
          expect(m.byteLength).toBe(length);
          const pos = at % length;
          const chunk = bytes.subarray(0, length - pos);
          new Uint8Array(m).set(chunk, pos);
          const viaFs = Buffer.alloc(chunk.length);
          expect(readSync(fd, viaFs, 0, chunk.length, offset + pos)).toBe(chunk.length);
          expect(viaFs).toEqual(Buffer.from(chunk));
          native.munmap(m);
          expect(() => native.munmap(m)).toThrow(TypeError);
          expect(() => new Uint8Array(m)).toThrow(TypeError);
        } finally {
          closeSync(fd);
        }
      }),
      { numRuns: 80 },
    );
    await expectNothingLeft(fds);
  });

  type Step = { op: 'map'; write: boolean } | { op: 'unmap' | 'drop' | 'touch' | 'unmapAgain'; index: number } | { op: 'gc' };
  const step: fc.Arbitrary<Step> = fc.oneof(
    { weight: 4, arbitrary: fc.record({ op: fc.constant('map' as const), write: fc.boolean() }) },
    { weight: 8, arbitrary: fc.record({ op: fc.constantFrom('unmap' as const, 'drop' as const, 'touch' as const, 'unmapAgain' as const), index: fc.nat(20) }) },
    { weight: 1, arbitrary: fc.constant({ op: 'gc' as const }) },
  );

  type Slot = { buffer: ArrayBuffer | null; write: boolean; unmapped: boolean };

  /** Runs steps up to the next 'gc' synchronously, so no stale reference to a dropped buffer
   * stays in the suspended async frame (which would keep it from being collected). */
  function runSteps(steps: Step[], slots: Slot[], fd: number, shared: ArrayBuffer): void {
    for (const s of steps) {
      if (s.op === 'map') {
        slots.push({ buffer: native.mmap(fd, 2 * page, { write: s.write }), write: s.write, unmapped: false });
        continue;
      }
      if (s.op === 'gc' || slots.length === 0) continue;
      const slot = slots[s.index % slots.length];
      const buf = slot.buffer;
      if (buf === null) continue; // dropped
      if (s.op === 'drop') {
        slot.buffer = null;
      } else if (s.op === 'unmap') {
        if (slot.unmapped) expect(() => native.munmap(buf)).toThrow(TypeError);
        else native.munmap(buf);
        slot.unmapped = true;
      } else if (s.op === 'unmapAgain') {
        if (!slot.unmapped) native.munmap(buf);
        slot.unmapped = true;
        expect(() => native.munmap(buf)).toThrow(TypeError);
      } else if (slot.unmapped) {
        expect(buf.byteLength).toBe(0);
        expect(() => new Uint8Array(buf)).toThrow(TypeError);
      } else {
        const value = (steps.length + s.index) & 0xff;
        const view = new Uint8Array(buf);
        if (slot.write) {
          view[page + 1] = value;
          expect(new Uint8Array(shared)[page + 1]).toBe(value);
        } else {
          new Uint8Array(shared)[page + 2] = value; // visible through the reading mapping
          expect(view[page + 2]).toBe(value);
        }
      }
    }
  }

  it('map/unmap/drop/GC interleavings: never a crash, use after unmap is a TypeError, counters settle', async () => {
    const fds = openFdCount();
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 30 }), async (steps) => {
        const fd = freshShm(2 * page);
        const shared = native.mmap(fd, 2 * page, { write: true });
        const slots: Slot[] = [];
        try {
          let from = 0;
          for (let i = 0; i <= steps.length; i++) {
            if (i < steps.length && steps[i].op !== 'gc') continue;
            runSteps(steps.slice(from, i), slots, fd, shared);
            from = i + 1;
            await collectGarbage();
          }
          const held = slots.filter((s) => s.buffer !== null && !s.unmapped).length;
          for (let round = 0; round < 10 && native.liveObjects().mappings !== held + 1; round++) await collectGarbage();
          expect(native.liveObjects().mappings).toBe(held + 1);
        } finally {
          for (const s of slots) if (s.buffer && !s.unmapped) native.munmap(s.buffer);
          native.munmap(shared);
          closeSync(fd);
        }
      }),
      // the example is what the first version of this test tripped on (see the commit log)
      // 20 runs (IOLAB_FUZZ_RUNS for more): each GC step is three full collections, and 40 runs
      // took 8.8 s beside a second suite, within 3x of the 30 s a test has
      { numRuns: Number(process.env.IOLAB_FUZZ_RUNS ?? 0) || 20, examples: [[[{ op: 'map', write: false }, { op: 'touch', index: 0 }, { op: 'drop', index: 0 }]]] },
    );
    await expectNothingLeft(fds);
  });

  it('worker threads mapping, unmapping and dropping at once: registry consistent, counters settle', async () => {
    const fds = openFdCount();
    const addon = join(projectRoot, process.env.IOLAB_ASAN === '1' ? 'build-asan/build/Release/iolab.node' : 'build/Release/iolab.node');
    const code = `
      const { workerData, parentPort } = require('node:worker_threads');
      const { constants } = require('node:fs');
      const native = require(workerData.addon);
      const fd = native.shmOpen(workerData.name, constants.O_CREAT | constants.O_EXCL | constants.O_RDWR);
      native.shmUnlink(workerData.name);
      native.ftruncate(fd, 4 * native.constants.PAGE_SIZE);
      let kept = [];
      for (let i = 0; i < 300; i++) {
        const m = native.mmap(fd, native.constants.PAGE_SIZE * (1 + (i % 4)), { write: i % 2 === 0 });
        if (i % 2 === 0) new Uint8Array(m)[0] = i & 0xff; // a reading mapping is PROT_READ
        else if (new Uint8Array(m)[0] === 256) throw new Error('unreachable');
        if (i % 3 === 0) native.munmap(m); else if (i % 3 === 1) kept.push(m);
        if (i % 50 === 49) { kept = []; globalThis.gc && gc(); }
      }
      native.close(fd); // the addon's fd: a worker's fs.closeSync would warn it did not open it
      parentPort.postMessage('done');
    `;
    const workers = [0, 1, 2].map((i) => new Worker(code, { eval: true, workerData: { addon, name: `/iolab-stress-w${process.pid}-${unique++}-${i}` } }));
    // the main thread maps and unmaps at the same time
    const fd = (() => {
      const name = `/iolab-stress-main-${process.pid}-${unique++}`;
      const f = native.shmOpen(name, O_CREAT | O_EXCL | O_RDWR);
      native.shmUnlink(name);
      native.ftruncate(f, page);
      return f;
    })();
    for (let i = 0; i < 300; i++) native.munmap(native.mmap(fd, page, { write: true }));
    closeSync(fd);
    await Promise.all(workers.map((w) => new Promise<void>((resolve, reject) => {
      w.once('error', reject);
      w.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`worker exit ${code}`))));
    })));
    await expectNothingLeft(fds);
  });
});
