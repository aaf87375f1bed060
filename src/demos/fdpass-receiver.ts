// `iolab fdpass recv`: binds a Unix socket, receives messages that carry an fd (SCM_RIGHTS),
// checks who sent each, and shows what the passed fd is and the text at its start. Any sender
// will do: a shm_open object, a memfd or a regular file, written by iolab or by a C program.
import { native, type RecvResult } from '../native.js';
import { UserError } from '../cli-util.js';
import { plural } from '../numbers.js';
import { withInterrupts } from './common.js';
import { showBytes, showText } from '../show-bytes.js';
import { checkSocketPath, maxMessageBytes, type FdpassType } from './fdpass-common.js';
import { bindReceiverPath, type BoundPath } from './fdpass-bind.js';
import { plainIo, type DemoIo } from './io.js';
import { describeFd, describeRead, formatFd, readText, type FdDescription } from './memory-objects.js';

/** How long a stream receiver waits for a connected sender to finish its message. */
const connectionGraceMs = 10_000;
/** The most of a passed file's start the receiver reads (or maps) to find its text. */
export const maxShownBytes = 64 * 1024;

export interface ReceiverOptions {
  socket: string;
  type: FdpassType;
  count: number;
  /** Milliseconds to wait for each message; undefined waits forever. */
  timeout?: number;
  allowAnyUser: boolean;
}

/** What the passed fd held: its text (up to the first NUL) and how it was reached. */
export interface PassedContents {
  /** Shown as readv shows bytes; base64 has them exactly. */
  text: string;
  base64: string;
  how: 'mmap' | 'pread' | 'not read';
  /** Bytes mapped or read. */
  bytes: number;
  end: 'NUL' | 'end of file' | 'limit';
  why: string;
}

export type ReceiverEvent =
  | { event: 'listening'; socket: string }
  | { event: 'message'; index: number; text: string; fd: FdDescription; contents: PassedContents; uid: number; gid: number }
  | { event: 'refused'; uid: number; gid: number; pid: number };

export function formatReceiverEvent(e: ReceiverEvent): string[] {
  switch (e.event) {
    case 'listening':
      return [`listening on ${showText(e.socket)}`];
    case 'message': {
      const c = e.contents;
      const read = { ...c, text: new Uint8Array(0) };
      return [
        `message ${e.index} carried: ${showText(e.text)}`,
        `message ${e.index} fd:      ${formatFd(e.fd, showText)}; ${describeRead(read)}`,
        `message ${e.index} holds:   ${showBytes(Buffer.from(c.base64, 'base64'))}`,
      ];
    }
    case 'refused':
      return [];
  }
}

/** Binds the receiver's socket, prints `listening`, receives `count` messages, cleans up. */
export async function runReceiver(options: ReceiverOptions, onEvent: (e: ReceiverEvent) => void,
  io: DemoIo = plainIo): Promise<void> {
  const { socket: path, type } = options;
  checkSocketPath(path);
  await withInterrupts(async (signal) => {
    const sock = native.socket('unix', type);
    let bound: BoundPath | undefined;
    try {
      if (type === 'dgram') native.setPassCredentials(sock, true);
      bound = bindReceiverPath(sock, path);
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
      bound?.release();
    }
  });
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
      return { ...(await readPassedMessage(buffer.subarray(0, r.bytesRead), r.fds[0], io)), uid: r.credentials.uid, gid: r.credentials.gid };
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
        if (!r) throw new UserError(`a sender connected to ${showText(options.socket)} but did not finish its message in time`);
        fds.push(...r.fds);
        checkReceived(r, false);
        if (fds.length > 1) throw tooManyFds();
        if (r.eof) break;
        length += r.bytesRead;
        if (length > maxMessageBytes) throw tooLong();
      }
      return { ...(await readPassedMessage(buffer.subarray(0, length), fds[0], io)), uid: creds.uid, gid: creds.gid };
    } finally {
      closeAll(fds);
      native.close(conn);
    }
  }
}

function checkReceived(r: RecvResult, dataTruncated: boolean): void {
  if (r.fdsTruncated) throw tooManyFds();
  if (dataTruncated) throw tooLong();
}

function tooLong(): UserError {
  return new UserError(`a message was longer than ${plural(maxMessageBytes, 'byte')}`);
}

function tooManyFds(): UserError {
  return new UserError('a message came with more file descriptors than the 1 this receiver takes; all of them were closed');
}

function timedOut(options: ReceiverOptions): UserError {
  return new UserError(`no message came within ${(options.timeout ?? 0) / 1000} s on ${showText(options.socket)}`);
}

/** What the passed fd is, and the text at its start (mapped only when it is sealed against
 * shrinking, else read with pread: a sender that shrinks it can never make this process fault). */
async function readPassedMessage(text: Uint8Array, fd: number | undefined, io: DemoIo):
  Promise<Omit<ReceivedMessage, 'uid' | 'gid'>> {
  if (fd === undefined) throw new UserError('a message came without a file descriptor');
  const about = describeFd(fd);
  const { text: held, ...read } = await readText(fd, io, maxShownBytes, about);
  const contents = { text: showBytes(held), base64: Buffer.from(held).toString('base64'), ...read };
  return { text: new TextDecoder().decode(text), fd: about, contents };
}

function closeAll(fds: number[]): void {
  for (const fd of fds.splice(0)) native.close(fd);
}

