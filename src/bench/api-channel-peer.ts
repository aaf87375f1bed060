// The receiving side of bench api's channel group: `iolab bench api peer` (a child process, with
// the control channel as Node's IPC, a channel socket, a net socket and, where zeromq loads, a
// PULL socket), or a worker thread (api-channel-worker.ts: control on parentPort, data on a
// MessagePort and a SharedArrayBuffer ring, a channel socket). Each
// run, the sender says which transport and size; every message that comes is checked
// (api-messages.ts); an empty message ends the run, and the count and the first error go back
// on the control channel.
import net from 'node:net';
import type { MessagePort } from 'node:worker_threads';
import { createRequire } from 'node:module';
import { Channel } from '../index.js';
import { checkMessage } from './api-messages.js';
import { sabRingRead } from './api-sab-ring.js';

/** zeromq 6 where it is installed (a dev dependency of the checkout: not in the package). */
export type Zmq = { Push: new () => ZmqPush; Pull: new () => ZmqPull };
export interface ZmqPush { bind(address: string): Promise<void>; send(message: Uint8Array): Promise<void>; close(): void; sendHighWaterMark: number }
export interface ZmqPull extends AsyncIterable<Uint8Array[]> { connect(address: string): void; close(): void; receiveHighWaterMark: number }
export function loadZeromq(): Zmq | undefined {
  try {
    return createRequire(import.meta.url)('zeromq') as Zmq;
  } catch {
    return undefined;
  }
}

/** What the sender asks (one run), and what the receiver answers. */
export type PeerRequest = { run: string; size: number; ackEvery?: number } | { quit: true };
export type PeerReply = { ready: true } | { done: number; error?: string };

/** Where the peer talks to the sender. */
export interface Control {
  on(listener: (message: unknown) => void): void;
  send(reply: PeerReply): void;
}

/** Counts and checks the messages of one run; an empty one ends it. */
class Receiver {
  #size = 0;
  #count = 0;
  #error: string | undefined;
  #done: ((reply: PeerReply) => void) | undefined;
  #ackEvery = 0;
  #ack: ((count: number) => void) | undefined;

  /** ack: called with the count every ackEvery messages (a sender without backpressure of its
   * own keeps its window by it). */
  start(size: number, done: (reply: PeerReply) => void, ackEvery = 0, ack?: (count: number) => void): void {
    this.#size = size;
    this.#count = 0;
    this.#error = undefined;
    this.#done = done;
    this.#ackEvery = ackEvery;
    this.#ack = ack;
  }

  readonly take = (view: Uint8Array): void => {
    if (this.#done === undefined) return;
    if (view.length === 0) {
      const done = this.#done;
      this.#done = undefined;
      done({ done: this.#count, ...(this.#error === undefined ? {} : { error: this.#error }) });
      return;
    }
    if (this.#error === undefined) this.#error = checkMessage(view, this.#count, this.#size);
    this.#count++;
    if (this.#ackEvery > 0 && this.#count % this.#ackEvery === 0) this.#ack?.(this.#count);
  };
}

/** Length-framed messages (u32 little-endian length, then the bytes) out of a stream's chunks. */
export function frameReader(take: (message: Uint8Array) => void): (chunk: Buffer) => void {
  let header = Buffer.alloc(0);
  let body: Buffer | undefined;
  let filled = 0;
  return (chunk) => {
    let at = 0;
    while (at < chunk.length) {
      if (body === undefined) {
        const need = 4 - header.length;
        if (header.length === 0 && chunk.length - at >= 4) {
          const length = chunk.readUInt32LE(at);
          at += 4;
          if (chunk.length - at >= length) { // the whole message in this chunk: no copy
            take(chunk.subarray(at, at + length));
            at += length;
            continue;
          }
          body = Buffer.allocUnsafe(length);
        } else {
          header = Buffer.concat([header, chunk.subarray(at, at + need)]);
          at += Math.min(need, chunk.length - at);
          if (header.length < 4) return;
          body = Buffer.allocUnsafe(header.readUInt32LE(0));
          header = Buffer.alloc(0);
        }
        filled = 0;
      }
      const n = Math.min(body.length - filled, chunk.length - at);
      chunk.copy(body, filled, at, at + n);
      filled += n;
      at += n;
      if (filled === body.length) {
        const whole = body;
        body = undefined;
        take(whole);
      }
    }
  };
}

/** Joins the channel, says ready, then serves runs until told to quit. */
export async function servePeer(control: Control, channelSocket: number,
  sources: { net?: number; port?: MessagePort; sab?: SharedArrayBuffer; zmq?: string; zeroCopy?: number }): Promise<void> {
  const receiver = new Receiver();
  const channel = await Channel.join(channelSocket);
  channel.on('message', receiver.take);
  channel.on('error', () => {}); // the sender going away ends this process anyway
  const zeroCopy = sources.zeroCopy === undefined ? undefined : await Channel.join(sources.zeroCopy, { zeroCopy: true });
  zeroCopy?.on('message', receiver.take);
  zeroCopy?.on('error', () => {});
  let socket: net.Socket | undefined;
  if (sources.net !== undefined) {
    socket = new net.Socket({ fd: sources.net, readable: true, writable: false });
    socket.on('data', frameReader(receiver.take));
    socket.on('error', () => {});
  }
  sources.port?.on('message', (m: Uint8Array) => receiver.take(m));
  let pull: ZmqPull | undefined;
  if (sources.zmq !== undefined) {
    const zmq = loadZeromq();
    if (zmq !== undefined) {
      pull = new zmq.Pull();
      pull.receiveHighWaterMark = 0; // no count limit: the sender's own is the window
      pull.connect(sources.zmq);
      void (async () => {
        try {
          for await (const [message] of pull!) receiver.take(message);
        } catch { /* closed */ }
      })();
    }
  }
  const served = new Promise<void>((resolve) => {
    control.on((message) => {
      if (ArrayBuffer.isView(message)) { // process.send's data come on the control channel
        receiver.take(message as Uint8Array);
        return;
      }
      const request = message as PeerRequest;
      if ('quit' in request) {
        resolve();
        return;
      }
      receiver.start(request.size, (reply) => control.send(reply), request.ackEvery, (count) => sources.port?.postMessage(count));
      // the SharedArrayBuffer ring is read while its run lasts: up to its empty message
      if (request.run === 'sab.worker' && sources.sab !== undefined) void sabRingRead(sources.sab, (m) => (receiver.take(m), m.length > 0));
      control.send({ ready: true });
    });
  });
  control.send({ ready: true }); // joined: the sender may close its copy of the socket
  await served;
  socket?.destroy();
  pull?.close();
  sources.port?.close();
  await channel.close();
  await zeroCopy?.close();
}
