// The Ring under randomized op sequences (fast-check) with close() at a random point,
// buffers dropped and GC forced right after submit, the target fd closed while ops wait, and
// CQs smaller than the burst. Every property: results equal the plain syscall's, and fds and
// live-object counters are back where they started.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import fs from 'node:fs';
import { join } from 'node:path';
import { native } from '../src/native.js';
import { recvmsg, sendmsg } from '../src/syscalls.js';
import { Ring, RingClosedError } from '../src/ring/index.js';
import { collectGarbage, openFdCount, settledLiveObjects, zeroLiveObjects } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';

const runs = native.sanitized ? 12 : 30;
// A fixed seed, so a run is repeatable and what it reaches (droppedChecked below) does not depend
// on luck; IOLAB_FUZZ_SEED searches elsewhere.
const seed = Number(process.env.IOLAB_FUZZ_SEED ?? 7_310);
let dir: { path: string; cleanup: () => void };
let source: string;
const sourceBytes = Buffer.alloc(64 * 1024);
for (let i = 0; i < sourceBytes.length; i++) sourceBytes[i] = (i * 131 + (i >> 8)) & 0xff;

beforeAll(() => {
  dir = shortTempDir('iolab-stress-ring-');
  source = join(dir.path, 'source');
  fs.writeFileSync(source, sourceBytes);
});
afterAll(() => dir.cleanup());

async function balanced(fdsBefore: number) {
  expect(await settledLiveObjects()).toEqual(zeroLiveObjects);
  expect(openFdCount()).toBe(fdsBefore);
}

/** What the sync call reads at [offset, offset+length). */
function expectedRead(offset: number, length: number): Buffer {
  return sourceBytes.subarray(Math.min(offset, sourceBytes.length), Math.min(offset + length, sourceBytes.length));
}

// drop: after submit, the views are dropped and GC forced: 'views' keeps their memory (then
// the bytes are checked there), 'all' keeps nothing (the bytes are checked if the views were
// not collected yet)
type Drop = 'none' | 'views' | 'all';
type FileOp =
  | { kind: 'read'; offset: number; sizes: number[]; drop: Drop }
  | { kind: 'write'; slot: number; sizes: number[] }
  | { kind: 'nop' }
  | { kind: 'fsync' }
  | { kind: 'msg'; bytes: number; fds: number; maxFds: number };

const sizesArb = fc.array(fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 64 }), fc.integer({ min: 1000, max: 9000 })), { minLength: 0, maxLength: 6 });
const opArb: fc.Arbitrary<FileOp> = fc.oneof(
  fc.record({ kind: fc.constant('read' as const), offset: fc.integer({ min: 0, max: 70_000 }), sizes: sizesArb, drop: fc.constantFrom<Drop>('none', 'views', 'all') }),
  fc.record({ kind: fc.constant('write' as const), slot: fc.integer({ min: 0, max: 15 }), sizes: sizesArb }),
  fc.constant({ kind: 'nop' as const }),
  fc.constant({ kind: 'fsync' as const }),
  fc.record({ kind: fc.constant('msg' as const), bytes: fc.integer({ min: 1, max: 300 }), fds: fc.integer({ min: 0, max: 4 }), maxFds: fc.integer({ min: 0, max: 4 }) }),
);

describe('Ring stress (fast-check)', () => {
  it('random op sequences with close() at a random point: results equal the sync calls', async () => {
    const fdsBefore = openFdCount();
    let droppedChecked = 0;
    await fc.assert(fc.asyncProperty(
      fc.array(opArb, { minLength: 1, maxLength: 40 }), fc.nat(), fc.integer({ min: 2, max: 64 }),
      async (ops, closeSeed, entries) => {
        const ring = new Ring({ entries });
        const src = fs.openSync(source, 'r');
        const scratchPath = join(dir.path, 'scratch');
        const scratch = fs.openSync(scratchPath, 'w+');
        const [a, b] = native.socketpair('seqpacket');
        const closeAt = closeSeed % (ops.length + 1);
        const checks: Promise<void>[] = [];
        const written = new Map<number, Buffer>();
        let closed: Promise<void> | undefined;
        try {
          for (let i = 0; i < ops.length; i++) {
            if (i === closeAt) closed = ring.close();
            const op = ops[i];
            const settle = <T>(p: () => Promise<T>, check: (value: T) => void): void => {
              if (closed) {
                // a closed Ring refuses new ops at once, with a rejected Promise (never a throw)
                let refused: Promise<T> | undefined;
                expect(() => { refused = p(); }).not.toThrow();
                checks.push(refused!.then(() => { throw new Error('an op on a closed Ring resolved'); }, (err) => { expect(err).toBeInstanceOf(RingClosedError); }));
                return;
              }
              // cancelled: only by close(), which must have been called by then
              checks.push(p().then(check, (err) => {
                expect(err).toBeInstanceOf(RingClosedError);
                expect(closed, 'an op rejected with RingClosedError while the Ring was open').toBeDefined();
              }));
            };
            if (op.kind === 'read') {
              const memory = op.sizes.map((n) => new ArrayBuffer(n));
              let bufs: Uint8Array[] | null = memory.map((m) => new Uint8Array(m));
              const kept = op.drop === 'none' ? bufs : op.drop === 'views' ? memory.map((m) => new Uint8Array(m)) : null;
              const collectable = op.drop === 'all' ? bufs.map((b) => new WeakRef(b)) : [];
              const total = op.sizes.reduce((x, y) => x + y, 0);
              const expected = expectedRead(op.offset, total);
              settle(() => ring.readv(src, bufs!, op.offset), (n) => {
                expect(n).toBe(expected.length);
                const views = kept ?? collectable.map((w) => w.deref());
                if (views.every((v) => v !== undefined)) {
                  expect(Buffer.concat(views as Uint8Array[]).subarray(0, n).equals(expected)).toBe(true);
                  if (op.drop !== 'none') droppedChecked++;
                }
              });
              bufs = null;
              if (op.drop !== 'none' && !closed) {
                ring.submit();
                globalThis.gc?.();
              }
            } else if (op.kind === 'write') {
              const data = op.sizes.map((n, k) => Buffer.alloc(n, (op.slot * 7 + k + 1) & 0xff));
              const total = op.sizes.reduce((x, y) => x + y, 0);
              // slots are 64 KiB apart and each is written at most once, so results are comparable
              if (written.has(op.slot)) continue;
              settle(() => ring.writev(scratch, data, op.slot * 65536), (n) => {
                expect(n).toBe(total);
                written.set(op.slot, Buffer.concat(data));
              });
            } else if (op.kind === 'nop') {
              settle(() => ring.nop(), (v) => expect(v).toBeUndefined());
            } else if (op.kind === 'fsync') {
              settle(() => ring.fsync(scratch), (v) => expect(v).toBeUndefined());
            } else {
              const payload = Buffer.alloc(op.bytes, op.bytes & 0xff);
              const fds = Array(op.fds).fill(src);
              settle(() => ring.sendmsg(a, [payload], { fds }), (n) => expect(n).toBe(op.bytes));
              const into = Buffer.alloc(512);
              settle(() => ring.recvmsg(b, [into], { maxFds: op.maxFds }), (got) => {
                // seqpacket keeps boundaries: the message sent just before, as the sync recvmsg reports it
                expect(got.bytesRead).toBe(op.bytes);
                expect(into.subarray(0, got.bytesRead).equals(payload)).toBe(true);
                const tooMany = op.fds > op.maxFds;
                expect(got.fdsTruncated).toBe(tooMany);
                expect(got.fds.length).toBe(tooMany ? 0 : op.fds);
                for (const fd of got.fds) {
                  const one = Buffer.alloc(4);
                  expect(fs.readSync(fd, one, 0, 4, 0)).toBe(4);
                  expect(one.equals(sourceBytes.subarray(0, 4))).toBe(true);
                  fs.closeSync(fd);
                }
              });
            }
          }
          await Promise.all(checks);
          await (closed ?? ring.close());
          for (const [slot, data] of written) {
            const back = Buffer.alloc(data.length);
            expect(fs.readSync(scratch, back, 0, data.length, slot * 65536)).toBe(data.length);
            expect(back.equals(data)).toBe(true);
          }
        } finally {
          await ring.close();
          // Messages whose recvmsg was cancelled are still queued: drain them (and their fds).
          native.close(a);
          for (;;) {
            const got = recvmsg(b, [Buffer.alloc(512)], { maxFds: 8 });
            got.fds.forEach((fd) => fs.closeSync(fd));
            if (got.eof || got.bytesRead === 0) break;
          }
          native.close(b);
          fs.closeSync(src);
          fs.closeSync(scratch);
        }
      }), { numRuns: runs, seed });
    // the bytes of reads whose views were dropped and collected-for were checked, not only counted
    expect(droppedChecked).toBeGreaterThan(0);
    await balanced(fdsBefore);
  });

  it('the target fd closed while ops wait on it: the kernel keeps the file; data or close() settles them', async () => {
    const fdsBefore = openFdCount();
    await fc.assert(fc.asyncProperty(
      fc.integer({ min: 1, max: 20 }), fc.boolean(), fc.boolean(),
      async (waiting, deliver, dropBuffers) => {
        const ring = new Ring({ entries: 8 });
        const [a, b] = native.socketpair('seqpacket');
        let bufs: Buffer[] | null = Array.from({ length: waiting }, () => Buffer.alloc(16));
        const keep = dropBuffers ? [] : bufs;
        const pending = bufs.map((buf) => ring.recv(b, buf));
        bufs = null;
        ring.submit();
        await collectGarbage();
        fs.closeSync(b); // the ops hold their own reference to the socket
        expect(ring.inFlight).toBe(waiting);
        if (deliver) {
          for (let i = 0; i < waiting; i++) sendmsg(a, [Buffer.from(`msg ${i}`)]);
          const got = await Promise.all(pending);
          // several waiters on one socket: which one gets which message is not ordered
          expect([...got].sort()).toEqual(Array.from({ length: waiting }, (_, i) => `msg ${i}`.length).sort());
          if (!dropBuffers) {
            const texts = keep.map((buf, i) => buf.toString('utf8', 0, got[i])).sort();
            expect(texts).toEqual(Array.from({ length: waiting }, (_, i) => `msg ${i}`).sort());
          }
          await ring.close();
        } else {
          const closing = ring.close();
          const settled = await Promise.allSettled(pending);
          await closing;
          for (const s of settled) expect((s as PromiseRejectedResult).reason).toBeInstanceOf(RingClosedError);
        }
        native.close(a);
      }), { numRuns: runs, seed });
    await balanced(fdsBefore);
  });

  it('CQ smaller than the burst: every op completes with the sync result', async () => {
    const fdsBefore = openFdCount();
    await fc.assert(fc.asyncProperty(
      fc.integer({ min: 1, max: 3 }), fc.integer({ min: 50, max: 600 }), fc.array(fc.integer({ min: 0, max: 70_000 }), { minLength: 1, maxLength: 16 }),
      async (entriesLog, burst, offsets) => {
        const entries = 1 << entriesLog;
        const ring = new Ring({ entries, cqEntries: entries });
        const src = fs.openSync(source, 'r');
        try {
          const bufs = Array.from({ length: burst }, () => Buffer.alloc(32));
          const ops = bufs.map((buf, i) => (i % 3 === 0 ? ring.nop().then(() => -1) : ring.read(src, buf, offsets[i % offsets.length])));
          const got = await Promise.all(ops);
          got.forEach((n, i) => {
            if (i % 3 === 0) return expect(n).toBe(-1);
            const expected = expectedRead(offsets[i % offsets.length], 32);
            expect(n).toBe(expected.length);
            expect(bufs[i].subarray(0, n).equals(expected)).toBe(true);
          });
          expect(ring.stats.cqesReaped).toBe(burst);
          if (burst > 2 * entries) expect(ring.stats.overflowQueued).toBeGreaterThan(0);
        } finally {
          await ring.close();
          fs.closeSync(src);
        }
      }), { numRuns: runs, seed });
    await balanced(fdsBefore);
  });
});
