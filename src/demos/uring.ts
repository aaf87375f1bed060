// The `--uring` variants of the demos: the same commands, the same output, with their I/O
// calls going through a Ring (IORING_OP_READV / WRITEV / SENDMSG / RECVMSG / ACCEPT / READ /
// WRITE) instead of the plain syscalls. Each demo swaps in these functions; nothing else changes.
import { Option } from 'commander';
import { UserError } from '../cli-util.js';
import { Ring, isIoUringUnavailable } from '../ring.js';
import type { FdpassIo } from './fdpass.js';
import type { ReadVectored } from './readv.js';
import type { VectoredWrite } from './common.js';

type RingInstance = InstanceType<typeof Ring>;

/** The `--uring` option every demo that has a variant adds. */
export function uringOption(what: string): Option {
  return new Option('--uring', `do the ${what} through io_uring (a Ring) instead of the plain syscall; same output`);
}

/** Opens a Ring for one command and closes it after; refusal becomes one line for the user. */
export async function withRing<T>(body: (ring: RingInstance) => Promise<T>): Promise<T> {
  let ring: RingInstance;
  try {
    ring = new Ring({ entries: 64 });
  } catch (err) {
    if (isIoUringUnavailable(err)) throw new UserError(`${err.message}; use the command without --uring`);
    throw err;
  }
  try {
    return await body(ring);
  } finally {
    await ring.close();
  }
}

/** readv/preadv as IORING_OP_READV (offset undefined: the file position, as readv(2)). */
export const uringReadVectored = (ring: RingInstance): ReadVectored =>
  (fd, buffers, offset) => ring.readv(fd, buffers, offset);

/** writev/pwritev as IORING_OP_WRITEV. */
export const uringWriteVectored = (ring: RingInstance): VectoredWrite =>
  (fd, buffers, position) => ring.writev(fd, buffers, position);

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

/** fdpass's socket I/O as IORING_OP_ACCEPT / RECVMSG / SENDMSG. */
export const uringFdpassIo = (ring: RingInstance): FdpassIo => ({
  acceptConnection: (fd, deadline, signal) => untilDeadline(ring, fd, ring.accept(fd), deadline, signal),
  receiveFdMessage: (fd, buffers, maxFds, deadline, signal) =>
    untilDeadline(ring, fd, ring.recvmsg(fd, buffers, { maxFds }), deadline, signal),
  sendFdMessage: (fd, buffers, options) => {
    if (options.to !== undefined) throw new Error('the uring variant sends on connected sockets only');
    return ring.sendmsg(fd, buffers, { fds: options.fds, credentials: options.credentials });
  },
});
