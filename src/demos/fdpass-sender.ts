// `iolab fdpass send`: connects to the receiver, puts the message into a new shared-memory
// object (or, with --memfd, a sealed memfd) as plain bytes from offset 0, zero-filled to the
// object's size, and sends the fd with the message text in one sendmsg (SCM_RIGHTS).
import { lstatSync, constants, type Stats } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { isErrnoException, native } from '../native.js';
import { UserError } from '../cli-util.js';
import { plural } from '../numbers.js';
import { writeAllVectored } from './common.js';
import { showText } from '../show-bytes.js';
import { checkSocketPath, maxMessageBytes, type FdpassType } from './fdpass-common.js';
import { plainIo, type DemoIo } from './io.js';
import { checkObjectSize } from './memory-objects.js';

export const defaultMessage = 'hello through SCM_RIGHTS';
export const defaultObjectSize = 4096;

const { O_CREAT, O_EXCL, O_RDWR } = constants;

export interface SenderOptions {
  socket: string;
  type: FdpassType;
  message: string;
  size: number;
  /** A sealed memfd instead of a shm_open object. */
  memfd?: boolean;
}

export interface SendResult {
  event: 'sent';
  socket: string;
  type: FdpassType;
  bytes: number;
  text: string;
  object: 'shm' | 'memfd';
  size: number;
  /** Who owns the socket file: the receiver's uid when it bound the path itself. */
  receiverUid: number;
}

/** Connects, puts the message in a new object, sends its fd with the text. */
export async function runSender(options: SenderOptions, io: DemoIo = plainIo): Promise<SendResult> {
  const { socket: path, type } = options;
  checkSocketPath(path);
  const text = new TextEncoder().encode(options.message);
  if (text.byteLength === 0) throw new UserError('the message is empty (an fd must ride on at least one byte)');
  if (text.byteLength > maxMessageBytes) {
    throw new UserError(`the message is ${plural(text.byteLength, 'byte')}; at most ${plural(maxMessageBytes, 'byte')} travel in one message`);
  }
  if (options.size < text.byteLength) {
    throw new UserError(`the message is ${plural(text.byteLength, 'byte')} but --size is ${options.size}`);
  }
  const object = options.memfd ? 'memfd' : 'shm';
  checkObjectSize('--size', options.size, object);
  const receiverUid = checkReceiverPath(path).uid;

  const sock = native.socket('unix', type);
  try {
    connectToReceiver(sock, path, type);
    const fd = options.memfd ? await createSealedMemfd(text, options.size, io) : createShmObject(text, options.size);
    try {
      await sendAll(io, sock, text, fd, type);
    } catch (err) {
      if (isErrnoException(err) && (err.code === 'EPIPE' || err.code === 'ECONNRESET')) {
        throw new UserError(`the receiver on ${showText(path)} closed the connection before the message was sent ` +
          '(a receiver refuses senders of another user unless it runs with --allow-any-user)');
      }
      throw err;
    } finally {
      native.close(fd);
    }
  } finally {
    native.close(sock);
  }
  return { event: 'sent', socket: path, type, bytes: text.byteLength, text: options.message, object, size: options.size, receiverUid };
}

function checkReceiverPath(path: string): Stats {
  let st: Stats;
  try {
    st = lstatSync(path);
  } catch (err) {
    if (isErrnoException(err) && err.code === 'ENOENT') throw new UserError(`no receiver listening on ${showText(path)}`);
    throw err;
  }
  if (!st.isSocket()) throw new UserError(`${showText(path)} is not a socket`);
  return st;
}

function connectToReceiver(sock: number, path: string, type: FdpassType): void {
  try {
    native.connect(sock, path);
  } catch (err) {
    if (isErrnoException(err) && (err.code === 'ECONNREFUSED' || err.code === 'ENOENT')) {
      throw new UserError(`no receiver listening on ${showText(path)}`);
    }
    if (isErrnoException(err) && err.code === 'EPROTOTYPE') {
      const other = type === 'dgram' ? 'stream' : 'dgram';
      throw new UserError(`the receiver on ${showText(path)} is not a ${type} socket (try --type ${other})`);
    }
    throw err;
  }
}

/**
 * A new, uniquely named shm object (0600) holding the text: its name is unlinked at once (the
 * fd keeps the object alive, and nothing is left in /dev/shm whatever happens next), then it is
 * sized, mapped for just the text, and the text copied in, as a C sender does.
 */
function createShmObject(text: Uint8Array, size: number): number {
  const name = `/iolab-fdpass-${process.pid}-${randomBytes(6).toString('hex')}`;
  const fd = native.shmOpen(name, O_CREAT | O_EXCL | O_RDWR, 0o600);
  let ok = false;
  try {
    native.shmUnlink(name);
    native.ftruncate(fd, size);
    // Only this process holds the object, so nothing can shrink it under the mapping.
    const mapping = native.mmap(fd, text.byteLength, { write: true });
    try {
      new Uint8Array(mapping).set(text);
    } finally {
      native.munmap(mapping);
    }
    ok = true;
    return fd;
  } finally {
    if (!ok) native.close(fd);
  }
}

/** A memfd holding the text, written with write(2) and then sealed: it can no longer shrink,
 * grow or change, so a receiver may map it without fear of SIGBUS and trust what it reads. */
async function createSealedMemfd(text: Uint8Array, size: number, io: DemoIo): Promise<number> {
  const fd = native.memfdCreate('iolab-fdpass');
  let ok = false;
  try {
    native.ftruncate(fd, size);
    await writeAllVectored(io.writev, fd, [text], 0);
    const { F_SEAL_SHRINK, F_SEAL_GROW, F_SEAL_WRITE } = native.seals;
    native.addSeals(fd, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE);
    ok = true;
    return fd;
  } finally {
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

/**
 * What a datagram sender can know of a refusal: nothing comes back, but the socket file's owner
 * is the receiver's uid, and a receiver that checks uids drops another user's message.
 */
export function refusalNote(r: SendResult): string | undefined {
  const uid = process.getuid?.();
  if (r.type !== 'dgram' || uid === undefined || r.receiverUid === uid) return undefined;
  return `note: ${showText(r.socket)} belongs to uid ${r.receiverUid}, not to this user (uid ${uid}): a receiver that checks ` +
    "the sender's uid, as iolab's does unless run with --allow-any-user, drops this message, and a datagram " +
    'sender is not told';
}

export function formatSend(r: SendResult): string[] {
  const what = r.object === 'memfd' ? 'memfd sealed against shrinking, growing and writing' : 'shared-memory object';
  return [`sent to ${showText(r.socket)}: ${showText(r.text)} (with the fd of a ${r.size}-byte ${what})`];
}

