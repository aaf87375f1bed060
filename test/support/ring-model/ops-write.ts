// The Ring's writes and messages in the model-based test: writes to a socket or pipe (what the
// peer must then read, in order), writes to the file (the model's copy of it follows), recvmsg
// and sendmsg with fds on the seqpacket pair, and cancelFd.
import { readParts } from './check-views.js';
import { armThen, makeViews, once, withElementGetter, withOptionGetter, type Adversary } from './getters.js';
import { abortOps, outboundViews, positionArg, type PositionSpec } from './ops.js';
import { taggedBytes } from './channel.js';
import { coverage, type Duct, type World } from './world.js';

const total = (sizes: number[]) => sizes.reduce((a, b) => a + b, 0);

export interface WriteSpec {
  call: 'write' | 'writev' | 'send' | 'sendmsg';
  sizes: number[];
  position: PositionSpec;
  adversary?: Adversary;
}

/** A write to a socket or the pipe: one writer at a time; its bytes are put in the channel
 * before the call (the peer may read them before the Promise settles), cut back if it fails. */
export function writeDuct(world: World, duct: Duct, spec: WriteSpec, where: string): void {
  if (duct.writer !== undefined || duct.peerClosed) return;
  const call = duct.isSocket ? spec.call : spec.call === 'send' || spec.call === 'sendmsg' ? 'write' : spec.call;
  const sizes = call === 'write' || call === 'send' ? spec.sizes.slice(0, 1) : spec.sizes;
  const label = `${call} to ${duct.name} (${where})`;
  const out = duct.outbound!;
  const base = out.length;
  const views = outboundViews(world, duct, sizes);
  const own = { views: views as ArrayBufferView[], lengths: [...sizes] };
  const again = () => {
    const other = world.writable.find((d) => d !== duct && d.writer === undefined && !d.peerClosed);
    if (other !== undefined) writeDuct(world, other, { ...spec, adversary: undefined }, `again, from ${label}'s getter`);
  };
  const fire = once(world, spec.adversary, own, again, `${label}'s getter`);
  // a view detached by the getter: its bytes (or none) go out unseen
  if (spec.adversary?.action === 'detachOwn' || spec.adversary?.action === 'shrinkOwn') out.appendUnknown(total(sizes));
  else for (const v of views) out.append(v);
  const args = spec.adversary?.where === 'element' ? withElementGetter(own.views, fire) : own.views;
  const position = positionArg(spec.position);
  const cancels = duct.cancels;
  duct.writer = label;
  const done = () => {
    if (duct.writer === label) duct.writer = undefined;
  };
  const cut = (length: number) => {
    try {
      out.truncate(length);
    } catch (e) {
      world.fail(`${label}: ${(e as Error).message}`);
    }
  };
  let p: Promise<number>;
  try {
    if (call === 'write') p = world.ring.write(duct.ringFd, args[0], position);
    else if (call === 'writev') p = world.ring.writev(duct.ringFd, args, position);
    else if (call === 'send') p = world.ring.send(duct.ringFd, args[0]);
    else p = world.ring.sendmsg(duct.ringFd, args, spec.adversary?.where === 'option' ? withOptionGetter({ fds: [] as number[] }, 'fds', fire) : undefined);
  } catch (e) {
    done();
    cut(base);
    if (!world.expectedError(e, duct, cancels)) world.fail(`${label} threw ${(e as Error).stack}`);
    return;
  }
  world.track(label, p, (n) => {
    done();
    if (n > total(sizes)) world.fail(`${label}: wrote ${n} of ${total(sizes)} bytes`);
    else if (n < total(sizes)) cut(base + n);
  }, (e) => {
    done();
    const espipe = (e as { code?: string }).code === 'ESPIPE' && typeof position === 'number' && position >= 0;
    if (!espipe && !world.expectedError(e, duct, cancels)) world.fail(`${label} rejected: ${e.stack}`);
    if (duct.peerClosed) out.allowShortEnd();
    else cut(base);
  });
}

/** A write to the file: alone (no read or write of the file in flight). The model's copy of the
 * file takes the bytes when it resolves; the end compares the copy with the file. */
export function writeFile(world: World, spec: WriteSpec, where: string): void {
  const f = world.file;
  if (f.writing || f.readers > 0 || f.positionUser) return;
  const position = positionArg(spec.position);
  const usesPosition = typeof position !== 'number' || position < 0;
  const sizes = spec.call === 'writev' ? spec.sizes : spec.sizes.slice(0, 1);
  const at = usesPosition ? f.position : position!;
  const data = taggedBytes(2, world.spec.seed + 99, at, total(sizes));
  const views: Buffer[] = [];
  for (let off = 0, i = 0; i < sizes.length; off += sizes[i], i++) views.push(data.subarray(off, off + sizes[i]));
  const label = `${spec.call === 'writev' ? 'writev' : 'write'} of the file at ${String(position)} (${where})`;
  f.writing = true;
  if (usesPosition) f.positionUser = true;
  const done = () => {
    f.writing = false;
    if (usesPosition) f.positionUser = false;
  };
  let p: Promise<number>;
  try {
    p = spec.call === 'writev' ? world.ring.writev(f.ringFd, views, position) : world.ring.write(f.ringFd, views[0], position);
  } catch (e) {
    done();
    if (!world.expectedError(e, undefined)) world.fail(`${label} threw ${(e as Error).stack}`);
    return;
  }
  world.track(label, p, (n) => {
    done();
    if (n !== data.length) world.fail(`${label}: wrote ${n} of ${data.length}`);
    if (at + n > f.content.length) f.content = Buffer.concat([f.content, Buffer.alloc(at + n - f.content.length)]);
    data.copy(f.content, at, 0, n);
    if (usesPosition) f.position += n;
  }, (e) => {
    done();
    if (!world.expectedError(e, undefined)) world.fail(`${label} rejected: ${e.stack}`);
  });
}

/** recvmsg on the seqpacket pair: the next message the peer sent, its fds the file's. */
export function recvmsgSeq(world: World, sizes: number[], maxFds: number, adversary: Adversary | undefined, where: string): void {
  const seq = world.seq;
  if (seq.reader !== undefined) return;
  const label = `recvmsg on the seqpacket pair (${where})`;
  const own = makeViews(sizes, 'heap');
  const fire = once(world, adversary, own, () => {}, `${label}'s getter`);
  const views = adversary?.where === 'element' ? withElementGetter(own.views, fire) : own.views;
  const options = adversary?.where === 'option' ? withOptionGetter({ maxFds }, 'maxFds', fire) : { maxFds };
  seq.reader = label;
  let p;
  try {
    p = world.ring.recvmsg(seq.ringFd, views, options);
  } catch (e) {
    seq.reader = undefined;
    if (!world.expectedError(e, undefined)) world.fail(`${label} threw ${(e as Error).stack}`);
    return;
  }
  if (adversary?.where === 'then' && world.recvResultPrototype !== undefined) armThen(world.recvResultPrototype, fire);
  world.track(label, p, (got) => {
    seq.reader = undefined;
    const want = seq.toRing.shift();
    const capacity = total(sizes);
    if (want === undefined) return world.fail(`${label}: a message nobody sent (${got.bytesRead} bytes)`);
    // what the views show (a view detached or shrunk in flight shows less: that part unchecked)
    let off = 0;
    const sameBytes = (readParts(own, got.bytesRead) ?? []).every((part) => {
      if (typeof part === 'number') {
        off += part;
        return true;
      }
      const same = Buffer.from(part).equals(want.bytes.subarray(off, off + part.length));
      off += part.length;
      return same;
    });
    const fdsOk = want.fds > maxFds ? got.fdsTruncated && got.fds.length === 0 : got.fds.length === want.fds;
    // (a view a getter detached counts or not, as the method took it)
    const sizeOk = own.touched ? got.bytesRead <= Math.min(capacity, want.bytes.length) && got.dataTruncated === got.bytesRead < want.bytes.length
      : got.bytesRead === Math.min(capacity, want.bytes.length) && got.dataTruncated === want.bytes.length > capacity;
    if (!sizeOk || !sameBytes || !fdsOk) {
      world.fail(`${label}: got ${got.bytesRead} bytes and ${got.fds.length} fds (truncated: ${got.dataTruncated}/${got.fdsTruncated}); ` +
        `the peer sent ${want.bytes.length} bytes and ${want.fds} fds, into ${capacity} bytes and ${maxFds} fds`);
    }
    for (const fd of got.fds) world.checkFileFd(fd, label);
  }, (e) => {
    seq.reader = undefined;
    if (!world.expectedError(e, undefined)) world.fail(`${label} rejected: ${e.stack}`);
  });
}

/** sendmsg on the seqpacket pair: one message with `fds` copies of the file's fd. */
export function sendmsgSeq(world: World, size: number, fds: number, adversary: Adversary | undefined, where: string): void {
  const seq = world.seq;
  if (seq.writer !== undefined) return;
  const label = `sendmsg of ${size} bytes and ${fds} fds on the seqpacket pair (${where})`;
  const bytes = taggedBytes(0, world.spec.seed + 5, seq.toPeer.length * 1000, size);
  const fire = once(world, adversary, undefined, () => {}, `${label}'s getter`);
  const options = adversary?.where === 'option' ? withOptionGetter({ fds: new Array(fds).fill(world.file.ringFd) }, 'fds', fire) : { fds: new Array(fds).fill(world.file.ringFd) };
  const views = adversary?.where === 'element' ? withElementGetter([bytes.subarray(0, size >> 1), bytes.subarray(size >> 1)], fire) : [bytes];
  const message = { bytes, fds, sent: false };
  seq.toPeer.push(message);
  seq.writer = label;
  const drop = () => {
    seq.writer = undefined;
    if (message.sent) world.fail(`${label}: the peer received it, but it failed`);
    const at = seq.toPeer.indexOf(message);
    if (at >= 0) seq.toPeer.splice(at, 1);
  };
  let p: Promise<number>;
  try {
    p = world.ring.sendmsg(seq.ringFd, views, options);
  } catch (e) {
    drop();
    if (!world.expectedError(e, undefined)) world.fail(`${label} threw ${(e as Error).stack}`);
    return;
  }
  world.track(label, p, (n) => {
    seq.writer = undefined;
    if (n !== size) world.fail(`${label}: sent ${n}`);
  }, (e) => {
    drop();
    if (!world.expectedError(e, undefined)) world.fail(`${label} rejected: ${e.stack}`);
  });
}

/** ring.cancelFd on a socket or pipe: what waits on it may end ECANCELED. */
export function cancelFd(world: World, duct: Duct, where: string): void {
  duct.cancels++;
  // an op waiting in the kernel for bytes that are not there: every one on the fd ends
  // (ECANCELED), without the peer's help, so the peer writes it nothing more (finish.ts)
  if (duct.reader !== undefined && !duct.reader.startsWith('stream') && duct.inbound!.unread === 0) {
    duct.abortedReader = duct.reader;
    coverage.cancelFdWhileWaiting++;
  }
  // a stream's recv and queued sends on it go too
  if (duct.reader?.startsWith('stream')) duct.inbound?.allowGap();
  if (duct.writer?.startsWith('stream')) duct.outbound?.allowShortEnd();
  let p: Promise<number>;
  try {
    p = world.ring.cancelFd(duct.ringFd);
  } catch (e) {
    if (!world.expectedError(e, duct)) world.fail(`cancelFd(${duct.name}) threw ${(e as Error).stack}`);
    return;
  }
  world.track(`cancelFd(${duct.name}) (${where})`, p, (n) => {
    if (!(n >= 0)) world.fail(`cancelFd(${duct.name}) resolved with ${n}`);
  }, (e) => {
    if (!world.expectedError(e, duct)) world.fail(`cancelFd(${duct.name}) rejected: ${e.stack}`);
  });
}

/** recvmsgBatch on the seqpacket pair, of more messages than the peer sent, with the signal,
 * aborted once the ones there came: it rejects, and the messages it had received go with it,
 * their fds closed (the end's check finds any left open). */
export async function recvmsgBatchAborted(world: World, count: number, maxFds: number, turn: () => Promise<void>): Promise<void> {
  const seq = world.seq;
  if (seq.reader !== undefined) return;
  const there = seq.toRing.length;
  const label = `recvmsgBatch of ${count} on the seqpacket pair, ${there} there (a command)`;
  const aborts = world.aborts;
  const buffers = Array.from({ length: count }, () => Buffer.alloc(64));
  seq.reader = label;
  let p;
  try {
    p = world.ring.recvmsgBatch(seq.ringFd, buffers.map((b) => [b]), { maxFds, signal: world.abort.signal });
  } catch (e) {
    seq.reader = undefined;
    if (!world.expectedError(e, undefined)) world.fail(`${label} threw ${(e as Error).stack}`);
    return;
  }
  world.track(label, p, (got) => {
    seq.reader = undefined;
    got.forEach((r, i) => {
      const want = seq.toRing.shift();
      const fdsOk = want !== undefined && (want.fds > maxFds ? r.fds.length === 0 : r.fds.length === want.fds);
      if (want === undefined || !buffers[i].subarray(0, r.bytesRead).equals(want.bytes.subarray(0, 64)) || !fdsOk) {
        world.fail(`${label}: message ${i} of ${r.bytesRead} bytes and ${r.fds.length} fds is not the one the peer sent`);
      }
      for (const fd of r.fds) world.checkFileFd(fd, label);
    });
  }, (e) => {
    seq.reader = undefined;
    if (!world.expectedError(e, undefined, 0, aborts)) world.fail(`${label} rejected: ${e.stack}`);
    if (there > 0) coverage.recvmsgBatchFailedWithFds++;
    seq.toRing.splice(0, Math.min(count, there));
  });
  await turn();
  await turn();
  if (world.closing === undefined) abortOps(world);
}
