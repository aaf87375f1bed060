// The real side of the Ring's model-based test: one Ring with its buffer rings, three stream
// socketpairs, a pipe each way (FIFOs), a seqpacket pair for messages with fds, and a file;
// the model's accounting beside each (channel.ts), the Promises in flight, the buffers JS holds,
// and what went wrong. Commands (commands.ts) act on it through ops.ts and streams.ts.
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { join } from 'node:path';
import {
  Ring, ftruncate, memfdCreate, mmap, munmap, readvSync, recvmsg, sendmsg, setNonBlocking, getsockopt, setsockopt, socketpair, writevSync, type BufferRing, type RingStream,
} from '../../../src/index.js';
import { ByteChannel, taggedBytes } from './channel.js';

export interface WorldSpec {
  /** The generators' version that drew it (run.ts): a seed replays with its own. */
  gen: number;
  seed: number;
  entries: number;
  pools: { count: number; size: number }[];
  /** How the sequence ends: everything caught up first, or ring.close() as things are (streams
   * open, starved, paused, buffers held). */
  end: 'settled' | 'ringClose';
  /** SO_SNDBUF of the Ring's ends of the stream sockets (1: the kernel's least), so that a
   * send meets a full socket; undefined: the kernel's default. */
  sndbuf?: number;
  /** A CQ as small as the SQ (cqEntries = entries), which a burst of completions overflows;
   * false: the Ring's default (twice the SQ). */
  tinyCq?: boolean;
}

/** One fd the Ring uses and the peer's end of it: `in` is what the peer writes for the Ring to
 * read, `out` what the Ring writes for the peer to read. One reader and one writer at a time:
 * two at once would get bytes in the kernel's order, which the model cannot know. */
export class Duct {
  reader: string | undefined;
  writer: string | undefined;
  peerClosed = false;
  /** cancelFd calls on this fd so far: an op or stream started before the last may end ECANCELED */
  cancels = 0;
  /** Reads by the peer that got bytes (a paused stream may resume after one). */
  peerReads = 0;
  /** An op aborted while it waited here for bytes: the peer leaves it be (finish.ts). */
  abortedReader: string | undefined;
  constructor(
    readonly name: string,
    readonly ringFd: number,
    readonly peerFd: number,
    readonly isSocket: boolean,
    readonly inbound: ByteChannel | undefined,
    readonly outbound: ByteChannel | undefined,
  ) {}
}

/** A stream of the model (streams.ts). */
export interface StreamLike {
  readonly name: string;
  readonly duct: Duct;
  readonly pool: number;
  /** Queued bytes past which it stops receiving (the stream's pauseAt). */
  readonly pauseAt: number;
  readonly stream: RingStream;
  closeCalled: boolean;
  finished: boolean;
  ended: boolean;
  /** pause() was called and resume() not since. */
  userPaused: boolean;
  close(where: string): void;
  /** pause() (true) or resume() (false), as a user calls them. */
  pauseByUser(on: boolean): void;
}

/** A buffer JS holds, with the bytes it had when it came. */
export interface Held {
  pool: number;
  id: number;
  bytes: Buffer;
}

/** What JS re-entering the Ring does (from a getter, an iterator, a `then` or a handler). */
export type Reentry = 'closeRing' | 'closeStream' | 'openStream' | 'startRecv' | 'detachOther' | 'shrinkOther';

export interface Message {
  bytes: Buffer;
  fds: number;
}

/** What the generators reached, summed over a run (the test asserts the paths were hit). */
export const coverage = {
  sequences: 0,
  cqOverflows: 0,
  commands: 0,
  closeInDataHandler: 0,
  openInDataHandler: 0,
  closeThenOpenInDataHandler: 0,
  ringClosedInHandler: 0,
  poolHeldWhilePeerSends: 0,
  pausedStreams: 0,
  reentered: 0,
  detachedInFlight: 0,
  shrunkInFlight: 0,
  positionedBatchWithBytesWaiting: 0,
  streamsOpened: 0,
  ringClosedMidway: 0,
  notHeldReleaseThrew: 0,
  recvNoBuffers: 0,
  streamSlotsReused: 0,
  streamSendsCopied: 0,
  // (generators 2 on)
  /** a stream got end(null) after its peer closed (finish.ts waits for it) */
  endAfterPeerClose: 0,
  /** a held buffer sent while the peer had not read more than the socket's send buffer */
  heldSendsIntoFullSocket: 0,
  /** the peer read only part of what waited for it */
  peerPartialReads: 0,
  /** a data handler called while its stream's queued bytes were past its pauseAt */
  chunksWhilePaused: 0,
  /** an op on a socket or pipe ended ECANCELED (cancelFd) or AbortError while in the kernel */
  cancelledInKernel: 0,
  /** an op aborted (its signal) while in the kernel */
  abortedInKernel: 0,
  /** a readvBatch rejected with some of its reads done and another failed */
  batchFailedPartway: 0,
  /** cancelFd while an op waited in the kernel on that fd with no bytes there */
  cancelFdWhileWaiting: 0,
  /** a recvmsgBatch aborted after it had received messages with fds */
  recvmsgBatchFailedWithFds: 0,
  // (generators 3 on)
  /** a stream paused by pause() while its peer's bytes waited in the socket */
  userPausedWithBytesWaiting: 0,
  /** a data handler called after pause(): a chunk the kernel had taken before the cancel */
  chunksAfterPause: 0,
  /** a stream resumed by resume() after pause() */
  userResumed: 0,
  /** cancelFd while a readvBatch of several reads waited on that fd */
  cancelFdOverBatch: 0,
  /** pool.close() with buffers of it held by JS */
  poolClosedWhileHeld: 0,
  /** pool.close() refused: a stream on it not finished */
  poolCloseRefused: 0,
};

/** Memory that many ops share (the world's mappings): never detached (getters.ts). */
export const undetachable = new WeakSet<ArrayBufferLike>();

const MAPPED = 1 << 18; // bytes of the memfd mapped for ops' views: a sequence's ops never wrap onto a live one

/** The file a process's sequences use (one at a time), removed when it exits. */
const files = new Map<string, string>();
function fileOf(dir: string): string {
  let path = files.get(dir);
  if (path === undefined) {
    const made = join(dir, `file-${process.pid}-${randomUUID()}`);
    process.on('exit', () => fs.rmSync(made, { force: true }));
    files.set(dir, made);
    path = made;
  }
  return path;
}

const fifoDirs = new Map<string, { in: string; out: string }>();

/** Two FIFOs per process, made once (with the mkfifo program: Node has no mkfifo). */
function fifos(dir: string): { in: string; out: string } {
  let f = fifoDirs.get(dir);
  if (f === undefined) {
    // (a random part too: a child after a crash may get a pid an earlier one had)
    const tag = `${process.pid}-${randomUUID()}`;
    const made = { in: join(dir, `in-${tag}`), out: join(dir, `out-${tag}`) };
    execFileSync('mkfifo', [made.in, made.out]);
    process.on('exit', () => {
      fs.rmSync(made.in, { force: true });
      fs.rmSync(made.out, { force: true });
    });
    fifoDirs.set(dir, made);
    f = made;
  }
  return f;
}

export class World {
  /** The prototype of the values recvmsg resolves with (run.ts finds it): where a `then`
   * getter runs when the addon settles a recvmsg. */
  static recvResultPrototype: object | undefined;
  get recvResultPrototype(): object | undefined {
    return World.recvResultPrototype;
  }
  readonly ring: Ring;
  readonly pools: BufferRing[];
  readonly ducts: Duct[] = [];
  /** The seqpacket pair: messages with fds, each way. */
  readonly seq: { ringFd: number; peerFd: number; toRing: Message[]; toPeer: (Message & { sent: boolean })[]; reader?: string; writer?: string };
  readonly file: { ringFd: number; syncFd: number; content: Buffer; position: number; writing: boolean; readers: number; positionUser: boolean };
  readonly streams: StreamLike[] = [];
  /** Streams made so far (their names' numbers). */
  streamsMade = 0;
  readonly held: Held[] = [];
  /** pool.close() succeeded on these pools (held.ts): their buffers are no one's. */
  readonly poolClosed: boolean[] = [];
  /** The signal of ops started with one (ops.ts); a command aborts it and makes the next. */
  abort = new AbortController();
  /** The Ring's sockets' send buffer as the kernel holds it, when the spec made it small. */
  sndbuf: number | undefined;
  /** abort() calls so far. */
  aborts = 0;
  /** Ops in flight with the signal. */
  readonly abortable = new Set<{ duct: Duct; label: string }>();
  readonly violations: string[] = [];
  /** The Promises not settled yet, by what they are. */
  readonly pending = new Set<{ label: string }>();
  /** The views of reads in flight (a getter may detach or shrink them). */
  readonly inFlightViews = new Set<{ views: ArrayBufferView[]; lengths: number[] }>();
  /** ring.close() was called (from a command, a handler or a getter). */
  closing: Promise<void> | undefined;
  /** End of the sequence: handlers only release. */
  quiescing = false;
  /** Errors handlers threw on purpose (each must reach the process as uncaught). */
  plannedThrows = 0;
  readonly fdsOpened: number[] = [];
  /** Runs one re-entering action (reentry.ts installs it: it opens streams and starts ops). */
  reenter: (action: Reentry, where: string) => void = () => {};

  private constructor(readonly spec: WorldSpec, readonly dir: string, paths: { in: string; out: string }, readonly filePath: string) {
    this.ring = new Ring({ entries: spec.entries, ...(spec.tinyCq ? { cqEntries: spec.entries } : {}) });
    this.pools = spec.pools.map((p) => this.ring.setupBufRing(p));
    for (let k = 0; k < 3; k++) {
      const [r, p] = this.#keep(socketpair('stream'));
      setNonBlocking(p, true);
      if (spec.sndbuf !== undefined) {
        setsockopt(r, 'SO_SNDBUF', spec.sndbuf);
        this.sndbuf = getsockopt(r, 'SO_SNDBUF');
      }
      this.ducts.push(new Duct(`socket ${k}`, r, p, true, new ByteChannel(k, `socket ${k} in`), new ByteChannel(k, `socket ${k} out`, false)));
    }
    // A FIFO's read end opened non-blocking does not wait for a writer; the Ring's end is then
    // made blocking, as io_uring waits for a blocking fd (a non-blocking one gives EAGAIN).
    const inRead = this.#keep(fs.openSync(paths.in, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK));
    const inWrite = this.#keep(fs.openSync(paths.in, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK));
    setNonBlocking(inRead, false);
    this.ducts.push(new Duct('pipe in', inRead, inWrite, false, new ByteChannel(3, 'pipe in'), undefined));
    const outRead = this.#keep(fs.openSync(paths.out, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK));
    const outWrite = this.#keep(fs.openSync(paths.out, fs.constants.O_WRONLY));
    this.ducts.push(new Duct('pipe out', outWrite, outRead, false, undefined, new ByteChannel(3, 'pipe out', false)));
    const [sr, sp] = this.#keep(socketpair('seqpacket'));
    setNonBlocking(sp, true);
    this.seq = { ringFd: sr, peerFd: sp, toRing: [], toPeer: [] };
    const content = taggedBytes(2, spec.seed, 0, 12_000);
    fs.writeFileSync(filePath, content);
    this.file = {
      ringFd: this.#keep(fs.openSync(filePath, 'r+')),
      syncFd: this.#keep(fs.openSync(filePath, 'r')),
      content, position: 0, writing: false, readers: 0, positionUser: false,
    };
    const memfd = this.#keep(memfdCreate(`iolab-ring-model-${process.pid}`));
    ftruncate(memfd, MAPPED);
    this.mappings = [mmap(memfd, MAPPED, { write: true }), mmap(memfd, MAPPED)];
    for (const m of this.mappings) undetachable.add(m);
  }

  readonly mappings: ArrayBuffer[];
  #mapped = 0;

  /** n bytes of the memfd's mapping no other op uses now (read-write, or read-only). */
  readonly map = (n: number, writable: boolean): Uint8Array => {
    if (this.#mapped + n > MAPPED) this.#mapped = 0;
    const view = new Uint8Array(this.mappings[writable ? 0 : 1], this.#mapped, n);
    this.#mapped += n;
    return view;
  };

  /** Unmaps the mappings (their ArrayBuffers detach). */
  unmap(): void {
    for (const m of this.mappings) if (m.byteLength > 0) munmap(m);
  }

  static create(spec: WorldSpec, dir: string): World {
    return new World(spec, dir, fifos(dir), fileOf(dir));
  }

  #keep<T extends number | number[]>(fds: T): T {
    for (const fd of ([] as number[]).concat(fds)) this.fdsOpened.push(fd);
    return fds;
  }

  /** The ducts with an inbound side (sockets, then the pipe in) and with an outbound side. */
  get readable(): Duct[] {
    return this.ducts.filter((d) => d.inbound !== undefined);
  }
  get writable(): Duct[] {
    return this.ducts.filter((d) => d.outbound !== undefined);
  }
  get sockets(): Duct[] {
    return this.ducts.filter((d) => d.isSocket);
  }

  fail(message: string): void {
    this.violations.push(message);
  }

  /** Throws the first thing that went wrong. */
  throwIfFailed(): void {
    if (this.violations.length > 0) throw new Error(this.violations.join('\n'));
  }

  /** Follows a Promise: it must settle (the end checks that none is left); `ok`/`err` check
   * its value. */
  track<T>(label: string, promise: Promise<T>, ok: (value: T) => void, err: (error: Error) => void): void {
    const entry = { label };
    this.pending.add(entry);
    const settle = (run: () => void) => {
      this.pending.delete(entry);
      try {
        run();
      } catch (e) {
        this.fail(`${label}: its check threw ${(e as Error).stack}`);
      }
    };
    promise.then((v) => settle(() => ok(v)), (e: Error) => settle(() => err(e)));
  }

  /** Is this error one the world allows now (the Ring closing, a cancelFd since the op started
   * (`cancels`: the duct's count then), a peer gone)? */
  expectedError(e: unknown, duct: Duct | undefined, cancels = 0, aborts?: number): boolean {
    const code = (e as { code?: string } | null)?.code;
    if (code === 'ABORT_ERR') return aborts !== undefined && this.aborts > aborts;
    if (code === 'ERR_RING_CLOSED') return this.closing !== undefined;
    if (code === 'ECANCELED') return duct !== undefined && duct.cancels > cancels;
    if (code === 'EPIPE' || code === 'ECONNRESET') return duct?.peerClosed === true;
    return false;
  }

  /** ring.close(), once; `where` says who asked. */
  closeRing(where: string): void {
    if (this.closing !== undefined) return;
    const closing = this.ring.close();
    this.closing = closing;
    // a stream's chunks not handed out go with the Ring, and its queued sends (an op's bytes
    // do not: it resolves with them or is cancelled without)
    for (const d of this.ducts) {
      if (d.reader?.startsWith('stream')) d.inbound?.allowGap();
      if (d.writer?.startsWith('stream')) d.outbound?.allowShortEnd();
    }
    this.track(`ring.close() from ${where}`, closing, () => {}, (e) => this.fail(`ring.close() from ${where} rejected: ${e.stack}`));
  }

  // ---- the peer's side: plain syscalls on the other end ----

  /** The peer writes up to n tagged bytes (as many as fit now). */
  peerWrite(d: Duct, n: number): number {
    if (d.inbound === undefined || d.peerClosed) return 0;
    const bytes = taggedBytes(d.inbound.id, this.spec.seed, d.inbound.length, n);
    let wrote = 0;
    try {
      wrote = writevSync(d.peerFd, [bytes]);
    } catch (e) {
      if ((e as { code?: string }).code !== 'EAGAIN') throw e;
    }
    d.inbound.append(bytes.subarray(0, wrote));
    return wrote;
  }

  /** The peer reads what the Ring sent it (at most `max` bytes) and checks it. */
  peerDrain(d: Duct, max = Infinity): void {
    if (d.outbound === undefined || d.peerClosed) return;
    const buf = Buffer.alloc(65536);
    for (let left = max; left > 0;) {
      let n: number;
      try {
        n = readvSync(d.peerFd, [buf.subarray(0, Math.min(buf.length, left))]);
      } catch (e) {
        if ((e as { code?: string }).code === 'EAGAIN') return;
        throw e;
      }
      if (n === 0) return;
      d.peerReads++;
      left -= n;
      if (left <= 0) coverage.peerPartialReads++;
      const wrong = d.outbound.deliver(buf.subarray(0, n), 'the peer');
      if (wrong !== undefined) this.fail(wrong);
    }
  }

  /** The peer closes its end: the Ring's reads see EOF, its writes EPIPE. */
  peerClose(d: Duct): void {
    if (d.peerClosed) return;
    this.peerDrain(d);
    d.peerClosed = true;
    d.outbound?.allowShortEnd(); // nobody reads what the Ring sends from now on
    fs.closeSync(d.peerFd);
    this.fdsOpened.splice(this.fdsOpened.indexOf(d.peerFd), 1);
  }

  /** The peer sends one message of n bytes with `fds` copies of the file's fd. */
  peerSendMessage(n: number, fds: number): void {
    const bytes = taggedBytes(1, this.spec.seed + 7, this.seq.toRing.length * 1000, n);
    try {
      sendmsg(this.seq.peerFd, [bytes], { fds: new Array(fds).fill(this.file.syncFd) });
    } catch (e) {
      if ((e as { code?: string }).code === 'EAGAIN') return;
      throw e;
    }
    this.seq.toRing.push({ bytes, fds });
  }

  /** The peer receives the messages the Ring sent, checks them and closes their fds. */
  peerReceiveMessages(): void {
    for (;;) {
      const buf = Buffer.alloc(4096);
      let got;
      try {
        got = recvmsg(this.seq.peerFd, [buf], { maxFds: 16 });
      } catch (e) {
        if ((e as { code?: string }).code === 'EAGAIN') return;
        throw e;
      }
      for (const fd of got.fds) this.checkFileFd(fd, 'a message the peer received');
      if (got.bytesRead === 0 && got.fds.length === 0) return;
      const want = this.seq.toPeer.shift();
      if (want === undefined) {
        this.fail(`the peer received a message of ${got.bytesRead} bytes nobody sent`);
      } else if (!buf.subarray(0, got.bytesRead).equals(want.bytes) || got.fds.length !== want.fds) {
        this.fail(`the peer received ${got.bytesRead} bytes and ${got.fds.length} fds; the Ring sent ${want.bytes.length} bytes and ${want.fds} fds`);
      } else {
        want.sent = true;
      }
    }
  }

  /** An fd that came in a message must be the file's; then it is closed. */
  checkFileFd(fd: number, where: string): void {
    try {
      if (fs.fstatSync(fd).ino !== fs.fstatSync(this.file.syncFd).ino) this.fail(`${where}: fd ${fd} is not the file that was sent`);
    } finally {
      fs.closeSync(fd);
    }
  }

  /** What the sync pread gives for [position, position + length) of the file. */
  syncFileRead(position: number, length: number): Buffer {
    const buf = Buffer.alloc(length);
    const n = readvSync(this.file.syncFd, [buf], position);
    return buf.subarray(0, n);
  }
}
