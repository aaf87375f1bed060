// A channel's shared region laid out by a test acting as the creator (docs/channel.md's layout),
// for the tests that play the other side of a Channel: test/channel-bounds.test.ts and
// test/channel-protocol.test.ts.
import { native } from '../../src/native.js';

export const HEADER = 4096;
/** A direction's fields (docs/channel.md): [d] is written by side d, read by side 1 - d. Indexes
 * into the region's BigUint64Array (HEAD, TAIL) or Uint32Array (the flags). */
export const HEAD = (d: number) => (64 + 192 * d) / 8;
export const TAIL = (d: number) => (64 + 192 * d + 64) / 8;
export const READER_WAITING = (d: number) => (64 + 192 * d + 128) / 4;
export const WRITER_WAITING = (d: number) => (64 + 192 * d + 132) / 4;

/** A sealed region of `capacity` as a creator makes it, `edit` applied before the seals. The
 * caller munmaps `mapping` and closes `memfd`. */
export function craftedRegion(capacity: number, edit: (words: BigUint64Array, u32: Uint32Array, u8: Uint8Array) => void = () => {}) {
  const bytes = HEADER + 2 * capacity;
  const memfd = native.memfdCreate('crafted-channel');
  native.ftruncate(memfd, bytes);
  const mapping = native.mmap(memfd, bytes, { write: true });
  const u8 = new Uint8Array(mapping);
  u8.set(Buffer.from('iolabch1'));
  const u32 = new Uint32Array(mapping);
  const words = new BigUint64Array(mapping);
  u32[2] = 1;
  u32[3] = HEADER;
  words[2] = BigInt(capacity);
  edit(words, u32, u8);
  native.addSeals(memfd, native.seals.F_SEAL_SHRINK | native.seals.F_SEAL_GROW | native.seals.F_SEAL_SEAL);
  return { memfd, mapping, words, u32 };
}

/** Message i of a test stream: `size` bytes drawn from i (test/channel.test.ts, channel-worker). */
export function message(i: number, size: number): Buffer {
  const m = Buffer.alloc(size);
  for (let k = 0; k < size; k++) m[k] = (i * 131 + k * 7) & 0xff;
  return m;
}
