// What a batch's arguments can do while the Ring reads them: a getter that calls the same
// method again, a getter that answers differently the second time. Each property is read
// once, and each call works from what it read itself.
import { describe, expect, it } from 'vitest';
import fs from 'node:fs';
import { native } from '../src/native.js';
import { recvmsg } from '../src/syscalls.js';
import { ringTestSetup } from './support/ring.js';

const { newRing, track, file } = ringTestSetup('iolab-ring-batch-args-');

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
      return `${buf.toString('utf8', 0, r.bytes)}:${r.fds.length}`;
    });
    expect(got).toEqual(['xy:1', 'w:0']);
  });
});
