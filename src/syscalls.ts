/// <reference lib="esnext.disposable" preserve="true" />
// The synchronous calls of iolab's public API (src/index.ts): vectored I/O, sockets (Unix, TCP
// and UDP over IPv4 and IPv6) with fd passing, POSIX shared memory, memfds and seals. Each is
// defined once, here: most are the addon's entry point of the same name; sendmsg and recvmsg
// read their options in JS and hand the values to the addon's sendmsgWith/recvmsgWith, the
// cheaper way on this hot path. Every argument check stays in the addon (an option that is not
// an object still reaches it, as `options`, for its error). See docs/api.md.
import {
  native, Received, type AddressInfo, type Credentials, type RecvOptions, type RecvResult, type SendOptions, type ShmFlags,
  type SocketAddress, type SocketFamily, type SocketOptions, type SocketType,
} from './native.js';

/** readv(2), or preadv(2) when position is given (undefined or null: the file position, which
 * moves). Returns bytes read; short reads as is. */
export const readvSync: (fd: number, buffers: ArrayBufferView[], position?: number | bigint | null) => number = native.readv;
/** writev(2), or pwritev(2) when position is given (undefined or null: the file position).
 * Returns bytes written; short writes as is. */
export const writevSync: (fd: number, buffers: ArrayBufferView[], position?: number | bigint | null) => number = native.writev;

/** socket(2) with SOCK_CLOEXEC [| SOCK_NONBLOCK]: family 'unix', 'inet' or 'inet6'; type
 * 'stream' (TCP for inet), 'dgram' (UDP) or 'seqpacket' (unix only); 'stream' when left out. */
export const socket: (family: SocketFamily, type?: SocketType, options?: { nonBlocking?: boolean }) => number = native.socket;
/** socketpair(AF_UNIX, type | SOCK_CLOEXEC [| SOCK_NONBLOCK]). */
export const socketpair: (type: SocketType, options?: { nonBlocking?: boolean }) => [number, number] = native.socketpair;
/** bind(2): a Unix socket to a path ('\0'-prefixed: an abstract name), an IP socket to
 * { host, port } (numeric host; port 0 or left out: any free one, read back with getsockname). */
export const bind: (fd: number, address: SocketAddress) => void = native.bind;
/** listen(2); backlog 511 when left out, as node:net's. */
export const listen: (fd: number, backlog?: number) => void = native.listen;
/** accept4(2) with SOCK_CLOEXEC; the new fd belongs to the caller. */
export const accept: (fd: number) => number = native.accept;
/** connect(2) to a Unix socket path or an IP { host, port } (numeric host: a name needs
 * dns.lookup first). Errors carry `path`, or `address` and `port` as node:net's. */
export const connect: (fd: number, address: SocketAddress) => void = native.connect;
/** shutdown(2): 'write' (SHUT_WR: the peer reads EOF, this side still receives), 'read' or 'both'. */
export const shutdown: (fd: number, how: 'read' | 'write' | 'both') => void = native.shutdown;
/** getsockname(2): a Unix socket's path ('' when it has none), or { address, family, port }. */
export const getsockname: (fd: number) => string | AddressInfo = native.getsockname;
/** getpeername(2): the connected peer's path, or { address, family, port }. */
export const getpeername: (fd: number) => string | AddressInfo = native.getpeername;
/** setsockopt(2) by name: SO_REUSEADDR, SO_REUSEPORT, SO_KEEPALIVE, SO_BROADCAST, TCP_NODELAY,
 * IPV6_V6ONLY take true/false; SO_RCVBUF, SO_SNDBUF a byte count; SO_LINGER seconds (-1: off). */
export const setsockopt: <K extends keyof SocketOptions>(fd: number, option: K, value: SocketOptions[K]) => void = native.setsockopt;
/** getsockopt(2) by name, as the kernel holds it (SO_RCVBUF/SO_SNDBUF: doubled, socket(7)). */
export const getsockopt: <K extends keyof SocketOptions>(fd: number, option: K) => SocketOptions[K] = native.getsockopt;
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
  const more = extra as { credentials?: Credentials; from?: string | AddressInfo } | undefined;
  return new Received(scratch[0], fds, scratch[1], more?.credentials, more?.from);
}

/** shm_open(3) with O_CLOEXEC added. flags as fs.openSync's: 'r' (the default), 'r+', 'w+',
 * 'wx+', or O_* bits. Name: one leading '/', no other '/', at most 255 bytes (else TypeError,
 * code ERR_INVALID_ARG_VALUE). */
export const shmOpen: (name: string, flags?: ShmFlags, mode?: number) => number = native.shmOpen;
/** shm_unlink(3). */
export const shmUnlink: (name: string) => void = native.shmUnlink;
/** ftruncate(2). */
export const ftruncate: (fd: number, length: number) => void = native.ftruncate;
/** A mapping mmap made: an ArrayBuffer over it, which `using` unmaps at the end of its scope. */
export interface Mapping extends ArrayBuffer {
  /** munmap, unless it was unmapped already. */
  [Symbol.dispose](): void;
}

function unmapOnce(this: ArrayBuffer): void {
  if (this.byteLength !== 0) native.munmap(this); // a mapping is never empty: 0 is detached
}

/** mmap(2) of [offset, offset+length), MAP_SHARED: an ArrayBuffer over the mapping, unmapped by
 * munmap, at the end of a `using` scope, or when collected. write: PROT_READ|PROT_WRITE;
 * otherwise PROT_READ, where a store is a SIGSEGV, so only read (copy) from it. offset: a
 * multiple of constants.PAGE_SIZE. RangeError (ERR_OUT_OF_RANGE) for length 0 or a range past
 * the object's end. To share it with a worker thread, hand the worker the fd (or the shm name)
 * and map it there: postMessage copies an ArrayBuffer, or refuses to transfer it. */
export function mmap(fd: number, length: number, options?: { write?: boolean; offset?: number }): Mapping {
  const mapping = native.mmap(fd, length, options) as Mapping;
  Object.defineProperty(mapping, Symbol.dispose, { value: unmapOnce });
  return mapping;
}
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
