// The child of test/ring-reentrancy.test.ts's table-driven cases: for each case (a method, a
// place, an action) it makes a fresh Ring with a stream, a held buffer and bytes waiting,
// calls the method with JS that re-enters at that place (or from inside a stream's handler),
// and answers with what went wrong: an error without a code (not a clear one), a Promise that
// never settled, live objects or fds left after ring.close(). A crash is the parent's to see.
import fs from 'node:fs';
import net from 'node:net';
import { randomUUID } from 'node:crypto';
import {
  Ring, bind, close, connect, listen, liveObjects, recvmsg, sendmsg, socket, socketpair, writevSync, type RingStream,
} from '../../../src/index.js';
import { resizableBytes } from '../resizable.js';
import { tables, type Context, type Points, type ReentryCase } from './table.js';
import { openFds, fdsLeftOpen } from '../open-fds.js';

const dir = process.env.IOLAB_REENTRY_DIR!;
const turn = () => new Promise<void>((r) => setImmediate(r));

async function until(done: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!done()) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 1));
  }
  return true;
}

let problems: string[] = [];
process.on('uncaughtException', (err) => problems.push(`uncaught exception: ${err.stack}`));

/** A Node-style error: it has a code (RingClosedError: ERR_RING_CLOSED). */
function clear(e: unknown): boolean {
  return e instanceof Error && typeof (e as { code?: unknown }).code === 'string';
}

async function runCase(k: ReentryCase): Promise<string[]> {
  problems = [];
  const fdsBefore = openFds();
  // each fd the case made, with what it is: at the end it is closed only if it is still that
  // (the call may have closed it, and the number may since belong to the runtime)
  const fds = new Map<number, string>();
  const keep = <T extends number | number[]>(x: T): T => {
    for (const fd of ([] as number[]).concat(x)) fds.set(fd, fs.readlinkSync(`/proc/self/fd/${fd}`));
    return x;
  };
  const pending = new Map<Promise<unknown>, string>();
  const streams: RingStream[] = [];
  const track = (p: Promise<unknown>, label: string, onValue?: (v: unknown) => void) => {
    const followed = p.then(onValue, (e) => {
      if (!clear(e)) problems.push(`${label} rejected with an unclear error: ${(e as Error)?.stack ?? String(e)}`);
      else if (afterClose && !closedError(e)) problems.push(`${label} rejected with ${(e as Error).stack}, not RingClosedError`);
    });
    pending.set(followed, label);
    void followed.finally(() => pending.delete(followed));
  };

  const server = net.createServer((conn) => conn.destroy());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const ring = new Ring({ entries: 16 });
  const pool = ring.setupBufRing({ count: 4, size: 64 });
  const [a, b] = keep(socketpair('stream'));
  writevSync(a, [Buffer.from('abcdabcd')]);
  const [c, d] = keep(socketpair('stream'));
  let held = -1;
  const stream = ring.recvMultishot(d, pool, { data: (id) => { if (held < 0) held = id; else pool.release(id); }, end() {} });
  streams.push(stream);
  writevSync(c, [Buffer.from('x')]);
  const [s, t] = keep(socketpair('seqpacket'));
  for (let i = 0; i < 4; i++) sendmsg(s, [Buffer.from('mm')]); // for a batch of two, twice
  const path = `${dir}/file-${process.pid}`;
  fs.writeFileSync(path, Buffer.alloc(64, 7));
  const file = keep(fs.openSync(path, 'r+'));
  const address = `\0iolab-reentry-${process.pid}-${randomUUID()}`;
  const listener = keep(socket('unix', 'stream'));
  bind(listener, address);
  listen(listener);
  for (let i = 0; i < 2; i++) connect(keep(socket('unix', 'stream')), address); // connections waiting, for two accepts
  const client = keep(await ring.socket('inet', 'stream'));
  const [x, y] = keep(socketpair('stream'));
  const inflight = resizableBytes(8);
  track(ring.recv(x, inflight), 'a recv in flight');
  if (!(await until(() => held >= 0, 2000))) problems.push('setup: the stream got no chunk');

  const own: Uint8Array[] = [];
  const context: Context = {
    ring, pool, stream, held, b, s, t, file, listener, client, port: (server.address() as net.AddressInfo).port,
    buf(n) {
      const view = resizableBytes(n);
      view.fill(0x61);
      own.push(view);
      return view;
    },
    dup: () => keep(fs.openSync(path, 'r')),
  };
  const entry = tables[k.cls][k.method];
  const label = `${k.cls}.${k.method}`;
  const call = (points: Points, what: string) => {
    let r: unknown;
    try {
      r = entry(context, points);
    } catch (e) {
      if (!clear(e)) problems.push(`${label} (${what}) threw an unclear error: ${(e as Error)?.stack ?? String(e)}`);
      else if (afterClose && !closedError(e)) problems.push(`${label} (${what}) threw ${(e as Error).stack}, not RingClosedError`);
      return;
    }
    if (r instanceof Promise) {
      track(r, `${label} (${what})`, (v) => {
        // fds the call made are the caller's
        if ((k.method === 'socket' || k.method === 'accept') && typeof v === 'number') close(v);
        for (const f of (v as { fds?: number[] } | undefined)?.fds ?? []) close(f);
      });
    } else if (r !== null && typeof r === 'object' && 'close' in r && k.method === 'recvMultishot') {
      streams.push(r as RingStream);
    }
  };
  const plain: Points = { list: (_, items) => items, object: (_, value) => value, result: () => {} };
  // once the Ring is closed, what fails says so (the stream's methods may say the stream is closed)
  let afterClose = false;
  const closedError = (e: unknown) => ['ERR_RING_CLOSED', 'ERR_RING_STREAM_CLOSED'].includes((e as { code?: string }).code ?? '');

  let acted = false;
  const act = () => {
    if (acted) return;
    acted = true;
    const target = own[0] ?? inflight;
    switch (k.action) {
      case 'closeRing': return track(ring.close(), 'ring.close() from the re-entering JS');
      case 'closeStream': return track(stream.close(), 'stream.close() from the re-entering JS');
      case 'openStream': {
        const [g, h] = keep(socketpair('stream'));
        void g;
        try {
          streams.push(ring.recvMultishot(h, pool, { data: (id) => pool.release(id), end() {} }));
        } catch (e) {
          if (!clear(e)) problems.push(`recvMultishot from the re-entering JS threw an unclear error: ${(e as Error).stack}`);
        }
        return;
      }
      case 'detach':
        if (target.buffer.byteLength > 0) structuredClone(target.buffer, { transfer: [target.buffer as ArrayBuffer] });
        return;
      case 'shrink':
        if (target.buffer.byteLength > 0) (target.buffer as ArrayBuffer & { resize(n: number): void }).resize(target.buffer.byteLength >> 1);
        return;
      case 'again':
        return call(plain, 'called again from the re-entering JS');
    }
  };

  if (k.place === 'after ring.close()') {
    await ring.close();
    afterClose = true;
    call(plain, 'after ring.close() settled');
  } else if (k.place === 'data handler' || k.place === 'end handler') {
    const [e, f] = keep(socketpair('stream'));
    let ran = false;
    const inHandler = () => {
      ran = true;
      act();
      call(plain, `from a ${k.place}, after ${k.action}`);
    };
    try {
      streams.push(ring.recvMultishot(f, pool, {
        data: (id) => {
          pool.release(id);
          if (k.place === 'data handler' && !ran) inHandler();
        },
        end: () => {
          if (k.place === 'end handler' && !ran) inHandler();
        },
      }));
      if (k.place === 'data handler') writevSync(e, [Buffer.from('y')]);
      else {
        close(e);
        fds.delete(e);
      }
      if (!(await until(() => ran, 2000))) problems.push(`the ${k.place} never ran`);
    } catch (err) {
      problems.push(`setting up the ${k.place}: ${(err as Error).stack}`);
    }
  } else {
    const armed: Points = {
      list: (name, items) => {
        const out = [...items];
        items.forEach((item, i) => {
          if (k.place === `${name}[${i}]`) Object.defineProperty(out, i, { get: () => { act(); return item; }, enumerable: true });
        });
        if (k.place === `${name}[Symbol.iterator]`) {
          Object.defineProperty(out, Symbol.iterator, { value() { act(); return Array.prototype[Symbol.iterator].call(this); } });
        }
        return out;
      },
      object: (name, value) => {
        const out = { ...value };
        for (const key of Object.keys(value) as (keyof typeof value)[]) {
          if (k.place === `${name}.${String(key)}`) Object.defineProperty(out, key, { get: () => { act(); return value[key]; }, enumerable: true });
        }
        return out;
      },
      result: (name) => {
        if (k.place !== `${name}.then`) return;
        const proto = Object.getPrototypeOf(recvResultSample);
        Object.defineProperty(proto, 'then', { configurable: true, get() { delete proto.then; act(); return undefined; } });
      },
    };
    call(armed, `${k.action} at ${k.place}`);
  }

  await until(() => pending.size <= 1, 1500); // all but the recv in flight, which only ring.close() ends
  track(ring.close(), 'ring.close() at the end');
  if (!(await until(() => pending.size === 0, 3000))) problems.push(`never settled: ${[...pending.values()].join(', ')}`);
  delete (Object.getPrototypeOf(recvResultSample) as { then?: unknown }).then;
  for (const [fd, what] of fds) {
    let now: string | undefined;
    try {
      now = fs.readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      // closed by the call (closeFds, closeFd)
    }
    if (now === what) close(fd);
  }
  await new Promise<void>((r) => server.close(() => r()));
  fs.rmSync(path, { force: true });
  for (let i = 0; i < 3; i++) {
    globalThis.gc?.();
    await turn();
  }
  const live = Object.entries(liveObjects()).filter(([, n]) => n !== 0);
  if (live.length > 0) problems.push(`live objects after ring.close(): ${JSON.stringify(Object.fromEntries(live))}`);
  const left = fdsLeftOpen(fdsBefore);
  if (left.length > 0) problems.push(`fds left open: ${left.join(', ')}`);
  return problems;
}

// a RecvResult, for its prototype (where a `then` getter runs when a recvmsg settles)
const recvResultSample = (() => {
  const [p, q] = socketpair('seqpacket');
  sendmsg(p, [Buffer.from('x')]);
  const r = recvmsg(q, [Buffer.alloc(1)]);
  close(p);
  close(q);
  return r;
})();

process.on('message', async (k: ReentryCase) => {
  process.send!({ outcome: await runCase(k) });
});
process.send!({ ready: true });
