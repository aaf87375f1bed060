// The Ring's batch methods (sendmsgBatch, recvmsgBatch, closeFds): many ops queued by one call,
// one Promise for the lot; the values match the per-op methods', errors reject once every op is
// done and leave no fd behind, and close() settles a batch in flight.
import { describe, expect, it } from 'vitest';
import { execa } from 'execa';
import fs from 'node:fs';
import { join } from 'node:path';
import { native, projectRoot } from '../src/native.js';
import { sendmsg } from '../src/syscalls.js';
import { Ring, RingClosedError } from '../src/ring/index.js';
import { checkLeaksAfterAll, collectGarbage, openFdCount } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';

const tmp = shortTempDir('iolab-ring-batch-');
checkLeaksAfterAll(tmp);

const inode = (fd: number) => fs.fstatSync(fd).ino;

async function withRing<T>(options: { entries?: number }, body: (ring: InstanceType<typeof Ring>) => Promise<T>): Promise<T> {
  const ring = new Ring(options);
  try {
    return await body(ring);
  } finally {
    await ring.close();
  }
}

describe('batches', () => {
  it('40 messages with an fd each through an 8-entry ring: sent, received in order, closed', async () => {
    await withRing({ entries: 8 }, async (ring) => {
      const [a, b] = native.socketpair('stream');
      const f = fs.openSync(join(tmp.path, 'passed'), 'w');
      const before = openFdCount();
      const messages = Array.from({ length: 40 }, (_, i) => ({ buffers: [Buffer.from([i])], fds: [f] }));
      const sent = ring.sendmsgBatch(a, messages);
      const buffers = Array.from({ length: 40 }, () => [Buffer.alloc(1)]);
      const got = await ring.recvmsgBatch(b, buffers, { maxFds: 1 });
      expect(await sent).toEqual(Array(40).fill(1));
      expect(ring.stats.overflowQueued).toBeGreaterThan(0); // more than the SQ holds: the backlog took the rest
      expect(buffers.map((v) => v[0][0])).toEqual(Array.from({ length: 40 }, (_, i) => i));
      for (const r of got) {
        expect(r).toMatchObject({ bytesRead: 1, truncated: false, eof: false });
        expect(r.fds).toHaveLength(1);
        expect(inode(r.fds[0])).toBe(inode(f));
      }
      expect(openFdCount()).toBe(before + 40);
      await ring.closeFds(got.map((r) => r.fds[0]));
      expect(openFdCount()).toBe(before);
      expect(native.liveObjects()).toMatchObject({ ringOps: 0, heldBuffers: 0, ownedFds: 0 });
      for (const fd of [a, b, f]) native.close(fd);
    });
  });

  it('messages with several fds each (0 to 3, maxFds 3): each gets its own, in the order they were passed', async () => {
    await withRing({}, async (ring) => {
      const [a, b] = native.socketpair('seqpacket');
      const files = [0, 1, 2].map((i) => fs.openSync(join(tmp.path, `several-${i}`), 'w'));
      const counts = [2, 0, 3, 1];
      const sent = ring.sendmsgBatch(a, counts.map((k, i) => ({ buffers: [Buffer.from([i])], fds: files.slice(3 - k) })));
      const got = await ring.recvmsgBatch(b, counts.map(() => [Buffer.alloc(1)]), { maxFds: 3 });
      expect(await sent).toEqual([1, 1, 1, 1]);
      expect(got.map((r) => r.fds.map(inode))).toEqual(counts.map((k) => files.slice(3 - k).map(inode)));
      await ring.closeFds(got.flatMap((r) => r.fds));
      for (const fd of [a, b, ...files]) native.close(fd);
    });
  });

  it('values equal the per-op methods\' (truncation, credentials, the sender\'s address)', async () => {
    await withRing({}, async (ring) => {
      const receiver = native.socket('unix', 'dgram');
      const sender = native.socket('unix', 'dgram');
      const path = join(tmp.path, 'r.sock');
      const from = join(tmp.path, 's.sock');
      native.bind(receiver, path);
      native.bind(sender, from);
      native.setPassCredentials(receiver, true);
      const f = fs.openSync(join(tmp.path, 'two'), 'w');
      const send = () => {
        sendmsg(sender, [Buffer.from('0123456789')], { to: path, fds: [f, f] });
        sendmsg(sender, [Buffer.from('ab')], { to: path, credentials: true });
      };
      send();
      const one = [await ring.recvmsg(receiver, [Buffer.alloc(4)], { maxFds: 1 }), await ring.recvmsg(receiver, [Buffer.alloc(4)], { maxFds: 1 })];
      send();
      const batch = await ring.recvmsgBatch(receiver, [[Buffer.alloc(4)], [Buffer.alloc(4)]], { maxFds: 1 });
      expect(batch).toEqual(one);
      expect(batch[0]).toMatchObject({ bytesRead: 4, dataTruncated: true, fdsTruncated: true, fds: [], from });
      expect(batch[1]).toMatchObject({ bytesRead: 2, credentials: { pid: process.pid }, from });
      for (const fd of [receiver, sender, f]) native.close(fd);
    });
  });

  it('fds are dup\'ed when the batch is queued: closing one and opening another file before the flush sends the original', async () => {
    await withRing({}, async (ring) => {
      const [a, b] = native.socketpair('seqpacket');
      const original = fs.openSync(join(tmp.path, 'original'), 'w');
      const originalInode = inode(original);
      const sent = ring.sendmsgBatch(a, Array.from({ length: 5 }, () => ({ buffers: [Buffer.from('m')], fds: [original] })));
      fs.closeSync(original);
      const other = fs.openSync(join(tmp.path, 'other'), 'w');
      expect(other).toBe(original);
      await sent;
      const got = await ring.recvmsgBatch(b, Array.from({ length: 5 }, () => [Buffer.alloc(1)]), { maxFds: 1 });
      for (const r of got) expect(inode(r.fds[0])).toBe(originalInode);
      await ring.closeFds(got.map((r) => r.fds[0]));
      for (const fd of [a, b, other]) native.close(fd);
    });
  });

  it('a batch rejects with its first error once every op is done; what the others received is closed', async () => {
    await withRing({}, async (ring) => {
      const [a, b] = native.socketpair('stream');
      const f = fs.openSync(join(tmp.path, 'f'), 'w');
      const before = openFdCount();
      const pending = ring.recvmsgBatch(b, [[Buffer.alloc(1)], [Buffer.alloc(1)], [Buffer.alloc(1)]], { maxFds: 1 });
      sendmsg(a, [Buffer.from('x')], { fds: [f] });
      ring.submit();
      await new Promise((r) => setTimeout(r, 20));
      expect(await ring.cancelFd(b)).toBe(2);
      await expect(pending).rejects.toMatchObject({ code: 'ECANCELED', syscall: 'recvmsg' });
      expect(openFdCount()).toBe(before); // the fd the first op received was closed, not leaked
      await expect(ring.closeFds([987654])).rejects.toMatchObject({ code: 'EBADF', syscall: 'close' });
      await expect(ring.closeFds(new Int32Array([987654]))).rejects.toMatchObject({ code: 'EBADF', syscall: 'close' });
      const two = [fs.openSync(join(tmp.path, 'f'), 'r'), fs.openSync(join(tmp.path, 'f'), 'r')];
      await ring.closeFds(new Int32Array(two));
      for (const fd of two) expect(() => fs.fstatSync(fd)).toThrow(expect.objectContaining({ code: 'EBADF' }));
      await expect(ring.sendmsgBatch(a, [{ buffers: [Buffer.from('m')], fds: [987654] }])).rejects.toMatchObject({ code: 'EBADF', syscall: 'sendmsg' });
      expect(native.liveObjects()).toMatchObject({ ringOps: 0, ownedFds: 0 });
      for (const fd of [a, b, f]) native.close(fd);
    });
  });

  it('views in flight: kept alive by the batch, a detached one never written, a shrunk one gets what fits', async () => {
    await withRing({}, async (ring) => {
      const [a, b] = native.socketpair('seqpacket');
      const shrinking = new (ArrayBuffer as unknown as new (n: number, o: { maxByteLength: number }) => ArrayBuffer & { resize(n: number): void })(8, { maxByteLength: 8 });
      // the messages are there first, so the three ops complete in order when submitted
      for (const fill of [1, 2, 3]) sendmsg(a, [Buffer.alloc(8, fill)]);
      const first = new Uint8Array(8);
      let detached: Uint8Array | null = new Uint8Array(8);
      // the lists and the shrinking view are the batch's alone from here on; the copies into
      // them are made when the completions are reaped, after the GC below
      const pending = ring.recvmsgBatch(b, [[first], [detached], [new Uint8Array(shrinking)]]);
      const moved = structuredClone(detached.buffer, { transfer: [detached.buffer] }) as ArrayBuffer;
      detached = null;
      shrinking.resize(3);
      await collectGarbage();
      const got = await pending;
      expect(got.map((r) => r.bytesRead)).toEqual([8, 8, 8]);
      expect([...first]).toEqual(Array(8).fill(1));
      expect(new Uint8Array(moved).every((x) => x === 0)).toBe(true);
      expect([...new Uint8Array(shrinking)]).toEqual([3, 3, 3]);
      expect(native.liveObjects()).toMatchObject({ ringOps: 0, heldBuffers: 0 });
      native.close(a);
      native.close(b);
    });
  });

  it('bad arguments throw what the per-op methods throw, naming the message', async () => {
    await withRing({}, async (ring) => {
      const [a, b] = native.socketpair('stream');
      const any = ring as unknown as Record<string, (...args: unknown[]) => unknown>;
      await expect(any.sendmsgBatch(a, 'x')).rejects.toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
      await expect(any.sendmsgBatch(a, [{ buffers: [Buffer.from('m')] }, { buffers: 'x' }])).rejects.toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
      await expect(any.sendmsgBatch(a, [{ buffers: [Buffer.from('m')], fds: [-1] }])).rejects.toThrow(expect.objectContaining({ name: 'RangeError', message: expect.stringContaining('messages[0].fds[0]') }));
      await expect(any.sendmsgBatch(a, [{ buffers: [], fds: [a] }])).rejects.toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' })); // a stream needs a payload byte
      await expect(any.recvmsgBatch(b, [[Buffer.alloc(1)], ['x']])).rejects.toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
      await expect(any.recvmsgBatch(b, [[Buffer.alloc(1)]], { maxFds: 254 })).rejects.toThrow(RangeError);
      await expect(any.closeFds([1.5])).rejects.toThrow(expect.objectContaining({ message: expect.stringContaining('fds[0]') }));
      await expect(any.closeFds(new Int32Array([3, -1]))).rejects.toThrow(expect.objectContaining({ name: 'RangeError', message: expect.stringContaining('fds[1]') }));
      // the element named in full, though the names are put together only for the error
      await expect(any.sendmsgBatch(a, [{ buffers: [Buffer.from('m')] }, { buffers: [Buffer.from('m'), 7] }])).rejects.toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE', message: expect.stringContaining('messages[1].buffers[1]') }));
      await expect(any.recvmsgBatch(b, [[Buffer.alloc(1)], [Buffer.alloc(1), 'x']])).rejects.toThrow(expect.objectContaining({ message: expect.stringContaining('buffers[1][1]') }));
      expect(await ring.sendmsgBatch(a, [])).toEqual([]);
      expect(native.liveObjects()).toMatchObject({ ringOps: 0, heldBuffers: 0, ownedFds: 0 });
      native.close(a);
      native.close(b);
    });
  });

  it('close() with a batch in flight rejects it with RingClosedError', async () => {
    const ring = new Ring({ entries: 4 });
    const [a, b] = native.socketpair('stream');
    const pending = ring.recvmsgBatch(b, Array.from({ length: 10 }, () => [Buffer.alloc(1)]));
    ring.submit();
    await new Promise((r) => setTimeout(r, 10));
    const closed = ring.close();
    await expect(pending).rejects.toBeInstanceOf(RingClosedError);
    await closed;
    expect(native.liveObjects()).toMatchObject({ ringOps: 0, heldBuffers: 0 });
    native.close(a);
    native.close(b);
  });
});

describe('readvBatch', () => {
  it('one after another from its own continuations: each settles without the loop waiting for another wake-up', async () => {
    // In a process with nothing else to wake its loop: a batch started in a continuation the
    // loop's prepare phase ran took its CQEs off the CQ there, so the ring fd never became
    // readable for them and the process waited for good (or until an unrelated wake-up).
    const code = `const { Ring } = await import('./src/ring/index.ts');
      const fs = await import('node:fs');
      const fd = fs.openSync('package.json', 'r');
      const ring = new Ring();
      for (let i = 0; i < 200; i++) await ring.readvBatch(fd, [{ buffers: [Buffer.alloc(64)], position: 0 }]);
      await ring.close();
      console.log('done');`;
    const run = await execa(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { cwd: projectRoot, reject: false, timeout: 25_000 });
    expect({ stdout: run.stdout, timedOut: run.timedOut }).toEqual({ stdout: 'done', timedOut: false });
  });

  it("the wake-up a chain of batches needs is a NOP: a write whose SQE slot it reuses is not done again", async () => {
    // A chain of batches longer than one loop turn's reaps leaves CQEs stashed, and the Ring
    // submits one SQE whose CQE wakes the loop for them. Its slot held an earlier op (the 8 SQ
    // slots each held a one-byte write to a socket first): anything but a NOP would do that again.
    const code = `const { Ring } = await import('./src/ring/index.ts');
      const fs = await import('node:fs');
      const { socketpair, setNonBlocking } = await import('./src/index.ts');
      const fd = fs.openSync('package.json', 'r');
      const [r, w] = socketpair('stream');
      const ring = new Ring({ entries: 8 });
      const kept = Array.from({ length: 8 }, (_, i) => Buffer.from([65 + i]));
      for (const b of kept) await ring.write(w, b);
      for (let i = 0; i < 40; i++) await ring.readvBatch(fd, [{ buffers: [Buffer.alloc(64)], position: 0 }]);
      await ring.close();
      setNonBlocking(r, true);
      const got = Buffer.alloc(64);
      let n = 0;
      try { n = fs.readSync(r, got); } catch {}
      console.log(got.subarray(0, n).toString());`;
    const run = await execa(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { cwd: projectRoot, reject: false, timeout: 25_000 });
    expect({ stdout: run.stdout, stderr: run.stderr, timedOut: run.timedOut }).toEqual({ stdout: 'ABCDEFGH', stderr: '', timedOut: false });
  });

  const data = Buffer.from(Array.from({ length: 3 * 4096 + 100 }, (_, i) => (i * 31 + (i >> 8)) & 255));
  const file = () => {
    const path = join(tmp.path, 'readv-data');
    fs.writeFileSync(path, data);
    return fs.openSync(path, 'r');
  };
  // What the sync readv reads at each request's position into lists of the same sizes.
  const syncReads = (fd: number, requests: { sizes: number[]; position: number }[]) => requests.map(({ sizes, position }) => {
    const buffers = sizes.map((n) => Buffer.alloc(n));
    return { bytes: fs.readvSync(fd, buffers, position), buffers };
  });

  it('bytes and contents equal the sync readv\'s: one view or several, short at the end, nothing past it', async () => {
    await withRing({}, async (ring) => {
      const fd = file();
      const requests = [
        { sizes: [4096], position: 4096 }, { sizes: [10, 4000, 86], position: 7 }, { sizes: [4096], position: 3 * 4096 },
        { sizes: [4096], position: 10 * 4096 }, { sizes: [0], position: 0 }, { sizes: [1, 2, 3], position: data.length - 4 },
        ...Array.from({ length: 26 }, (_, i) => ({ sizes: [4096], position: (i * 977) % data.length })),
      ];
      const expected = syncReads(fd, requests);
      // page-cache reads of a regular file (straight into the views), and the same through an
      // 8-entry ring, where the batch does not fit the SQ (bounce memory, the backlog)
      for (const small of [false, true]) {
        const target = small ? new Ring({ entries: 8 }) : ring;
        const lists = requests.map(({ sizes }) => sizes.map((n) => Buffer.alloc(n)));
        const got = await target.readvBatch(fd, requests.map((r, i) => ({ buffers: lists[i], position: r.position })));
        expect(got).toEqual(expected.map((e) => e.bytes));
        lists.forEach((list, i) => list.forEach((b, k) => expect(b.equals(expected[i].buffers[k])).toBe(true)));
        if (small) await target.close();
      }
      // the object form (a bigint position) and the file position (null, undefined, -1) read the same
      const viaObject = [Buffer.alloc(100)];
      expect(await ring.readvBatch(fd, [{ buffers: viaObject, position: 5n }])).toEqual([100]);
      expect(viaObject[0].equals(data.subarray(5, 105))).toBe(true);
      const atFile = [[Buffer.alloc(3)], [Buffer.alloc(4)], [Buffer.alloc(5)]];
      expect(await ring.readvBatch(fd, [{ buffers: atFile[0] }, { buffers: atFile[1], position: null }, { buffers: atFile[2], position: -1 }])).toEqual([3, 4, 5]);
      expect(Buffer.concat(atFile.flat()).equals(data.subarray(0, 12))).toBe(true);
      expect(await ring.readvBatch(fd, [])).toEqual([]);
      expect(native.liveObjects()).toMatchObject({ ringOps: 0, heldBuffers: 0 });
      fs.closeSync(fd);
    });
  });

  it('reads that wait (a socket) settle together once the last has data', async () => {
    await withRing({}, async (ring) => {
      const [a, b] = native.socketpair('seqpacket');
      const views = [[Buffer.alloc(8)], [Buffer.alloc(8)]];
      const pending = ring.readvBatch(b, views.map((buffers) => ({ buffers })));
      ring.submit();
      await new Promise((r) => setTimeout(r, 10));
      sendmsg(a, [Buffer.from('one')]);
      sendmsg(a, [Buffer.from('second')]);
      // both wait in the kernel; which one a message wakes is the kernel's choice
      const got = await pending;
      expect([...got].sort()).toEqual([3, 6]);
      expect(views.map((v) => v[0].toString('latin1').replace(/\0+$/, '')).sort()).toEqual(['one', 'second']);
      native.close(a);
      native.close(b);
    });
  });

  it('a failed op rejects the batch with its error, index and every op\'s result; the others\' bytes are in their views', async () => {
    await withRing({}, async (ring) => {
      const fd = file();
      const first = [Buffer.alloc(16)];
      const last = [Buffer.alloc(16)];
      // pos + count past 2^63 - 1: the kernel's EINVAL for that op alone, as the sync readv gets
      const failing = { buffers: [Buffer.alloc(16)], position: 2n ** 63n - 5n };
      expect(() => native.readv(fd, failing.buffers, failing.position)).toThrow(expect.objectContaining({ code: 'EINVAL' }));
      const error = await ring.readvBatch(fd, [{ buffers: first, position: 0 }, failing, { buffers: last, position: 100 }]).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'EINVAL', syscall: 'readv', index: 1 });
      const results = (error as { results: unknown[] }).results;
      expect(results[0]).toBe(16);
      expect(results[1]).toMatchObject({ code: 'EINVAL' });
      expect(results[2]).toBe(16);
      expect(first[0].equals(data.subarray(0, 16))).toBe(true);
      expect(last[0].equals(data.subarray(100, 116))).toBe(true);
      await expect(ring.readvBatch(987654, [{ buffers: [Buffer.alloc(1)], position: 0 }])).rejects.toMatchObject({ code: 'EBADF', index: 0 });
      expect(native.liveObjects()).toMatchObject({ ringOps: 0, heldBuffers: 0 });
      fs.closeSync(fd);
    });
  });

  it('bad input throws a clear error naming the request; a view detached while the batch is read gets nothing', async () => {
    await withRing({}, async (ring) => {
      const fd = file();
      const any = ring as unknown as Record<string, (...args: unknown[]) => unknown>;
      const b = () => [Buffer.alloc(4)];
      await expect(any.readvBatch(fd, 'x')).rejects.toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE', message: expect.stringContaining('requests') }));
      await expect(any.readvBatch(fd, [{ buffers: b() }, 7])).rejects.toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE', message: expect.stringContaining('requests[1]') }));
      await expect(any.readvBatch(fd, [{ buffers: b() }, { buffers: 'x' }])).rejects.toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
      await expect(any.readvBatch(fd, [{ buffers: b() }, { buffers: [Buffer.alloc(1), 'x'] }])).rejects.toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE', message: expect.stringContaining('requests[1].buffers[1]') }));
      for (const position of [-2, 1.5, NaN, 2 ** 53]) {
        await expect(any.readvBatch(fd, [{ buffers: b(), position: 0 }, { buffers: b(), position }])).rejects.toThrow(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE', message: expect.stringContaining('requests[1].position') }));
      }
      await expect(any.readvBatch(fd, [{ buffers: b(), position: '1' }])).rejects.toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE', message: expect.stringContaining('requests[0].position') }));
      await expect(any.readvBatch(-1, [{ buffers: b() }])).rejects.toThrow(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }));
      expect(native.liveObjects()).toMatchObject({ ringOps: 0, heldBuffers: 0 });
      // a getter run while the batch is read detaches the next request's buffer: it reads nothing
      const victim = Buffer.alloc(4096);
      const first = { position: 0, get buffers() { structuredClone(victim.buffer, { transfer: [victim.buffer] }); return [Buffer.alloc(8)]; } };
      expect(await ring.readvBatch(fd, [first, { buffers: [victim], position: 0 }])).toEqual([8, 0]);
      fs.closeSync(fd);
    });
  });

  it('close() right after a batch: reads that completed keep their bytes, reads that wait reject with RingClosedError', async () => {
    const ring = new Ring({ entries: 64 });
    const fd = file();
    const [a, b] = native.socketpair('stream');
    const done = ring.readvBatch(fd, [{ buffers: [Buffer.alloc(64)], position: 0 }, { buffers: [Buffer.alloc(64)], position: 64 }]);
    const waiting = ring.readvBatch(b, Array.from({ length: 5 }, () => ({ buffers: [Buffer.alloc(1)] })));
    ring.submit();
    const closed = ring.close();
    expect(await done).toEqual([64, 64]);
    await expect(waiting).rejects.toBeInstanceOf(RingClosedError);
    await closed;
    await expect(ring.readvBatch(fd, [])).rejects.toThrow(RingClosedError);
    expect(native.liveObjects()).toMatchObject({ ringOps: 0, heldBuffers: 0 });
    for (const f of [a, b, fd]) native.close(f);
  });
});
