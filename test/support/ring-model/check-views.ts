// What a read in the model-based test got, view by view, against what it should have: the
// channel's next bytes (a socket or pipe) or the sync pread of the same range (the file). A view
// detached in flight gets nothing and a shrunk one what still fits (docs/ring.md): those bytes
// count as read, unseen.
import { readvSync } from '../../../src/index.js';
import type { World } from './world.js';
import type { ByteChannel, Part } from './channel.js';
import type { OpViews } from './getters.js';

/** Per view: [bytes of the read it covers, of them what the view shows now]. */
function portions(own: OpViews, n: number): [number, number][] {
  const out: [number, number][] = [];
  let off = 0;
  own.lengths.forEach((length, i) => {
    const portion = Math.max(0, Math.min(length, n - off));
    const now = own.views[i].byteLength;
    out.push([portion, Math.min(portion, now)]);
    off += length;
  });
  return out;
}

function bytesOf(view: ArrayBufferView, length: number): Uint8Array {
  return new Uint8Array(view.buffer, view.byteOffset, length);
}

/** What a read of n bytes into own's views shows: per view, the bytes it holds and a count of
 * those it lost. Undefined when n does not fit the views. */
export function readParts(own: OpViews, n: number): Part[] | undefined {
  const capacity = own.lengths.reduce((a, b) => a + b, 0);
  if (n > capacity || n < 0) return undefined;
  if (own.touched) return [n];
  const parts: Part[] = [];
  portions(own, n).forEach(([portion, seen], i) => {
    if (seen > 0) parts.push(Uint8Array.from(bytesOf(own.views[i], seen)));
    if (portion > seen) parts.push(portion - seen);
  });
  return parts;
}

/** A socket's or the pipe's read of n bytes into own's views. */
export function deliverViews(world: World, channel: ByteChannel, own: OpViews, n: number, label: string): void {
  const parts = readParts(own, n);
  const wrong = parts === undefined ? `${label}: ${n} bytes into views of ${own.lengths}` : channel.deliverParts(parts, label);
  if (wrong !== undefined) world.fail(wrong);
}

/** A read of the file at `at` that gave n bytes: as many as the sync pread, and the same. */
export function fileViewsMatch(world: World, own: OpViews, at: number, n: number, label: string): void {
  const capacity = own.lengths.reduce((a, b) => a + b, 0);
  const want = world.syncFileRead(at, capacity);
  if (own.touched) {
    if (n > want.length) world.fail(`${label}: ${n} bytes, the sync pread of ${capacity} at ${at} gives ${want.length}`);
    return;
  }
  if (n !== want.length) return world.fail(`${label}: ${n} bytes, the sync pread of ${capacity} at ${at} gives ${want.length}`);
  let off = 0;
  portions(own, n).forEach(([portion, seen], i) => {
    const got = Buffer.from(bytesOf(own.views[i], seen));
    const expected = want.subarray(off, off + seen);
    if (!got.equals(expected)) world.fail(`${label}: view ${i} holds other bytes than the sync pread at ${at + off}`);
    off += portion;
  });
}

/** What the sync preadv of the file at `at` into the same views gives: a count, or an errno
 * code (EFAULT into a read-only mapping). For the views of a read-only mapping, which a read
 * that succeeded would have to have written. */
export function syncIntoSameViews(world: World, own: OpViews, at: number): number | string {
  try {
    return readvSync(world.file.syncFd, own.views, at);
  } catch (e) {
    return (e as { code?: string }).code ?? String(e);
  }
}

/** A read of the file into a read-only mapping: it fails as the sync preadv does (EFAULT), or
 * reads nothing where that reads nothing. */
export function readOnlyOutcome(world: World, own: OpViews, at: number, outcome: number | string, label: string): void {
  const sync = syncIntoSameViews(world, own, at);
  if (outcome !== sync) world.fail(`${label}: into a read-only mapping it gave ${outcome}, the sync preadv into the same memory ${sync}`);
}
