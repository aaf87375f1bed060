// The Ring's completion queue (CQ), where mutants of native/ring/setup.cc and core_reap.cc showed
// no test looked: the size asked with cqEntries is the size the kernel gave (and sized to hold a
// burst, the burst does not overflow it), and a CQ far smaller than what completes, from ops
// submitted in one flush and from ops that all complete at once with no submit of this side, is
// overflowed, flushed and reaped: every completion arrives, once, with its own result.
import { describe, expect, it } from 'vitest';
import fs from 'node:fs';
import { native } from '../src/native.js';
import { ringTestSetup } from './support/ring.js';

const { newRing, track, file } = ringTestSetup('iolab-ring-cq-');

describe('the Ring\'s completion queue', () => {
  it('has the size cqEntries asked (the kernel rounds it up to a power of two), twice the SQ when not asked', () => {
    expect(newRing({ entries: 4, cqEntries: 64 }).features).toMatchObject({ sqEntries: 4, cqEntries: 64 });
    expect(newRing({ entries: 8, cqEntries: 100 }).features).toMatchObject({ sqEntries: 8, cqEntries: 128 });
    expect(newRing({ entries: 16, cqEntries: 16 }).features).toMatchObject({ sqEntries: 16, cqEntries: 16 });
    expect(newRing({ entries: 8 }).features).toMatchObject({ sqEntries: 8, cqEntries: 16 });
  });

  /** 2,000 one-byte reads of a cached file at their own positions, all asked at once. */
  async function burst(ring: ReturnType<typeof newRing>) {
    const text = 'abcdefgh'.repeat(250);
    const fd = track(fs.openSync(file(`burst-${ring.features.cqEntries}.txt`, text), 'r'));
    const bufs = Array.from({ length: text.length }, () => Buffer.alloc(1));
    const results = await Promise.all(bufs.map((b, i) => ring.read(fd, b, i)));
    expect(results).toEqual(Array(text.length).fill(1));
    expect(bufs.map((b) => b.toString()).join('')).toBe(text);
    expect(ring.stats.cqesReaped).toBe(text.length);
    expect(ring.inFlight).toBe(0);
  }

  it('a burst of 2,000 reads through a CQ of 8 overflows it, and every read settles with its own byte', async () => {
    const ring = newRing({ entries: 8, cqEntries: 8 });
    await burst(ring);
    expect(ring.stats.cqOverflows).toBeGreaterThan(0);
  });

  it('the same burst through a CQ sized for it does not overflow', async () => {
    const ring = newRing({ entries: 8, cqEntries: 4096 });
    await burst(ring);
    expect(ring.stats.cqOverflows).toBe(0);
  });

  it('200 receives waiting in the kernel that all complete at once (no submit of this side between): a CQ of 8 overflows, each gets its byte', async () => {
    const ring = newRing({ entries: 8, cqEntries: 8 });
    const pairs = Array.from({ length: 200 }, () => track(native.socketpair('stream')));
    const bufs = pairs.map(() => Buffer.alloc(4));
    const recvs = pairs.map(([mine], i) => ring.recv(mine, bufs[i]));
    // every recv in the kernel: a nop queued behind them settles once they all went in
    await ring.nop();
    expect(ring.inFlight).toBe(200);
    // then the peers write, all in this one JS turn: the CQEs pile up with nobody reaping
    pairs.forEach(([, peer], i) => native.writev(peer, [Buffer.from([i & 0xff, i >> 8])]));
    expect(await Promise.all(recvs)).toEqual(Array(200).fill(2));
    expect(bufs.map((b) => b[0] | (b[1] << 8))).toEqual(pairs.map((_, i) => i));
    expect(ring.stats.cqOverflows).toBeGreaterThan(0);
    expect(ring.inFlight).toBe(0);
  });
});
