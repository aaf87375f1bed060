// What a batch's arguments can do while the Ring reads them: a getter that calls the same
// method again, a getter that answers differently the second time. Each property is read
// once, and each call works from what it read itself. And a readvBatch position given for an fd
// that has none to seek: ESPIPE, as the sync preadv answers, never a read that takes a stream's
// bytes.
import { describe, expect, it } from 'vitest';
import fs from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { native } from '../src/native.js';
import { recvmsg } from '../src/syscalls.js';
import { ringTestSetup } from './support/ring.js';

const { newRing, track, file, dir } = ringTestSetup('iolab-ring-batch-args-');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A FIFO opened for reading and writing (one fd: Linux allows it on a FIFO). */
function fifo(name: string): number {
  const path = join(dir().path, name);
  execFileSync('mkfifo', [path]);
  return track(fs.openSync(path, 'r+'));
}

const espipe = expect.objectContaining({ code: 'ESPIPE', syscall: 'readv' });

describe('a batch whose arguments run JS', () => {
  it('readvBatch: a getter that calls readvBatch again leaves the outer call its own positions', async () => {
    const ring = newRing({ entries: 16 });
    const fd = track(fs.openSync(file('letters', 'abcdefghijklmnopqrstuvwxyz'), 'r'));
    const outer = [Buffer.alloc(4), Buffer.alloc(4)];
    const inner = [Buffer.alloc(4), Buffer.alloc(4)];
    let nested: Promise<number[]> | undefined;
    const requests = [
      { buffers: [outer[0]], position: 0 },
      {
        get buffers() {
          nested = ring.readvBatch(fd, [{ buffers: [inner[0]], position: 12 }, { buffers: [inner[1]], position: 20 }]);
          return [outer[1]];
        },
        position: 4,
      },
    ];
    expect(await ring.readvBatch(fd, requests)).toEqual([4, 4]);
    expect(await nested).toEqual([4, 4]);
    expect(outer.map(String)).toEqual(['abcd', 'efgh']);
    expect(inner.map(String)).toEqual(['mnop', 'uvwx']);
  });

  it('readvBatch: more requests than the kept scratch holds (40, then 100), each at its own position', async () => {
    const ring = newRing({ entries: 16 });
    const bytes = Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 251));
    const fd = track(fs.openSync(file('numbers', bytes), 'r'));
    for (const n of [40, 100, 3]) {
      const buffers = Array.from({ length: n }, () => Buffer.alloc(4));
      const positions = Array.from({ length: n }, (_, i) => (i * 37) % 990);
      expect(await ring.readvBatch(fd, buffers.map((b, i) => ({ buffers: [b], position: positions[i] })))).toEqual(Array(n).fill(4));
      expect(buffers).toEqual(positions.map((p) => bytes.subarray(p, p + 4)));
    }
  });

  it('sendmsgBatch: a message\'s buffers and fds are read once, whatever a getter answers the second time', async () => {
    const ring = newRing({ entries: 16 });
    const [a, b] = track(native.socketpair('seqpacket'));
    const passed = track(fs.openSync(file('passed', 'x'), 'r'));
    const reads = { buffers: 0, fds: 0 };
    const first = {
      get buffers() {
        return ++reads.buffers === 1 ? [Buffer.from('x'), Buffer.from('y')] : [Buffer.from('z')];
      },
      get fds() {
        return ++reads.fds === 1 ? [passed] : [];
      },
    };
    expect(await ring.sendmsgBatch(a, [first, { buffers: [Buffer.from('w')] }])).toEqual([2, 1]);
    expect(reads).toEqual({ buffers: 1, fds: 1 });
    const got = [Buffer.alloc(4), Buffer.alloc(4)].map((buf) => {
      const r = recvmsg(b, [buf], { maxFds: 2 });
      for (const fd of r.fds) native.close(fd);
      return `${buf.toString('utf8', 0, r.bytesRead)}:${r.fds.length}`;
    });
    expect(got).toEqual(['xy:1', 'w:0']);
  });
});

describe('a position on an fd that has none to seek (a socket, a FIFO)', () => {
  it('readvBatch rejects with ESPIPE and reads nothing; without a position it reads the stream, short as is', async () => {
    const ring = newRing({ entries: 16 });
    const [a, b] = track(native.socketpair('stream'));
    native.writev(a, [Buffer.from('abc')]);
    const later = sleep(50).then(() => native.writev(a, [Buffer.from('def')]));
    const buf = Buffer.alloc(6);
    // 0 is the one offset a socket takes from io_uring (as a stream): what was read short would
    // be read again over the bytes already delivered.
    await expect(ring.readvBatch(b, [{ buffers: [buf], position: 0 }])).rejects.toEqual(espipe);
    await expect(ring.readvBatch(b, [{ buffers: [buf], position: 0n }])).rejects.toEqual(espipe); // the object form
    await expect(ring.readvBatch(b, [{ buffers: [buf] }, { buffers: [buf], position: 5 }])).rejects.toEqual(espipe);
    await later;
    expect(await ring.readvBatch(b, [{ buffers: [buf] }])).toEqual([6]);
    expect(buf.toString()).toBe('abcdef');
    const f = fifo('batch');
    fs.writeSync(f, 'xyz');
    await expect(ring.readvBatch(f, [{ buffers: [buf], position: 3 }])).rejects.toEqual(espipe);
    expect(await ring.readvBatch(f, [{ buffers: [buf], position: null }])).toEqual([3]);
    expect(buf.subarray(0, 3).toString()).toBe('xyz');
  });
});
