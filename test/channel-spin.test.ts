// When a side that waits spins before it sleeps (src/ring/channel-sleep.ts): a spin that found
// nothing is not tried for the next 16 waits, then 32, doubling to 1,024, since on a machine with
// no core to spare the other side cannot answer while this one spins; one that found what it
// waited for spins again at the next wait. Only the policy is tested here, over a stand-in for
// the addon's end that counts its spins and answers from a script: what a spin costs and finds
// on the real queue is the channel tests' and bench api's.
import { describe, expect, it } from 'vitest';
import type { NativeChannelEnd } from '../src/native.js';
import type { Ring } from '../src/ring/ring.js';
import { Sleeper } from '../src/ring/channel-sleep.js';

/** A Sleeper over an end whose spins answer `finds` in turn (then nothing); its spins' count. */
function sleeperOver(finds: boolean[], spinNs = 20_000) {
  const spins: { wantMessage: boolean; wantRoom: boolean; pendingBytes: number; ns: number }[] = [];
  const end = {
    spin(wantMessage: boolean, wantRoom: boolean, pendingBytes: number, ns: number) {
      spins.push({ wantMessage, wantRoom, pendingBytes, ns });
      return finds[spins.length - 1] ?? false;
    },
  } as unknown as NativeChannelEnd;
  const handlers = { woken() {}, ended() {}, failed() {} };
  return { sleeper: new Sleeper(undefined as unknown as Ring, end, true, spinNs, handlers), spins };
}

describe('Channel: when a wait spins', () => {
  it('a spin that found nothing is skipped for the next 16 waits, then 32, 64, ... up to 1,024', () => {
    const { sleeper, spins } = sleeperOver([]);
    const spunAt: number[] = [];
    for (let wait = 0; wait < 2 + 16 + 32 + 64 + 128 + 256 + 512 + 1024 + 1024 + 1024; wait++) {
      const before = spins.length;
      expect(sleeper.spin(true, false, 0)).toBe(false);
      if (spins.length > before) spunAt.push(wait);
    }
    const gaps = spunAt.slice(1).map((w, i) => w - spunAt[i] - 1);
    expect(spunAt[0]).toBe(0);
    expect(gaps).toEqual([16, 32, 64, 128, 256, 512, 1024, 1024]);
  });

  it('a spin that found what it waited for resets the skip: the next wait spins at once', () => {
    // fails, (16 skipped), finds, finds, fails, (16 skipped again, not 32)
    const { sleeper, spins } = sleeperOver([false, true, true, false, true]);
    const results: boolean[] = [];
    for (let wait = 0; wait < 1 + 16 + 1 + 1 + 1 + 16 + 1; wait++) results.push(sleeper.spin(false, true, 64));
    expect(spins).toHaveLength(5);
    expect(results.filter(Boolean)).toHaveLength(3);
    expect(results.slice(0, 18)).toEqual([false, ...Array(16).fill(false), true]);
    expect(results.slice(18, 20)).toEqual([true, false]);
    expect(results.at(-1)).toBe(true);
    expect(spins[0]).toEqual({ wantMessage: false, wantRoom: true, pendingBytes: 64, ns: 20_000 });
  });

  it('spin 0 never spins', () => {
    const { sleeper, spins } = sleeperOver([true], 0);
    for (let i = 0; i < 10; i++) expect(sleeper.spin(true, false, 0)).toBe(false);
    expect(spins).toHaveLength(0);
  });
});
