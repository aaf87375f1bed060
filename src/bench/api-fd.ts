// bench api's fd-message group: 1-byte messages carrying one fd each over a stream socketpair,
// received, and the received fd closed (as a real receiver would), through
//   ring.sendmsg   sendmsg + recvmsg + closeFd on the Ring, 32 messages in flight
//   ring.sendmsgBatch  the same, 32 at a time with one call and one Promise per batch
//   iolab.sendmsg  the sync native.sendmsg + recvmsg + close loop
//   usocket        npm's usocket (the maintained fd-passing stream), 32 messages in flight
//   c.sendmsg      the same three calls as a C loop off the JS thread: the kernel's floor
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import { native } from '../native.js';
import { recvmsg, sendmsg } from '../syscalls.js';
import type { Ring } from '../ring/index.js';
import { promiseLoop, syncLoop, type Contender, type Measured } from './api-loops.js';

const inflight = 32;

/** What bench api uses of usocket (npm): a stream over an fd it adopts, messages with fds. */
interface USocket {
  write(chunk: { data: Buffer; fds: number[] }): boolean;
  read(size: number, fdSize: number): { data: Buffer | null; fds: number[] } | null;
  on(event: 'readable', listener: () => void): this;
  on(event: 'error', listener: (err: Error) => void): this;
  destroy(): void;
}
interface USocketModule {
  USocket: new (options: { fd: number }) => USocket;
}

/** usocket, or why it cannot be loaded here (not installed, or its native part not built). */
export function loadUsocket(): USocketModule | string {
  try {
    return createRequire(import.meta.url)('usocket') as USocketModule;
  } catch (err) {
    return `usocket cannot be loaded: ${String((err as Error).message).split('\n')[0]}`;
  }
}

// 32 messages in flight: each one received (read with its fd, the fd closed) lets the next go.
function usocketLoop(usocket: USocketModule, passed: number, durationMs: number): Promise<Measured> {
  const [a, b] = native.socketpair('stream');
  const sender = new usocket.USocket({ fd: a }); // each USocket owns its fd from here
  const receiver = new usocket.USocket({ fd: b });
  const chunk = { data: Buffer.from('m'), fds: [passed] };
  return new Promise<Measured>((resolve, reject) => {
    const start = performance.now();
    const end = start + durationMs;
    let sent = 0;
    let received = 0;
    let stopping = false;
    const done = (err?: Error) => {
      sender.destroy();
      receiver.destroy();
      if (err) reject(err);
      else resolve({ ops: received, seconds: (performance.now() - start) / 1000 });
    };
    receiver.on('readable', () => {
      for (let m = receiver.read(1, 1); m !== null; m = receiver.read(1, 1)) {
        for (const fd of m.fds) fs.closeSync(fd);
        received++;
        if (!stopping && performance.now() >= end) stopping = true;
        if (!stopping) {
          sent++;
          sender.write(chunk);
        } else if (received === sent) {
          done();
          return;
        }
      }
    });
    receiver.on('error', done);
    sender.on('error', done);
    for (; sent < inflight; sent++) sender.write(chunk);
  });
}

export function fdContenders(ring: Ring, passed: number): { list: Contender[]; cleanup: () => void } {
  const [ra, rb] = native.socketpair('stream');
  const [sa, sb] = native.socketpair('stream');
  const message = [Buffer.from('m')];
  const sendOptions = { fds: [passed] };
  const recvOptions = { maxFds: 1, controlFds: 1 };
  const receive = Array.from({ length: inflight }, () => [Buffer.alloc(1)]);
  const usocket = loadUsocket();
  const list: Contender[] = [
    {
      contender: 'ring.sendmsg', inflight,
      run: async (ms) => {
        let failure: unknown;
        const onError = (err: unknown) => { failure ??= err; };
        const result = await promiseLoop(ms, inflight, async (slot) => {
          ring.sendmsg(ra, message, sendOptions).catch(onError);
          const got = await ring.recvmsg(rb, receive[slot], recvOptions);
          if (got.fds.length !== 1) throw new Error(`expected one fd per message, got ${got.fds.length}`);
          ring.closeFd(got.fds[0]).catch(onError);
        });
        while (ring.inFlight > 0) await ring.nop();
        if (failure !== undefined) throw failure;
        return result;
      },
    },
    {
      // The same three ops, a batch of 32 per call (sendmsgBatch, recvmsgBatch, closeFds): one
      // Promise per batch instead of one per op.
      contender: 'ring.sendmsgBatch', inflight,
      run: async (ms) => {
        const messages = Array.from({ length: inflight }, () => ({ buffers: message, fds: [passed] }));
        const start = performance.now();
        const end = start + ms;
        let ops = 0;
        let closing: Promise<void> = Promise.resolve();
        do {
          const sent = ring.sendmsgBatch(ra, messages);
          const got = await ring.recvmsgBatch(rb, receive, recvOptions);
          await sent;
          const fds = got.map((r) => {
            if (r.fds.length !== 1) throw new Error(`expected one fd per message, got ${r.fds.length}`);
            return r.fds[0];
          });
          await closing; // the previous batch's closes, which ran beside this batch
          closing = ring.closeFds(fds);
          ops += got.length;
        } while (performance.now() < end);
        await closing;
        return { ops, seconds: (performance.now() - start) / 1000 };
      },
    },
    {
      contender: 'c.sendmsg', inflight: 1,
      run: async (ms) => {
        const r = await native.benchFdMessages(passed, ms);
        return { ops: r.messages, seconds: r.seconds };
      },
    },
    {
      contender: 'iolab.sendmsg', inflight: 1,
      run: async (ms) => syncLoop(ms, () => {
        sendmsg(sa, message, sendOptions);
        const got = recvmsg(sb, receive[0], recvOptions);
        native.close(got.fds[0]);
      }),
    },
    typeof usocket === 'string'
      ? { contender: 'usocket', inflight, unavailable: usocket, run: () => Promise.reject(new Error(usocket)) }
      : { contender: 'usocket', inflight, run: (ms) => usocketLoop(usocket, passed, ms) },
  ];
  return { list, cleanup: () => [ra, rb, sa, sb].forEach((fd) => native.close(fd)) };
}
