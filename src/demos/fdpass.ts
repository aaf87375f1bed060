// `iolab fdpass recv|send`: pass an open shared-memory fd from one process to another over a
// Unix-domain socket (sendmsg/recvmsg with SCM_RIGHTS). The sender writes a message into a new
// shm object, sends the fd with the message text and unlinks the name; the receiver maps the fd
// it got and shows that the object holds the same text. Only the fd made the trip: the object
// no longer has a name by the time the receiver reads it.
import { chmodSync, constants, existsSync, fstatSync, lstatSync, unlinkSync, type Stats } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { Command, Option } from 'commander';
import { isErrnoException, native, type RecvResult, type SendOptions } from '../native.js';
import { oneLineErrors, printJson, UserError } from '../cli-util.js';
import {
  readRecord, recordBytes, recordHeaderBytes, showBytes, waitReadable, withInterrupts, writeRecord,
} from './common.js';
import { withMapping } from './shm.js';
import { uringFdpassIo, uringOption, withRing } from './uring.js';
import { durationOption, numberOption } from '../numbers.js';

export type FdpassType = 'dgram' | 'stream';
/** Longest message text either side handles (it also travels in the socket message). */
export const maxMessageBytes = 64 * 1024;
/** Unix socket paths: sun_path holds 108 bytes including the terminating NUL. */
export const maxSocketPathBytes = native.constants.UNIX_PATH_MAX;
export const defaultMessage = 'hello through SCM_RIGHTS';
export const defaultShmSize = 4096;
/** How long a stream receiver waits for a connected sender to finish its message. */
const connectionGraceMs = 10_000;

const { O_CREAT, O_EXCL, O_RDWR } = constants;

/** Where both sides meet when no --socket is given. */
export function defaultSocketPath(): string {
  const runtimeDir = process.env.XDG_RUNTIME_DIR;
  // Only a folder that exists (an inherited XDG_RUNTIME_DIR after su/sudo may not).
  if (runtimeDir && existsSync(runtimeDir)) return `${runtimeDir.replace(/\/+$/, '')}/iolab-fdpass.sock`;
  return `/tmp/iolab-fdpass-${process.getuid?.() ?? 0}.sock`;
}

export function checkSocketPath(path: string): void {
  if (path === '') throw new UserError('the socket path is empty');
  const bytes = Buffer.byteLength(path);
  if (bytes > maxSocketPathBytes) {
    throw new UserError(`socket path is ${bytes} bytes long; Unix socket paths must be at most ${maxSocketPathBytes} bytes: ${path}`);
  }
}

// ---- the socket I/O (a uring variant swaps these) ----

export interface FdpassIo {
  /** Waits until `deadline` for a connection on a listening stream socket; undefined on timeout. */
  acceptConnection(fd: number, deadline: number | undefined, signal: AbortSignal): Promise<number | undefined>;
  /** Waits until `deadline` for one message and receives it; undefined on timeout. */
  receiveFdMessage(fd: number, buffers: Uint8Array[], maxFds: number, deadline: number | undefined,
    signal: AbortSignal): Promise<RecvResult | undefined>;
  /** One sendmsg: the buffers as one message, fds as SCM_RIGHTS. Returns bytes sent. */
  sendFdMessage(fd: number, buffers: Uint8Array[], options: SendOptions): Promise<number>;
}

export const plainFdpassIo: FdpassIo = {
  async acceptConnection(fd, deadline, signal) {
    return (await waitReadable(fd, deadline, signal)) ? native.accept(fd) : undefined;
  },
  async receiveFdMessage(fd, buffers, maxFds, deadline, signal) {
    return (await waitReadable(fd, deadline, signal)) ? native.recvmsg(fd, buffers, { maxFds }) : undefined;
  },
  async sendFdMessage(fd, buffers, options) {
    return native.sendmsg(fd, buffers, options);
  },
};

// ---- receiver ----

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
  io: FdpassIo = plainFdpassIo): Promise<void> {
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
  signal: AbortSignal, onEvent: (e: ReceiverEvent) => void, io: FdpassIo): Promise<ReceivedMessage> {
  const buffer = new Uint8Array(maxMessageBytes + 1);
  for (;;) {
    const r = await io.receiveFdMessage(sock, [buffer], 1, deadline, signal);
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
  signal: AbortSignal, onEvent: (e: ReceiverEvent) => void, io: FdpassIo): Promise<ReceivedMessage> {
  for (;;) {
    const conn = await io.acceptConnection(listener, deadline, signal);
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
        const r = await io.receiveFdMessage(conn, [buffer.subarray(length)], 1, connDeadline, signal);
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

/** Text as one safe terminal line (see showBytes). */
function showText(text: string): string {
  return showBytes(new TextEncoder().encode(text));
}

function closeAll(fds: number[]): void {
  for (const fd of fds.splice(0)) native.close(fd);
}

// ---- sender ----

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
export async function runSender(options: SenderOptions, io: FdpassIo = plainFdpassIo): Promise<SendResult> {
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
async function sendAll(io: FdpassIo, sock: number, text: Uint8Array, shmFd: number, type: FdpassType): Promise<void> {
  let sent = await io.sendFdMessage(sock, [text], { fds: [shmFd], credentials: type === 'dgram' });
  if (type === 'dgram' && sent !== text.byteLength) throw new Error(`sendmsg sent ${sent} of ${text.byteLength} bytes`);
  while (sent < text.byteLength) {
    const n = await io.sendFdMessage(sock, [text.subarray(sent)], {});
    if (n <= 0) throw new Error(`sendmsg sent ${n} bytes`);
    sent += n;
  }
}

export function formatSend(r: SendResult): string[] {
  return [`sent to ${r.socket}: ${showText(r.text)} (with the fd of a ${r.shmSize}-byte shared-memory object)`];
}

// ---- the commands ----

const typeOption = () => new Option('--type <type>', 'socket type').choices(['dgram', 'stream']).default('dgram');
const socketHelp = () => `socket path (default: ${defaultSocketPath()})`;

export function fdpassCommand(): Command {
  const fdpass = new Command('fdpass')
    .description('pass a shared-memory fd between two processes over a Unix socket (SCM_RIGHTS)')
    .addHelpText('after', `
Run the receiver in one terminal and the sender in another:
  $ iolab fdpass recv
  listening on ${defaultSocketPath()}
  $ iolab fdpass send
  sent to ${defaultSocketPath()}: ${defaultMessage} (with the fd of a 4096-byte shared-memory object)
and the receiver prints:
  message 1 carried: ${defaultMessage}
  message 1 shm fd:  ${defaultMessage} (mapped the passed fd: a 4096-byte shared-memory object)`);

  fdpass.command('recv')
    .description('bind a Unix socket, receive messages with a shared-memory fd, map each fd and print its text')
    .option('--socket <path>', socketHelp())
    .addOption(typeOption())
    .option('--count <n>', 'messages to receive before exiting', numberOption({ min: 1 }), 1)
    .option('--timeout <time>', 'give up (exit 1) when a message does not come within this time: 10, 500ms, 2s (default: wait forever)', durationOption())
    .option('--allow-any-user', 'accept senders of any uid (default: only this user\'s)')
    .option('--json', 'print one JSON object per event')
    .addOption(uringOption('accept/recvmsg (IORING_OP_ACCEPT/RECVMSG)'))
    .addHelpText('after', `
A stale socket file at the path is replaced; any other file there is left alone (error).
The socket file is removed on exit, also on Ctrl-C / SIGTERM. Senders of another uid
(SCM_CREDENTIALS on dgram, SO_PEERCRED on stream) are refused with a line on stderr.`)
    .action(async (opts: { socket?: string; type: FdpassType; count: number; timeout?: number; allowAnyUser?: boolean; json?: boolean; uring?: boolean }) => {
      const receive = (io?: FdpassIo) => runReceiver({
        socket: opts.socket ?? defaultSocketPath(),
        type: opts.type,
        count: opts.count,
        timeout: opts.timeout,
        allowAnyUser: opts.allowAnyUser ?? false,
      }, (e) => {
        if (opts.json) {
          printJson(e);
        } else if (e.event === 'refused') {
          process.stderr.write(`iolab: refused a message from uid ${e.uid} (pid ${e.pid}): not this user; ` +
            'run the receiver with --allow-any-user to accept it\n');
        } else {
          process.stdout.write(formatReceiverEvent(e).join('\n') + '\n');
        }
      }, io);
      if (opts.uring) await withRing((ring) => receive(uringFdpassIo(ring)));
      else await receive();
    });

  fdpass.command('send')
    .description('write a message into a new shared-memory object and send its fd to the receiver')
    .option('--socket <path>', socketHelp())
    .addOption(typeOption())
    .option('--message <text>', 'text to send', defaultMessage)
    .option('--size <bytes>', 'size of the shared-memory object', numberOption({ min: 1, size: true }), defaultShmSize)
    .option('--json', 'print the result as one JSON object')
    .addOption(uringOption('sendmsg (IORING_OP_SENDMSG)'))
    .action(async (opts: { socket?: string; type: FdpassType; message: string; size: number; json?: boolean; uring?: boolean }) => {
      const options = { socket: opts.socket ?? defaultSocketPath(), type: opts.type, message: opts.message, size: opts.size };
      const result = opts.uring ? await withRing((ring) => runSender(options, uringFdpassIo(ring))) : await runSender(options);
      if (opts.json) printJson(result);
      else process.stdout.write(formatSend(result).join('\n') + '\n');
    });

  return oneLineErrors(fdpass);
}
