// The synchronous calls of iolab's public API (src/index.ts): vectored I/O, Unix-domain sockets
// with fd passing, POSIX shared memory, memfds and seals. Each is defined once, here: most are
// the addon's entry point of the same name; sendmsg and recvmsg read their options in JS and
// hand the values to the addon's sendmsgWith/recvmsgWith, the cheaper way on this hot path.
// Every argument check stays in the addon (an option that is not an object still reaches it,
// as `options`, for its error). See docs/api.md.
import { native, Received, type Credentials, type RecvOptions, type RecvResult, type SendOptions, type SocketType } from './native.js';

/** readv(2), or preadv(2) when position is given. Returns bytes read; short reads as is. */
export const readv: (fd: number, buffers: ArrayBufferView[], position?: number | bigint) => number = native.readv;
/** writev(2), or pwritev(2) when position is given. Returns bytes written; short writes as is. */
export const writev: (fd: number, buffers: ArrayBufferView[], position?: number | bigint) => number = native.writev;

/** socket(AF_UNIX, type | SOCK_CLOEXEC [| SOCK_NONBLOCK]). */
export const socket: (type: SocketType, options?: { nonBlocking?: boolean }) => number = native.socket;
/** socketpair(AF_UNIX, type | SOCK_CLOEXEC [| SOCK_NONBLOCK]). */
export const socketpair: (type: SocketType, options?: { nonBlocking?: boolean }) => [number, number] = native.socketpair;
/** bind(2). address: a filesystem path, or an abstract name written with a leading '\0'. */
export const bind: (fd: number, address: string) => void = native.bind;
/** listen(2). */
export const listen: (fd: number, backlog?: number) => void = native.listen;
/** accept4(2) with SOCK_CLOEXEC; the new fd belongs to the caller. */
export const accept: (fd: number) => number = native.accept;
/** connect(2) to a Unix socket path ('\0'-prefixed: abstract). */
export const connect: (fd: number, address: string) => void = native.connect;
/** close(2). */
export const close: (fd: number) => void = native.close;
/** SO_PEERCRED of a connected stream/seqpacket socket. */
export const peerCredentials: (fd: number) => Credentials = native.peerCredentials;
/** SO_PASSCRED on or off: recvmsg then reports the sender's credentials (datagrams). */
export const setPassCredentials: (fd: number, on: boolean) => void = native.setPassCredentials;
/** poll(2) one fd for 'read' or 'write' up to timeoutMs (-1: forever). True when ready. */
export const waitFd: (fd: number, event: 'read' | 'write', timeoutMs: number) => boolean = native.waitFd;

// held once: a lookup on the addon's exports object per call costs on this hot path
const { sendmsgWith, recvmsgWith } = native;

/** sendmsg(2): the buffers as one message, fds as SCM_RIGHTS, `to` for unconnected datagrams,
 * `credentials` to attach this process's SCM_CREDENTIALS. Returns bytes sent. */
export function sendmsg(fd: number, buffers: ArrayBufferView[], options?: SendOptions): number {
  if (options === null || typeof options !== 'object') return sendmsgWith(fd, buffers, undefined, undefined, undefined, options);
  const { credentials, fds, to } = options;
  return sendmsgWith(fd, buffers, fds, credentials, to, options);
}

// recvmsg writes bytes, flags, the fd count and the fds here; this makes the object.
const scratch = new Float64Array(3 + native.constants.SCM_MAX_FD);

/** recvmsg(2) with MSG_CMSG_CLOEXEC. See RecvResult for truncation rules. */
export function recvmsg(fd: number, buffers: ArrayBufferView[], options?: RecvOptions): RecvResult {
  const extra = options === null || typeof options !== 'object'
    ? recvmsgWith(fd, buffers, undefined, undefined, options, scratch)
    : recvmsgWith(fd, buffers, options.maxFds, options.controlFds, options, scratch);
  const count = scratch[2];
  const fds = count === 0 ? [] : count === 1 ? [scratch[3]] : Array.from(scratch.subarray(3, 3 + count));
  const more = extra as { credentials?: Credentials; from?: string } | undefined;
  return new Received(scratch[0], fds, scratch[1], more?.credentials, more?.from);
}

/** shm_open(3) with O_CLOEXEC added. flags are fs.constants.O_* values. Name: one leading '/',
 * no other '/', at most 255 bytes (else TypeError, code ERR_INVALID_ARG_VALUE). */
export const shmOpen: (name: string, flags: number, mode?: number) => number = native.shmOpen;
/** shm_unlink(3). */
export const shmUnlink: (name: string) => void = native.shmUnlink;
/** ftruncate(2). */
export const ftruncate: (fd: number, length: number) => void = native.ftruncate;
/** mmap(2) of [offset, offset+length), MAP_SHARED: an ArrayBuffer over the mapping, unmapped
 * when collected. write: PROT_READ|PROT_WRITE; otherwise PROT_READ, where a store is a SIGSEGV,
 * so only read (copy) from it. offset: a multiple of constants.PAGE_SIZE. RangeError
 * (ERR_OUT_OF_RANGE) for length 0 or a range past the object's end. */
export const mmap: (fd: number, length: number, options?: { write?: boolean; offset?: number }) => ArrayBuffer = native.mmap;
/** Detaches the ArrayBuffer (later use is a TypeError), then munmap(2)s it. */
export const munmap: (buffer: ArrayBuffer) => void = native.munmap;
/** memfd_create(2) with MFD_CLOEXEC, and MFD_ALLOW_SEALING unless allowSealing is false. */
export const memfdCreate: (name: string, options?: { allowSealing?: boolean }) => number = native.memfdCreate;
/** fcntl(F_ADD_SEALS): seals is an OR of `seals.*`. */
export const addSeals: (fd: number, seals: number) => void = native.addSeals;
/** fcntl(F_GET_SEALS), or undefined when the file cannot carry seals (not tmpfs/hugetlbfs). */
export const getSeals: (fd: number) => number | undefined = native.getSeals;
/** The F_SEAL_* bits. */
export const seals = native.seals;
/** O_NONBLOCK on or off on an open file (fcntl F_SETFL). */
export const setNonBlocking: (fd: number, on: boolean) => void = native.setNonBlocking;
/** flock(2). Without wait: false (instead of waiting) when another open file holds the lock. */
export const flock: (fd: number, operation: 'exclusive' | 'shared' | 'unlock', options?: { wait?: boolean }) => boolean = native.flock;
