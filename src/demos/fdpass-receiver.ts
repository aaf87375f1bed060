// `iolab fdpass recv`: binds a Unix socket, receives messages that carry an fd (SCM_RIGHTS),
// checks who sent each, and shows what the passed fd holds.
import { chmodSync, fstatSync, lstatSync, unlinkSync, type Stats } from 'node:fs';
import { isErrnoException, native, type RecvResult } from '../native.js';
import { UserError } from '../cli-util.js';
import { readRecord, recordHeaderBytes, showText, withInterrupts } from './common.js';
import { checkSocketPath, maxMessageBytes, type FdpassType } from './fdpass-common.js';
import { plainIo, type DemoIo } from './io.js';
import { withMapping } from './shm.js';

/** How long a stream receiver waits for a connected sender to finish its message. */
const connectionGraceMs = 10_000;

export interface ReceiverOptions {
  socket: string;
  type: FdpassType;
  count: number;
  /** Milliseconds to wait for each message; undefined waits forever. */
  timeout?: number;
  allowAnyUser: boolean;
}

export type ReceiverEvent =
  | { event: 'listening'; socket: string }
  | { event: 'message'; index: number; text: string; shmText: string; shmSize: number; uid: number; gid: number }
  | { event: 'refused'; uid: number; gid: number; pid: number };

export function formatReceiverEvent(e: ReceiverEvent): string[] {
  switch (e.event) {
    case 'listening':
      return [`listening on ${e.socket}`];
    case 'message':
      return [
        `message ${e.index} carried: ${showText(e.text)}`,
        `message ${e.index} shm fd:  ${showText(e.shmText)} (mapped the passed fd: a ${e.shmSize}-byte shared-memory object)`,
      ];
    case 'refused':
      return [];
  }
}

/** Binds the receiver's socket, prints `listening`, receives `count` messages, cleans up. */
export async function runReceiver(options: ReceiverOptions, onEvent: (e: ReceiverEvent) => void,
  io: DemoIo = plainIo): Promise<void> {
  const { socket: path, type } = options;
  checkSocketPath(path);
  removeStaleSocket(path);
  await withInterrupts(async (signal) => {
    const sock = native.socket(type);
    let bound: Stats | undefined;
    try {
      if (type === 'dgram') native.setPassCredentials(sock, true);
      native.bind(sock, path);
      bound = lstatSync(path);
      // Anyone may connect: the credential check below (not the file mode) decides who is heard,
      // so a sender of another user gets a clear refusal instead of EACCES.
      chmodSync(path, 0o666);
      if (type === 'stream') native.listen(sock, 16);
      onEvent({ event: 'listening', socket: path });
      for (let index = 1; index <= options.count; index++) {
        const deadline = options.timeout === undefined ? undefined : Date.now() + options.timeout;
        const message = type === 'dgram'
          ? await receiveDatagram(sock, options, deadline, signal, onEvent, io)
          : await receiveStream(sock, options, deadline, signal, onEvent, io);
        onEvent({ event: 'message', index, ...message });
      }
    } finally {
      native.close(sock);
      if (bound) removeOwnSocket(path, bound);
    }
  });
}

/** A socket file nobody is bound to is removed; a live one, or any other file, is left alone. */
function removeStaleSocket(path: string): void {
  let st: Stats;
  try {
    st = lstatSync(path);
  } catch (err) {
    if (isErrnoException(err) && err.code === 'ENOENT') return;
    throw err;
  }
  if (!st.isSocket()) throw new UserError(`${path} exists and is not a socket; left untouched (choose another --socket)`);
  // A datagram probe connects without side effects: a stream listener is not handed a connection.
  const probe = native.socket('dgram', { nonBlocking: true });
  try {
    native.connect(probe, path);
  } catch (err) {
    if (isErrnoException(err) && (err.code === 'ECONNREFUSED' || err.code === 'ENOENT')) {
      try { unlinkSync(path); } catch (e) { if (!isErrnoException(e) || e.code !== 'ENOENT') throw e; }
      return;
    }
    if (!isErrnoException(err) || err.code !== 'EPROTOTYPE') throw err;
  } finally {
    native.close(probe);
  }
  throw new UserError(`another process is already listening on ${path}`);
}

/** Removes the socket file if it is still the one this receiver bound. */
function removeOwnSocket(path: string, bound: Stats): void {
  try {
    const now = lstatSync(path);
    if (now.ino === bound.ino && now.dev === bound.dev) unlinkSync(path);
  } catch {
    // already gone
  }
}

type ReceivedMessage = Omit<Extract<ReceiverEvent, { event: 'message' }>, 'event' | 'index'>;

function isRefused(options: ReceiverOptions, creds: { uid: number }): boolean {
  return !options.allowAnyUser && creds.uid !== process.getuid?.();
}

async function receiveDatagram(sock: number, options: ReceiverOptions, deadline: number | undefined,
  signal: AbortSignal, onEvent: (e: ReceiverEvent) => void, io: DemoIo): Promise<ReceivedMessage> {
  const buffer = new Uint8Array(maxMessageBytes + 1);
  for (;;) {
    const r = await io.recvmsg(sock, [buffer], 1, deadline, signal);
    if (!r) throw timedOut(options);
    try {
      if (!r.credentials) throw new UserError('a message came without sender credentials (SO_PASSCRED is off?)');
      if (isRefused(options, r.credentials)) {
        onEvent({ event: 'refused', ...r.credentials });
        continue;
      }
      checkReceived(r, r.dataTruncated);
      return { ...readPassedMessage(buffer.subarray(0, r.bytes), r.fds[0]), uid: r.credentials.uid, gid: r.credentials.gid };
    } finally {
      closeAll(r.fds);
    }
  }
}

async function receiveStream(listener: number, options: ReceiverOptions, deadline: number | undefined,
  signal: AbortSignal, onEvent: (e: ReceiverEvent) => void, io: DemoIo): Promise<ReceivedMessage> {
  for (;;) {
    const conn = await io.accept(listener, deadline, signal);
    if (conn === undefined) throw timedOut(options);
    const fds: number[] = [];
    try {
      const creds = native.peerCredentials(conn);
      if (isRefused(options, creds)) {
        onEvent({ event: 'refused', ...creds });
        continue;
      }
      // The sender writes the text (the fd rides on its first byte) and closes: read to EOF.
      const buffer = new Uint8Array(maxMessageBytes + 1);
      const connDeadline = Math.min(deadline ?? Infinity, Date.now() + connectionGraceMs);
      let length = 0;
      for (;;) {
        const r = await io.recvmsg(conn, [buffer.subarray(length)], 1, connDeadline, signal);
        if (!r) throw new UserError(`a sender connected to ${options.socket} but did not finish its message in time`);
        fds.push(...r.fds);
        checkReceived(r, false);
        if (fds.length > 1) throw tooManyFds();
        if (r.eof) break;
        length += r.bytes;
        if (length > maxMessageBytes) throw new UserError(`a message was longer than ${maxMessageBytes} bytes`);
      }
      return { ...readPassedMessage(buffer.subarray(0, length), fds[0]), uid: creds.uid, gid: creds.gid };
    } finally {
      closeAll(fds);
      native.close(conn);
    }
  }
}

function checkReceived(r: RecvResult, dataTruncated: boolean): void {
  if (r.fdsTruncated) throw tooManyFds();
  if (dataTruncated) throw new UserError(`a message was longer than ${maxMessageBytes} bytes`);
}

function tooManyFds(): UserError {
  return new UserError('a message came with more file descriptors than the 1 this receiver takes; all of them were closed');
}

function timedOut(options: ReceiverOptions): UserError {
  return new UserError(`no message came within ${(options.timeout ?? 0) / 1000} s on ${options.socket}`);
}

/** Maps the passed fd and reads the record the sender wrote into it. */
function readPassedMessage(text: Uint8Array, fd: number | undefined): Omit<ReceivedMessage, 'uid' | 'gid'> {
  if (fd === undefined) throw new UserError('a message came without a file descriptor');
  const st = fstatSync(fd);
  if (!st.isFile()) throw new UserError('the passed file descriptor is not a shared-memory object');
  if (st.size < recordHeaderBytes) throw new UserError(`the passed shared-memory object is only ${st.size} bytes`);
  const mapped = Math.min(st.size, recordHeaderBytes + maxMessageBytes);
  const shmText = withMapping(fd, mapped, false, (m) => readRecord(m, 'the passed shared-memory object'));
  const decoder = new TextDecoder();
  return { text: decoder.decode(text), shmText: decoder.decode(shmText), shmSize: st.size };
}

function closeAll(fds: number[]): void {
  for (const fd of fds.splice(0)) native.close(fd);
}

