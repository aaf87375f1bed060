// bench api's channel group: messages from this process's JS to another's, through
//   channel         iolab's shared-memory channel (src/ring/channel.ts), to a child process
//   channel.zeroCopy  the same, its receiver given views of the queue ({ zeroCopy: true }), no copy
//   channel.worker  the same, to a worker thread
//   process.send    Node's IPC to the same child (serialization 'advanced': bytes as bytes)
//   net.unix        a node:net Unix stream socket to the same child, each message framed by its
//                   length, written corked and uncorked every 64 messages (a careful user's batching)
//   zeromq          zeromq 6 PUSH to the child's PULL over ipc:// (where zeromq is installed)
//   MessagePort     a worker's MessagePort (postMessage copies the message)
//   sab.worker      a SharedArrayBuffer ring to the worker with Atomics.waitAsync (api-sab-ring.ts)
//   c.shm-ring      bench ipc's ring in shared memory, C on both sides (native/ipc): the limit
//                   for a queue between processes
//   memcpy          one copy of the message in C: the limit for moving it once
// at 64 B, 1 KiB, 64 KiB and 1 MiB. Every receiver checks every message (api-messages.ts) and the
// run fails on a wrong one. Each sender may be ahead by at most one channel's capacity: the
// channel and the SharedArrayBuffer ring by their rings, process.send and MessagePort by a
// window, net.unix by the socket and 'drain', zeromq by its high-water mark.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import { UserError } from '../cli-util.js';
import { formatBytes } from '../format.js';
import { Channel, close, socketpair } from '../index.js';
import { native, projectRoot } from '../native.js';
import { childEnv } from '../parent-death.js';
import { iolabArgv } from '../spawn-iolab.js';
import { startPeer as startIpcPeer } from '../ipc/peer.js';
import { loadZeromq, type PeerReply, type PeerRequest, type ZmqPush } from './api-channel-peer.js';
import { undoAll, type Contender } from './api-loops.js';
import { comparedByte, messageBuffer, stamp } from './api-messages.js';
import { sabRingMemory, SabRingWriter } from './api-sab-ring.js';

export const channelSizes = [64, 1024, 64 << 10, 1 << 20];
const sizeNames = ['64', '1k', '64k', '1m'];
/** The group's contenders (rows contender/size). */
export const channelContenderNames = ['channel', 'channel.zeroCopy', 'channel.worker', 'process.send', 'net.unix', 'zeromq', 'sab.worker', 'c.shm-ring', 'MessagePort', 'memcpy'];

/** The process peers a Node developer would pick instead of the channel. */
const processPeers = ['net.unix', 'zeromq', 'process.send'];

/** The group's ratios (row names: contender/size) from the rows' messages/s, with the goals set
 * for the channel: at least 2x the best process peer (whichever of them is fastest in the run)
 * and ahead of each, at every size; near the C ring where the copy is the cost, a quarter of it
 * where the call is. */
export function channelRatioPairs(rate: Map<string, number | null | undefined>): [string, string, number?][] {
  return sizeNames.flatMap((s): [string, string, number?][] => {
    const peers = processPeers.map((p) => `${p}/${s}`).filter((p) => typeof rate.get(p) === 'number');
    const best = peers.sort((a, b) => rate.get(b)! - rate.get(a)!)[0];
    return [
      ...(best === undefined ? [] : [[`channel/${s}`, best, 2] as [string, string, number]]),
      ...processPeers.filter((p) => `${p}/${s}` !== best).map((p): [string, string, number] => [`channel/${s}`, `${p}/${s}`, 1]),
      [`channel/${s}`, `channel.zeroCopy/${s}`], // what the copy the default gives costs
      [`channel/${s}`, `c.shm-ring/${s}`, s === '64' || s === '1k' ? 0.25 : 0.8],
      [`channel.worker/${s}`, `sab.worker/${s}`, 1],
      [`channel.worker/${s}`, `MessagePort/${s}`, 1],
      ...(s === '1m' ? [[`channel/${s}`, `memcpy/${s}`, 0.5] as [string, string, number]] : []),
    ];
  });
}
/** Each direction's ring: 7 messages of 1 MiB, or 116,508 of 64 B, in flight. */
const channelCapacity = 8 << 20;

/** Replies of one peer, in order; a peer that ends fails what waits and what will. */
class Replies {
  #queue: PeerReply[] = [];
  #waiting: { resolve(r: PeerReply): void; reject(e: Error): void }[] = [];
  #failure: Error | undefined;
  #onFailure: ((err: Error) => void) | undefined;
  /** Rejects once the peer ends: what waits on a send to it (room in a queue, a drained socket)
   * races this, since a dead receiver never makes room. */
  readonly failed: Promise<never> = new Promise<never>((_, reject) => (this.#onFailure = reject));
  constructor() {
    this.failed.catch(() => {});
  }
  put = (reply: PeerReply): void => {
    const w = this.#waiting.shift();
    if (w) w.resolve(reply);
    else this.#queue.push(reply);
  };
  fail(err: Error): void {
    this.#failure ??= err;
    this.#onFailure?.(this.#failure);
    for (const w of this.#waiting.splice(0)) w.reject(err);
  }
  next(): Promise<PeerReply> {
    const r = this.#queue.shift();
    if (r) return Promise.resolve(r);
    if (this.#failure) return Promise.reject(this.#failure);
    return new Promise((resolve, reject) => this.#waiting.push({ resolve, reject }));
  }
}

interface Peer {
  replies: Replies;
  request(r: PeerRequest): void;
  stop(): Promise<void>;
}

/** `iolab bench api peer`, with Node's IPC at fd 3, the channel sockets at 4 (copies) and 5
 * (zeroCopy views) and the net socket at 6; zmq: the PUSH socket's address it pulls from. */
function startChildPeer(channelEnd: number, zeroCopyEnd: number, netEnd: number, zmq?: string): Peer & { child: ChildProcess } {
  const [file, argv] = iolabArgv(['bench', 'api', 'peer', '--channel-fd', '4', '--zero-copy-fd', '5', '--net-fd', '6', ...(zmq ? ['--zmq', zmq] : [])]);
  const child = spawn(file, argv, { stdio: ['ignore', 'ignore', 'pipe', 'ipc', channelEnd, zeroCopyEnd, netEnd], serialization: 'advanced', env: childEnv() });
  const replies = new Replies();
  let said = '';
  child.stderr!.on('data', (d: Buffer) => (said += d.toString()));
  child.on('message', (m) => replies.put(m as PeerReply));
  // not events.once: that rejects on an 'error' first (an EPIPE of a send to a peer just killed)
  const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.once('exit', (...how) => resolve(how))).then(([code, signal]) => {
    const how = signal ? `was killed by ${signal}` : `exited with ${code}`;
    const last = said.trim().split('\n').pop();
    replies.fail(new UserError(`the channel group's receiving process (pid ${child.pid}) ${how}${last ? `: ${last}` : ''}`));
  });
  child.on('error', (err) => replies.fail(err));
  return {
    child, replies,
    request: (r) => child.send(r),
    async stop() {
      try {
        if (child.exitCode === null && child.signalCode === null && child.connected) child.send({ quit: true });
      } catch {
        // it died meanwhile (EPIPE): the signal that stopped the run reached its process group
      }
      const timer = setTimeout(() => child.kill('SIGKILL'), 2000);
      await exited;
      clearTimeout(timer);
    },
  };
}

// The worker runs api-channel-worker.ts: compiled beside this file in the package; in the
// checkout, the source through tsx, registered in the worker first as scripts/iolab-ts.mjs does
// (a worker does not take --import from execArgv on every Node line).
const here = fileURLToPath(import.meta.url);
const workerFile = join(dirname(here), `api-channel-worker.${here.endsWith('.ts') ? 'ts' : 'js'}`);
function workerEntry(): string | URL {
  if (!here.endsWith('.ts')) return workerFile;
  const tsx = pathToFileURL(join(projectRoot, 'node_modules/tsx/dist/esm/api/index.mjs')).href;
  return `import(${JSON.stringify(tsx)}).then((m) => m.register()).then(() => import(${JSON.stringify(pathToFileURL(workerFile).href)}))`;
}

function startWorkerPeer(channelEnd: number, port: MessagePort, sab: SharedArrayBuffer): Peer & { worker: Worker } {
  const worker = new Worker(workerEntry(), { eval: here.endsWith('.ts'), workerData: { channelSocket: channelEnd, port, sab }, transferList: [port] });
  const replies = new Replies();
  worker.on('message', (m) => replies.put(m as PeerReply));
  worker.on('error', (err) => replies.fail(err));
  const exited = new Promise((resolve) => worker.once('exit', resolve)).then(() => replies.fail(new UserError("the channel group's receiving worker ended")));
  return {
    worker, replies,
    request: (r) => worker.postMessage(r),
    async stop() {
      worker.postMessage({ quit: true });
      const timer = setTimeout(() => void worker.terminate(), 2000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** The tests' knob: IOLAB_API_FAULT=<n> makes every sender change one byte of its message n,
 * inside what the receiver compares (the run must fail). */
const faultMessage = process.env.IOLAB_API_FAULT === undefined ? -1 : Number(process.env.IOLAB_API_FAULT);

/** How a sender hands one message on: undefined when done with it, a Promise to wait for room. */
type SendOne = (message: Buffer, seq: number) => Promise<unknown> | undefined;

/** One run: the peer readies for `run` at `size`, then messages go for about durationMs, an empty
 * one ends them, and the peer's count and check come back. Message seq is stamped into
 * buffers[seq % buffers.length] (one buffer unless the sender holds several before it sends). */
async function stream(peer: Peer, run: string, size: number, durationMs: number, send: SendOne, end: () => unknown,
  ackEvery?: number, buffers = [messageBuffer(size)]): Promise<{ ops: number; seconds: number }> {
  peer.request({ run, size, ackEvery });
  await peer.replies.next();
  const start = performance.now();
  const until = start + durationMs;
  let seq = 0;
  // the changed byte is put back when its buffer comes round again: sent by then
  let faulted: { message: Buffer; at: number } | undefined;
  for (;;) {
    const message = buffers[seq % buffers.length];
    if (faulted?.message === message) {
      message[faulted.at] ^= 0xff;
      faulted = undefined;
    }
    stamp(message, seq);
    if (seq === faultMessage) {
      faulted = { message, at: comparedByte(size, seq) };
      message[faulted.at] ^= 0xff;
    }
    const wait = send(message, seq++);
    if (wait !== undefined) await Promise.race([wait, peer.replies.failed]);
    if ((seq & 15) === 0 && performance.now() >= until) break;
  }
  await Promise.race([end(), peer.replies.failed]);
  const reply = await peer.replies.next();
  const seconds = (performance.now() - start) / 1000;
  if (!('done' in reply)) throw new UserError(`${run}: the receiver answered out of turn`);
  if (reply.error !== undefined) throw new UserError(`${run} at ${formatBytes(size)} delivered wrong bytes: ${reply.error}`);
  if (reply.done !== seq) throw new UserError(`${run} at ${formatBytes(size)}: ${seq} messages sent, ${reply.done} received`);
  return { ops: seq, seconds };
}

/** A channel row's run: its messages stamped into a batch of buffers of their own, copied in
 * with one trySendMany per batch (the rest with sendMany, once there is room), as net.unix corks
 * 64 frames into one writev; 64 to a batch, fewer where 64 would fill half the channel. */
function channelStream(peer: Peer, run: string, channel: Channel, size: number, durationMs: number): Promise<{ ops: number; seconds: number }> {
  const buffers = Array.from({ length: Math.max(1, Math.min(64, Math.floor(channelCapacity / 2 / (size + 8)))) }, () => messageBuffer(size));
  let held = 0;
  const flush = (): Promise<unknown> | undefined => {
    const batch = held === buffers.length ? buffers : buffers.slice(0, held);
    held = 0;
    const sent = channel.trySendMany(batch);
    return sent === batch.length ? undefined : channel.sendMany(batch.slice(sent));
  };
  const send = () => (++held === buffers.length ? flush() : undefined);
  const end = async () => {
    if (held > 0) await flush();
    await channel.send(empty);
  };
  return stream(peer, run, size, durationMs, send, end, undefined, buffers);
}
const empty = new Uint8Array(0);

/** The group's contenders; start() starts their peers (a child process, a worker, bench ipc's
 * receiver) and joins them, cleanup() stops them: the group's rounds run between the two, so
 * no other group is measured beside its processes. */
export function channelGroup(): { list: Contender[]; start: () => Promise<void>; cleanup: () => Promise<void> } {
  const zmq = loadZeromq();
  const zmqPath = join(tmpdir(), `iolab-api-zmq-${process.pid}-${randomBytes(4).toString('hex')}.sock`);
  const sab = sabRingMemory(channelCapacity);
  let push: ZmqPush | undefined;
  let child!: Peer & { child: ChildProcess };
  let worker!: Peer & { worker: Worker };
  let ipcPeer!: ReturnType<typeof startIpcPeer>;
  let socket!: net.Socket;
  let ports!: MessageChannel;
  let toChild!: Channel;
  let toChildZeroCopy!: Channel;
  let toWorker!: Channel;
  const undo: (() => unknown)[] = [];
  const cleanup = () => undoAll(undo);
  const start = async () => {
    try {
      const [childChannel, childChannelEnd] = socketpair('stream');
      const [childZero, childZeroEnd] = socketpair('stream');
      const [childNet, childNetEnd] = socketpair('stream');
      const [workerChannel, workerChannelEnd] = socketpair('stream');
      undo.push(() => { for (const fd of [childChannel, childZero, workerChannel]) close(fd); });
      ports = new MessageChannel();
      undo.push(() => ports.port1.close());
      if (zmq !== undefined) {
        push = new zmq.Push();
        push.sendHighWaterMark = 1000;
        undo.push(() => { push!.close(); rmSync(zmqPath, { force: true }); });
        await push.bind(`ipc://${zmqPath}`);
      }
      child = startChildPeer(childChannelEnd, childZeroEnd, childNetEnd, push ? `ipc://${zmqPath}` : undefined);
      worker = startWorkerPeer(workerChannelEnd, ports.port2, sab);
      ipcPeer = startIpcPeer();
      socket = new net.Socket({ fd: childNet, readable: false, writable: true });
      socket.on('error', (err) => child.replies.fail(err));
      const channels: Channel[] = [];
      undo.push(async () => {
        await Promise.all([child.stop(), worker.stop(), ipcPeer.stop()]);
        await Promise.all(channels.map((c) => c.close()));
        socket.destroy();
      });
      for (const fd of [childChannelEnd, childZeroEnd, childNetEnd]) close(fd);
      channels.push(await Channel.create(childChannel, { capacity: channelCapacity }));
      channels.push(await Channel.create(childZero, { capacity: channelCapacity }));
      channels.push(await Channel.create(workerChannel, { capacity: channelCapacity }));
      await Promise.all([child.replies.next(), worker.replies.next()]); // joined
      close(workerChannelEnd);
      [toChild, toChildZeroCopy, toWorker] = channels;
      ports.port1.on('message', (count: number) => {
        acked = count;
        ackWaiter?.();
      });
    } catch (err) {
      await cleanup();
      throw err;
    }
  };

  // process.send and MessagePort wait once a channel's capacity is in flight.
  let acked = 0;
  let ackWaiter: (() => void) | undefined;
  const list: Contender[] = [];
  for (const size of channelSizes) {
    const window = Math.max(1, Math.floor(channelCapacity / (size + 8)));
    const ackEvery = Math.max(1, Math.floor(window / 4));
    const rows: [string, (ms: number) => Promise<{ ops: number; seconds: number }>][] = [
      ['channel', (ms) => channelStream(child, 'channel', toChild, size, ms)],
      ['channel.zeroCopy', (ms) => channelStream(child, 'channel.zeroCopy', toChildZeroCopy, size, ms)],
      ['channel.worker', (ms) => channelStream(worker, 'channel.worker', toWorker, size, ms)],
      ['process.send', (ms) => stream(child, 'process.send', size, ms, (m, seq) => {
        if (seq % window !== window - 1) {
          child.child.send(m);
          return undefined;
        }
        return new Promise((resolve) => child.child.send(m, resolve)); // written out: the queue is bounded
      }, () => child.child.send(empty))],
      ['net.unix', (ms) => stream(child, 'net.unix', size, ms, (m, seq) => {
        // corked: 64 frames go out in one writev, as a careful user batches small writes
        if ((seq & 63) === 0) socket.cork();
        const frame = Buffer.allocUnsafe(4 + m.length); // the socket keeps it until written
        frame.writeUInt32LE(m.length, 0);
        frame.set(m, 4);
        const room = socket.write(frame);
        if ((seq & 63) === 63 || !room) {
          while (socket.writableCorked > 0) socket.uncork();
        }
        return room ? undefined : once(socket, 'drain');
      }, () => {
        while (socket.writableCorked > 0) socket.uncork();
        return socket.write(Buffer.alloc(4));
      })],
      ['zeromq', (ms) => stream(child, 'zeromq', size, ms, (m) => push!.send(Buffer.from(m)), () => push!.send(empty))],
      ['sab.worker', (ms) => {
        const ring = new SabRingWriter(sab);
        return stream(worker, 'sab.worker', size, ms, (m) => (ring.trySend(m) ? undefined : ring.send(m)), () => ring.send(empty));
      }],
      ['c.shm-ring', async (ms) => {
        const r = await native.ipcSend(ipcPeer.control, 'shm-ring', 'throughput', { messageBytes: size, durationMs: ms }).done;
        return { ops: r.messages, seconds: r.elapsedNs / 1e9 };
      }],
      ['MessagePort', (ms) => {
        acked = 0;
        return stream(worker, 'MessagePort', size, ms, (m, seq) => {
          ports.port1.postMessage(m);
          if (seq + 1 - acked < window) return undefined;
          return new Promise<void>((resolve) => {
            ackWaiter = () => {
              if (seq + 1 - acked < window) {
                ackWaiter = undefined;
                resolve();
              }
            };
          });
        }, () => ports.port1.postMessage(empty), ackEvery);
      }],
      ['memcpy', async (ms) => {
        const r = await native.ipcMemcpy({ messageBytes: size, durationMs: ms }).done;
        return { ops: r.messages, seconds: r.elapsedNs / 1e9 };
      }],
    ];
    for (const [contender, run] of rows) {
      const unavailable = contender === 'zeromq' && zmq === undefined ? 'zeromq (npm) is not installed here' : undefined;
      list.push({ contender, inflight: 1, messageBytes: size, group: 'channel', run, ...(unavailable ? { unavailable } : {}) });
    }
  }
  return { list, start, cleanup };
}
