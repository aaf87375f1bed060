// `iolab fdpass send`: connects to the receiver, puts the message into a new shared-memory
// object, and sends the object's fd with the message text in one sendmsg (SCM_RIGHTS).
import { constants, lstatSync, type Stats } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { isErrnoException, native } from '../native.js';
import { UserError } from '../cli-util.js';
import { recordBytes, recordHeaderBytes, showText, writeRecord } from './common.js';
import { checkSocketPath, maxMessageBytes, type FdpassType } from './fdpass-common.js';
import { plainIo, type DemoIo } from './io.js';
import { withMapping } from './shm.js';

export const defaultMessage = 'hello through SCM_RIGHTS';
export const defaultShmSize = 4096;

const { O_CREAT, O_EXCL, O_RDWR } = constants;

export interface SenderOptions {
  socket: string;
  type: FdpassType;
  message: string;
  size: number;
}

export interface SendResult {
  event: 'sent';
  socket: string;
  type: FdpassType;
  bytes: number;
  text: string;
  shmSize: number;
}

/** Connects, puts the message in a new shm object, sends its fd with the text, unlinks the name. */
export async function runSender(options: SenderOptions, io: DemoIo = plainIo): Promise<SendResult> {
  const { socket: path, type } = options;
  checkSocketPath(path);
  const text = new TextEncoder().encode(options.message);
  if (text.byteLength === 0) throw new UserError('the message is empty (an fd must ride on at least one byte)');
  if (text.byteLength > maxMessageBytes) {
    throw new UserError(`the message is ${text.byteLength} bytes; at most ${maxMessageBytes} bytes travel in one message`);
  }
  if (options.size < recordBytes(text)) {
    throw new UserError(`the message needs ${recordBytes(text)} bytes of shared memory (${recordHeaderBytes}-byte header + ` +
      `${text.byteLength} bytes of text) but --size is ${options.size}`);
  }
  checkReceiverPath(path);

  const sock = native.socket(type);
  try {
    connectToReceiver(sock, path, type);
    const shmFd = createMessageObject(text, options.size);
    try {
      await sendAll(io, sock, text, shmFd, type);
    } catch (err) {
      if (isErrnoException(err) && (err.code === 'EPIPE' || err.code === 'ECONNRESET')) {
        throw new UserError(`the receiver on ${path} closed the connection before the message was sent ` +
          '(a receiver refuses senders of another user unless it runs with --allow-any-user)');
      }
      throw err;
    } finally {
      native.close(shmFd);
    }
  } finally {
    native.close(sock);
  }
  return { event: 'sent', socket: path, type, bytes: text.byteLength, text: options.message, shmSize: options.size };
}

function checkReceiverPath(path: string): void {
  let st: Stats;
  try {
    st = lstatSync(path);
  } catch (err) {
    if (isErrnoException(err) && err.code === 'ENOENT') throw new UserError(`no receiver listening on ${path}`);
    throw err;
  }
  if (!st.isSocket()) throw new UserError(`${path} is not a socket`);
}

function connectToReceiver(sock: number, path: string, type: FdpassType): void {
  try {
    native.connect(sock, path);
  } catch (err) {
    if (isErrnoException(err) && (err.code === 'ECONNREFUSED' || err.code === 'ENOENT')) {
      throw new UserError(`no receiver listening on ${path}`);
    }
    if (isErrnoException(err) && err.code === 'EPROTOTYPE') {
      const other = type === 'dgram' ? 'stream' : 'dgram';
      throw new UserError(`the receiver on ${path} is not a ${type} socket (try --type ${other})`);
    }
    throw err;
  }
}

/** A new, uniquely named shm object (0600) holding the message; its name is gone on return. */
function createMessageObject(text: Uint8Array, size: number): number {
  const name = `/iolab-fdpass-${process.pid}-${randomBytes(6).toString('hex')}`;
  const fd = native.shmOpen(name, O_CREAT | O_EXCL | O_RDWR, 0o600);
  let ok = false;
  try {
    native.ftruncate(fd, size);
    withMapping(fd, recordBytes(text), true, (m) => writeRecord(m, text));
    ok = true;
    return fd;
  } finally {
    // The fd keeps the object alive; the name is not needed for passing it, so it never outlives us.
    native.shmUnlink(name);
    if (!ok) native.close(fd);
  }
}

/** The fd rides on the first sendmsg; on a stream, whatever a short send left goes after it. */
async function sendAll(io: DemoIo, sock: number, text: Uint8Array, shmFd: number, type: FdpassType): Promise<void> {
  let sent = await io.sendmsg(sock, [text], { fds: [shmFd], credentials: type === 'dgram' });
  if (type === 'dgram' && sent !== text.byteLength) throw new Error(`sendmsg sent ${sent} of ${text.byteLength} bytes`);
  while (sent < text.byteLength) {
    const n = await io.sendmsg(sock, [text.subarray(sent)], {});
    if (n <= 0) throw new Error(`sendmsg sent ${n} bytes`);
    sent += n;
  }
}

export function formatSend(r: SendResult): string[] {
  return [`sent to ${r.socket}: ${showText(r.text)} (with the fd of a ${r.shmSize}-byte shared-memory object)`];
}

