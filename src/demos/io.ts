// The demos' I/O calls behind one interface, in two implementations: the plain syscalls, and
// io_uring through a Ring (IORING_OP_READV / WRITEV / ACCEPT / RECVMSG / SENDMSG). A demo takes
// a DemoIo and never knows which one it got, so `--io-uring` prints exactly what the plain variant
// prints.
import { Option, type Command } from 'commander';
import { optionAlias } from '../aliases.js';
import { UserError } from '../cli-util.js';
import { native, type RecvResult } from '../native.js';
import { recvmsg, sendmsg } from '../syscalls.js';
import { Ring, isIoUringUnavailable } from '../ring/index.js';

type RingInstance = InstanceType<typeof Ring>;

export interface DemoIo {
  /** readv(2), or preadv(2) at `position` (one buffer: read/pread). Resolves with bytes read. */
  readv(fd: number, buffers: Uint8Array[], position?: number): Promise<number>;
  /** writev(2), or pwritev(2) at `position`. Resolves with bytes written (may be short). */
  writev(fd: number, buffers: Uint8Array[], position?: number): Promise<number>;
  /** Waits until `deadline` (Date.now() ms) for a connection on a listening stream socket and
   * accepts it; undefined when the deadline passed first. `signal` aborting ends the wait. */
  accept(fd: number, deadline: number | undefined, signal: AbortSignal): Promise<number | undefined>;
  /** Waits until `deadline` for one message and receives it (up to maxFds fds); undefined on timeout. */
  recvmsg(fd: number, buffers: Uint8Array[], maxFds: number, deadline: number | undefined,
    signal: AbortSignal): Promise<RecvResult | undefined>;
  /** One sendmsg(2) on a connected socket: the buffers as one message, fds as SCM_RIGHTS,
   * `credentials` attaches SCM_CREDENTIALS. Resolves with bytes sent. */
  sendmsg(fd: number, buffers: Uint8Array[], options: { fds?: number[]; credentials?: boolean }): Promise<number>;
}

const sliceMs = 50;

/**
 * Waits until fd is readable. Polls in short slices and yields to the event loop between them,
 * so signal handlers run. Returns false when `deadline` (Date.now() ms) passes first.
 */
async function waitReadable(fd: number, deadline: number | undefined, signal: AbortSignal): Promise<boolean> {
  for (;;) {
    signal.throwIfAborted();
    const left = deadline === undefined ? sliceMs : Math.min(sliceMs, deadline - Date.now());
    if (left <= 0) return false;
    if (native.waitFd(fd, 'read', left)) return true;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** The plain syscalls (a blocking call only once poll(2) said it will not block). */
export const plainIo: DemoIo = {
  async readv(fd, buffers, position) {
    return native.readv(fd, buffers, position);
  },
  async writev(fd, buffers, position) {
    return native.writev(fd, buffers, position);
  },
  async accept(fd, deadline, signal) {
    return (await waitReadable(fd, deadline, signal)) ? native.accept(fd) : undefined;
  },
  async recvmsg(fd, buffers, maxFds, deadline, signal) {
    return (await waitReadable(fd, deadline, signal)) ? recvmsg(fd, buffers, { maxFds }) : undefined;
  },
  async sendmsg(fd, buffers, options) {
    return sendmsg(fd, buffers, options);
  },
};

/**
 * Waits for an op that may block (accept, recvmsg) until `deadline`, or until `signal` aborts:
 * then the op is cancelled (IORING_OP_ASYNC_CANCEL on its fd) and undefined returned (deadline)
 * or the abort reason thrown.
 */
async function untilDeadline<T>(ring: RingInstance, fd: number, op: Promise<T>, deadline: number | undefined,
  signal: AbortSignal): Promise<T | undefined> {
  let timedOut = false;
  const cancel = () => { ring.cancelFd(fd).catch(() => {}); };
  if (signal.aborted) {
    op.catch(() => {}); // cancelled below; its rejection is expected
    cancel();
    signal.throwIfAborted();
  }
  const timer = deadline === undefined ? undefined
    : setTimeout(() => { timedOut = true; cancel(); }, Math.max(0, deadline - Date.now()));
  signal.addEventListener('abort', cancel, { once: true });
  try {
    return await op;
  } catch (err) {
    if ((err as { code?: string }).code === 'ECANCELED') {
      signal.throwIfAborted();
      if (timedOut) return undefined;
    }
    throw err;
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', cancel);
  }
}

/** The same calls as IORING_OP_READV / WRITEV / ACCEPT / RECVMSG / SENDMSG on `ring`. */
export function ringIo(ring: RingInstance): DemoIo {
  return {
    readv: (fd, buffers, position) => ring.readv(fd, buffers, position),
    writev: (fd, buffers, position) => ring.writev(fd, buffers, position),
    accept: (fd, deadline, signal) => untilDeadline(ring, fd, ring.accept(fd), deadline, signal),
    recvmsg: (fd, buffers, maxFds, deadline, signal) =>
      untilDeadline(ring, fd, ring.recvmsg(fd, buffers, { maxFds }), deadline, signal),
    sendmsg: (fd, buffers, options) => ring.sendmsg(fd, buffers, options),
  };
}

/** The `--io-uring` option of every demo that has an io_uring variant. */
export function ioUringOption(what: string): Option {
  return new Option('--io-uring', `do the ${what} through io_uring (a Ring) instead of the plain syscalls; same output`);
}

/** `--uring`, the old name of --io-uring, kept (hidden) on `cmd` and every command below it that has it. */
export function keepOldUringFlag(cmd: Command): Command {
  if (cmd.options.some((o) => o.long === '--io-uring')) optionAlias(cmd, '--uring', '--io-uring');
  for (const sub of cmd.commands) keepOldUringFlag(sub);
  return cmd;
}

/** Runs `body` with the plain calls, or (ioUring) with a Ring opened for it and closed after.
 * A kernel or sandbox that refuses io_uring becomes one line for the user. */
export async function withDemoIo<T>(ioUring: boolean | undefined, body: (io: DemoIo) => Promise<T>): Promise<T> {
  if (!ioUring) return body(plainIo);
  let ring: RingInstance;
  try {
    ring = new Ring({ entries: 64 });
  } catch (err) {
    if (isIoUringUnavailable(err)) throw new UserError(`${err.message}; use the command without --io-uring`);
    throw err;
  }
  try {
    return await body(ringIo(ring));
  } finally {
    await ring.close();
  }
}
