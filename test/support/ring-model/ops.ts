// The Ring's single ops and readvBatch in the model-based test: each started with views the
// model keeps, its Promise followed by the world, its bytes checked when it settles: reads of a
// socket or pipe against the channel (in order, once, from that fd only), reads of the file
// against the sync pread of the same range, writes appended to what the peer must read. A
// position on a socket or pipe may give ESPIPE (as preadv) or read as a stream.
import { deliverViews, fileViewsMatch, readOnlyOutcome, readParts } from './check-views.js';
import { taggedBytes, type Part } from './channel.js';
import { makeViews, once, withElementGetter, withOptionGetter, type Adversary, type Memory, type OpViews } from './getters.js';
import { coverage, type Duct, type World } from './world.js';

export type PositionSpec = 'omitted' | 'null' | 'minus1' | number;

export function positionArg(p: PositionSpec): number | null | undefined {
  return p === 'omitted' ? undefined : p === 'null' ? null : p === 'minus1' ? -1 : p;
}

const total = (sizes: number[]) => sizes.reduce((a, b) => a + b, 0);
const codeOf = (e: unknown) => (e as { code?: string } | null)?.code;

export interface ReadSpec {
  call: 'read' | 'readv' | 'recv' | 'recvmsg';
  sizes: number[];
  position: PositionSpec;
  memory: Memory;
  adversary?: Adversary;
  /** With the world's AbortSignal (generators 2 on): a command may abort it in flight. */
  signal?: boolean;
}

/** The first free fd with an inbound side other than `not` (for an op started by a getter). */
export function freeReadable(world: World, not?: Duct): Duct | undefined {
  return world.readable.find((d) => d !== not && d.reader === undefined && !d.peerClosed);
}

/** A read of a socket or the pipe: one reader at a time, its bytes the next of the channel. */
export function readDuct(world: World, duct: Duct, spec: ReadSpec, where: string): void {
  if (duct.reader !== undefined) return;
  const call = duct.isSocket ? spec.call : spec.call === 'recv' || spec.call === 'recvmsg' ? 'read' : spec.call;
  const label = `${call} on ${duct.name} (${where})`;
  duct.reader = label;
  const cancels = duct.cancels;
  const sizes = call === 'read' || call === 'recv' ? spec.sizes.slice(0, 1) : spec.sizes;
  // (a read-only mapping only for the file: there the sync preadv says what must happen)
  const own = makeViews(sizes, spec.memory === 'readOnlyMapped' ? 'mapped' : spec.memory, world.map);
  const again = () => {
    const other = freeReadable(world, duct);
    if (other !== undefined) readDuct(world, other, { ...spec, adversary: undefined }, `again, from ${label}'s getter`);
  };
  const fire = once(world, spec.adversary, own, again, `${label}'s getter`);
  const views = spec.adversary?.where === 'element' ? withElementGetter(own.views, fire) : own.views;
  const position = positionArg(spec.position);
  const done = () => {
    world.inFlightViews.delete(own);
    if (duct.reader === label) duct.reader = undefined;
  };
  const aborts = spec.signal ? world.aborts : undefined;
  const signal = spec.signal ? { signal: world.abort.signal } : undefined;
  let p: Promise<number>;
  try {
    if (call === 'read') p = world.ring.read(duct.ringFd, views[0], position, signal);
    else if (call === 'readv') p = world.ring.readv(duct.ringFd, views, position, signal);
    else if (call === 'recv') p = world.ring.recv(duct.ringFd, views[0], undefined, signal);
    else {
      const options = spec.adversary?.where === 'option' ? withOptionGetter({ maxFds: 0, ...signal }, 'maxFds', fire) : { maxFds: 0, ...signal };
      p = world.ring.recvmsg(duct.ringFd, views, options).then((r) => r.bytesRead);
    }
  } catch (e) {
    done();
    if (!world.expectedError(e, duct, cancels, aborts)) world.fail(`${label} threw ${(e as Error).stack}`);
    return;
  }
  world.inFlightViews.add(own);
  const capacity = total(sizes);
  if (spec.signal) world.abortable.add({ duct, label });
  const over = () => {
    done();
    for (const a of world.abortable) if (a.label === label) world.abortable.delete(a);
    if (duct.abortedReader === label) duct.abortedReader = undefined;
  };
  world.track(label, p, (n) => {
    over();
    if (n === 0 && capacity > 0 && !duct.peerClosed && own.views.every((v) => v.byteLength > 0)) world.fail(`${label}: 0 bytes (EOF) while the peer is open`);
    deliverViews(world, duct.inbound!, own, n, label);
  }, (e) => {
    over();
    const espipe = codeOf(e) === 'ESPIPE' && typeof position === 'number' && position >= 0;
    if (!espipe && !world.expectedError(e, duct, cancels, aborts)) world.fail(`${label} rejected: ${e.stack}`);
    if (codeOf(e) === 'ECANCELED' || codeOf(e) === 'ABORT_ERR') coverage.cancelledInKernel++;
  });
}

/** Aborts the world's signal: an op with it waiting in the kernel for bytes (none there) must
 * end without the peer's help (AbortError), so the peer writes it nothing more. */
export function abortOps(world: World): void {
  for (const a of world.abortable) {
    if (a.duct.inbound!.unread === 0 && a.duct.reader === a.label) {
      coverage.abortedInKernel++;
      a.duct.abortedReader = a.label;
    }
  }
  world.aborts++;
  const was = world.abort;
  world.abort = new AbortController();
  was.abort();
}

/** A read of the file: many at once, none while a write is in flight; one at a time where the
 * file position is used. The reference is the sync pread of the same range when it settles. */
export function readFile(world: World, spec: ReadSpec, where: string): void {
  const f = world.file;
  const position = positionArg(spec.position);
  const usesPosition = typeof position !== 'number' || position < 0;
  if (f.writing || (usesPosition && f.positionUser)) return;
  const label = `${spec.call === 'read' ? 'read' : 'readv'} of the file at ${String(position)} (${where})`;
  const sizes = spec.call === 'read' ? spec.sizes.slice(0, 1) : spec.sizes;
  const own = makeViews(sizes, spec.memory, world.map);
  const readOnly = spec.memory === 'readOnlyMapped';
  const fire = once(world, spec.adversary, own, () => readFile(world, { ...spec, adversary: undefined }, `again, from ${label}'s getter`), `${label}'s getter`);
  const views = spec.adversary?.where === 'element' ? withElementGetter(own.views, fire) : own.views;
  const at = usesPosition ? f.position : position!;
  f.readers++;
  if (usesPosition) f.positionUser = true;
  const done = () => {
    world.inFlightViews.delete(own);
    f.readers--;
    if (usesPosition) f.positionUser = false;
  };
  let p: Promise<number>;
  try {
    p = spec.call === 'read' ? world.ring.read(f.ringFd, views[0], position) : world.ring.readv(f.ringFd, views, position);
  } catch (e) {
    done();
    if (!world.expectedError(e, undefined)) world.fail(`${label} threw ${(e as Error).stack}`);
    return;
  }
  world.inFlightViews.add(own);
  world.track(label, p, (n) => {
    done();
    if (readOnly) readOnlyOutcome(world, own, at, n, label);
    else fileViewsMatch(world, own, at, n, label);
    if (usesPosition) f.position += n;
  }, (e) => {
    done();
    if (readOnly && codeOf(e) === 'EFAULT') readOnlyOutcome(world, own, at, 'EFAULT', label);
    else if (!world.expectedError(e, undefined)) world.fail(`${label} rejected: ${e.stack}`);
  });
}

export interface BatchSpec {
  requests: { sizes: number[]; position: PositionSpec }[];
  memory: Memory;
  adversary?: Adversary;
  signal?: boolean;
}

/** readvBatch on the file (explicit positions: its direct path) or on a socket or pipe. */
export function readvBatch(world: World, target: Duct | 'file', spec: BatchSpec, where: string): void {
  const file = target === 'file' ? world.file : undefined;
  const duct = target === 'file' ? undefined : target;
  const positions = spec.requests.map((r) => positionArg(r.position));
  const usesPosition = positions.some((p) => typeof p !== 'number' || p < 0);
  if (file !== undefined && (file.writing || (usesPosition && file.positionUser))) return;
  if (duct !== undefined && duct.reader !== undefined) return;
  const label = `readvBatch of ${duct?.name ?? 'the file'} at [${positions.map(String)}] (${where})`;
  const memory = spec.memory === 'readOnlyMapped' && duct !== undefined ? 'mapped' : spec.memory;
  const own = spec.requests.map((r) => makeViews(r.sizes, memory, world.map));
  const all: OpViews = { views: own.flatMap((o) => o.views), lengths: own.flatMap((o) => o.lengths) };
  const again = () => {
    if (file !== undefined) return readvBatch(world, 'file', { ...spec, adversary: undefined, requests: spec.requests.map((r, i) => ({ ...r, position: i * 100 + 7 })) }, `again, from ${label}'s getter`);
    const other = freeReadable(world, duct);
    if (other !== undefined) readvBatch(world, other, { ...spec, adversary: undefined }, `again, from ${label}'s getter`);
  };
  const fire = once(world, spec.adversary, all, again, `${label}'s getter`);
  const requests = spec.requests.map((r, i): { buffers: ArrayBufferView[]; position?: number | null } => {
    const req: { buffers: ArrayBufferView[]; position?: number | null } = { buffers: own[i].views };
    if (r.position !== 'omitted') req.position = positions[i];
    if (i === spec.requests.length - 1 && spec.adversary?.where === 'option') return withOptionGetter(req, r.position === 'omitted' ? 'buffers' : 'position', fire);
    return req;
  });
  const args = spec.adversary?.where === 'element' ? withElementGetter(requests, fire) : requests;
  const cancels = duct?.cancels ?? 0;
  const aborts = spec.signal ? world.aborts : undefined;
  // positions on a socket or pipe with some bytes there and more to come: the reads must not
  // be retried over what they got
  const firstCapacity = own[0].lengths.reduce((a, b) => a + b, 0);
  if (duct !== undefined && !usesPosition && duct.inbound!.unread > 0 && duct.inbound!.unread < firstCapacity) coverage.positionedBatchWithBytesWaiting++;
  if (duct !== undefined) duct.reader = label;
  if (file !== undefined) {
    file.readers++;
    if (usesPosition) file.positionUser = true;
  }
  const done = () => {
    world.inFlightViews.delete(all);
    if (duct?.abortedReader === label) duct.abortedReader = undefined;
    if (duct !== undefined && duct.reader === label) duct.reader = undefined;
    if (file !== undefined) {
      file.readers--;
      if (usesPosition) file.positionUser = false;
    }
  };
  const startAt = file?.position ?? 0;
  const settle = (results: (number | Error)[]) => {
    if (all.touched) for (const o of own) o.touched = true;
    let at = startAt;
    const reads: { parts: Part[]; who: string }[] = [];
    results.forEach((r, i) => {
      const what = `${label}, request ${i}`;
      const p = positions[i];
      const from = typeof p === 'number' && p >= 0 ? p : at;
      if (r instanceof Error && codeOf(r) !== 'EFAULT' && world.expectedError(r, duct, cancels, aborts)) {
        // cancelled: the Ring closed
      } else if (memory === 'readOnlyMapped') {
        readOnlyOutcome(world, own[i], from, r instanceof Error ? codeOf(r) ?? String(r) : r, what);
        if (typeof r === 'number' && !(typeof p === 'number' && p >= 0)) at += r;
      } else if (r instanceof Error) {
        const espipe = codeOf(r) === 'ESPIPE' && typeof positions[i] === 'number' && positions[i]! >= 0 && duct !== undefined;
        if (!espipe && !world.expectedError(r, duct, cancels)) world.fail(`${what} failed: ${r.stack}`);
      } else if (duct !== undefined) {
        const parts = readParts(own[i], r);
        if (parts === undefined) world.fail(`${what}: ${r} bytes into views of ${own[i].lengths}`);
        else reads.push({ parts, who: what });
      } else {
        fileViewsMatch(world, own[i], from, r, what);
        if (!(typeof p === 'number' && p >= 0)) at += r;
      }
    });
    if (file !== undefined && usesPosition) file.position = at;
    const wrong = duct?.inbound!.deliverAnyOrder(reads);
    if (wrong !== undefined) world.fail(wrong);
  };
  let p: Promise<number[]>;
  try {
    p = world.ring.readvBatch(target === 'file' ? world.file.ringFd : duct!.ringFd, args, spec.signal ? { signal: world.abort.signal } : undefined);
  } catch (e) {
    done();
    if (!world.expectedError(e, duct, cancels, aborts)) world.fail(`${label} threw ${(e as Error).stack}`);
    return;
  }
  world.inFlightViews.add(all);
  world.track(label, p, (counts) => {
    done();
    settle(counts);
  }, (e) => {
    done();
    const results = (e as { results?: (number | Error)[] }).results;
    if (Array.isArray(results) && results.some((r) => typeof r === 'number') && results.some((r) => r instanceof Error)) coverage.batchFailedPartway++;
    if (Array.isArray(results)) settle(results);
    // a position on a socket or pipe: the whole batch refused before anything was read
    else if (codeOf(e) === 'ESPIPE' && duct !== undefined && positions.some((q) => typeof q === 'number' && q >= 0)) return;
    // a view in a read-only mapping: the whole batch refused before anything was read
    else if (codeOf(e) === 'EFAULT' && spec.memory === 'readOnlyMapped') return;
    else if (!world.expectedError(e, duct, cancels, aborts)) world.fail(`${label} rejected: ${e.stack}`);
  });
}

/** The bytes the Ring writes to a socket or pipe: the channel's next, tagged. */
export function outboundViews(world: World, duct: Duct, sizes: number[]): Buffer[] {
  const data = taggedBytes(duct.outbound!.id, world.spec.seed + 13, duct.outbound!.length, total(sizes));
  const out: Buffer[] = [];
  let at = 0;
  for (const n of sizes) {
    out.push(data.subarray(at, at + n));
    at += n;
  }
  return out;
}
