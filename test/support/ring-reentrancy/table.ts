// The re-entrancy test's table: one entry per public method of Ring, RingStream and BufferRing
// (test/ring-reentrancy.test.ts fails when a method has none), each a call with valid arguments
// built through `Points`, which marks every place where JS can run while the method reads them:
// each element of a list and its iterator, each property of an object, and the `then` of what a
// recvmsg resolves with. Run once to record them, then once per place and action, with a getter
// there.
import type { BufferRing, Ring, RingStream } from '../../../src/index.js';

/** What a call works with, made fresh for each case (child.ts): bytes wait on `b` and `t`, a
 * connection waits on `listener`, JS holds buffer `held` of `pool` (a chunk of `stream`). */
export interface Context {
  ring: Ring;
  pool: BufferRing;
  stream: RingStream;
  held: number;
  /** a stream socketpair: the Ring's ops use b */
  b: number;
  /** a seqpacket pair: sendmsg on s, recvmsg on t */
  s: number;
  t: number;
  file: number;
  listener: number;
  /** a TCP socket to connect to `port` on 127.0.0.1 */
  client: number;
  port: number;
  /** n bytes of the case's own memory (a resizable buffer: an action may detach or shrink it) */
  buf(n: number): Uint8Array;
  /** a new fd of the file, for the calls that close fds */
  dup(): number;
}

export interface Points {
  list<T>(name: string, items: T[]): T[];
  object<T extends object>(name: string, value: T): T;
  /** the `then` looked up on the value the call's Promise resolves with (a RecvResult) */
  result(name: string): void;
}

export type Entry = (c: Context, p: Points) => unknown;

/** A method's `{ signal, timeout }` (read by src/ring/op-options.ts before the addon is armed). */
const control = (p: Points, name = 'control') => p.object(name, { signal: new AbortController().signal, timeout: 10_000 });

export const ringCalls: Record<string, Entry> = {
  nop: (c, p) => c.ring.nop(control(p)),
  read: (c) => c.ring.read(c.b, c.buf(4)),
  write: (c) => c.ring.write(c.b, c.buf(4)),
  readv: (c, p) => c.ring.readv(c.b, p.list('buffers', [c.buf(2), c.buf(2)]), undefined, control(p)),
  writev: (c, p) => c.ring.writev(c.b, p.list('buffers', [c.buf(2), c.buf(2)])),
  fsync: (c, p) => c.ring.fsync(c.file, p.object('options', { datasync: true, signal: new AbortController().signal, timeout: 10_000 })),
  sendmsg: (c, p) => c.ring.sendmsg(c.s, p.list('buffers', [c.buf(2), c.buf(2)]), p.object('options', { fds: p.list('options.fds', [c.file]), credentials: false })),
  recvmsg: (c, p) => {
    p.result('result');
    return c.ring.recvmsg(c.t, p.list('buffers', [c.buf(2), c.buf(2)]), p.object('options', { maxFds: 2, controlFds: 2 }));
  },
  sendmsgBatch: (c, p) => c.ring.sendmsgBatch(c.s, p.list('messages', [
    p.object('messages[0]', { buffers: p.list('messages[0].buffers', [c.buf(1), c.buf(1)]), fds: p.list('messages[0].fds', [c.file]) }),
    { buffers: [c.buf(1)] },
  ]), p.object('options', { credentials: false })),
  recvmsgBatch: (c, p) => c.ring.recvmsgBatch(c.t, p.list('buffers', [p.list('buffers[0]', [c.buf(2), c.buf(2)]), [c.buf(2)]]), p.object('options', { maxFds: 2 })),
  readvBatch: (c, p) => c.ring.readvBatch(c.file, p.list('requests', [
    p.object('requests[0]', { buffers: p.list('requests[0].buffers', [c.buf(2), c.buf(2)]), position: 0 }),
    p.object('requests[1]', { buffers: [c.buf(4)], position: 8 }),
  ]), control(p)),
  closeFds: (c, p) => c.ring.closeFds(p.list('fds', [c.dup(), c.dup()])),
  accept: (c) => c.ring.accept(c.listener),
  connect: (c, p) => c.ring.connect(c.client, p.object('address', { host: '127.0.0.1', port: c.port })),
  recv: (c, p) => c.ring.recv(c.b, c.buf(4), undefined, control(p)),
  send: (c) => c.ring.send(c.b, c.buf(4)),
  closeFd: (c) => c.ring.closeFd(c.dup()),
  socket: (c) => c.ring.socket('unix', 'stream'),
  cancelFd: (c) => c.ring.cancelFd(c.b),
  setupBufRing: (c, p) => c.ring.setupBufRing(p.object('options', { count: 2, size: 16 })),
  recvMultishot: (c, p) => c.ring.recvMultishot(c.b, c.pool, p.object('handlers', {
    data: (id: number) => c.pool.release(id),
    end: () => {},
  }), p.object('options', { pauseAt: 1024 })),
  submit: (c) => c.ring.submit(),
  close: (c) => c.ring.close(),
};

export const streamCalls: Record<string, Entry> = {
  send: (c) => c.stream.send(c.held, 1),
  write: (c) => c.stream.write(c.buf(3)),
  pause: (c) => c.stream.pause(),
  resume: (c) => {
    c.stream.pause();
    c.stream.resume();
  },
  ref: (c) => {
    c.stream.unref();
    c.stream.ref();
  },
  unref: (c) => c.stream.unref(),
  drainTo: (c) => {
    c.stream.write(c.buf(3));
    c.stream.drainTo(0);
  },
  close: (c) => c.stream.close(),
};

export const poolCalls: Record<string, Entry> = {
  held: (c) => c.pool.held(c.held),
  view: (c) => c.pool.view(c.held),
  bytes: (c) => c.pool.bytes(c.held, 1),
  release: (c) => c.pool.release(c.held),
  close: (c) => c.pool.close(),
};

export const tables = { Ring: ringCalls, RingStream: streamCalls, BufferRing: poolCalls };
export type ClassName = keyof typeof tables;

/** What JS that re-enters does at a place: close the Ring, close the stream, open another
 * stream, detach or shrink the call's own memory (or a read's in flight), call the same method
 * again. */
export const actions = ['closeRing', 'closeStream', 'openStream', 'detach', 'shrink', 'again'] as const;
export type Action = (typeof actions)[number];

/** One case: the method, where the action runs (a place of `placesOf`, a handler, after close). */
export interface ReentryCase {
  cls: ClassName;
  method: string;
  place: string;
  action: Action;
}

/** The places of a call, found by running it with a Points that records them (on a context
 * whose members are placeholders: only the argument shapes matter). */
export function placesOf(entry: Entry): string[] {
  const places: string[] = [];
  const recorder: Points = {
    list: (name, items) => {
      items.forEach((_, i) => places.push(`${name}[${i}]`));
      places.push(`${name}[Symbol.iterator]`);
      return items;
    },
    object: (name, value) => {
      for (const key of Object.keys(value)) places.push(`${name}.${key}`);
      return value;
    },
    result: (name) => {
      places.push(`${name}.then`);
    },
  };
  const inert = new Proxy({}, { get: () => inert, apply: () => inert }) as unknown;
  const context = new Proxy({}, {
    get: (_, key) => (key === 'buf' ? (n: number) => new Uint8Array(n) : key === 'dup' ? () => 0 : inert),
  }) as Context;
  try {
    entry(context, recorder);
  } catch {
    // the placeholder Ring cannot run the call; the arguments were built before it
  }
  return places;
}

/** Where else each case runs the action: inside a stream's data or end handler (then calling
 * the method there); and once ring.close() has settled (the method then works, or fails with
 * RingClosedError). */
export const handlerPlaces = ['data handler', 'end handler'];
export const afterClose = 'after ring.close()';
