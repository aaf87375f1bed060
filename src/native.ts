// The ONE place that loads the addon, and its private, typed face: iolab's modules import
// `native` and never require the .node file themselves; users get the public API of
// src/index.ts instead. IOLAB_ASAN=1 loads the sanitized build (npm run build:asan).
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type {
  IpcMode,
  IpcCell,
  IpcCellResult,
  IpcJob,
  BenchJob,
  BenchEngineInfo,
  BenchProgress,
  BenchHistogram,
  BenchResult,
  EchoNativeServerOptions,
  EchoServerHandle,
  EchoLoadOptions,
  EchoLoadHandle,
  NativeChannelEnd,
} from './native-types.js';
export type * from './native-types.js';


export const projectRoot = join(dirname(fileURLToPath(import.meta.url)), '..');

/** What the addon owns and has not released (see native/live_objects.h). */
export interface LiveObjects {
  rings: number;
  ringOps: number;
  heldBuffers: number;
  mappings: number;
  ownedFds: number;
  nativeJobs: number;
  nativeServers: number;
  /** Provided-buffer rings (ring.setupBufRing) whose memory is not yet freed. */
  bufferRings: number;
  /** Ring streams (ring.recvMultishot) not yet closed. */
  ringStreams: number;
}

/** Error thrown for a failed syscall: the shape of Node's fs errors, and of net's for a call on
 * an IP address (`address` and `port` instead of `path`). */
export interface ErrnoException extends Error {
  code: string;
  errno: number;
  syscall: string;
  path?: string;
  address?: string;
  port?: number;
}

export interface NativeAddon {
  /** Counters of live native objects; all zero when nothing is held. */
  liveObjects(): LiveObjects;
  /** errno's symbolic name ("ENOENT") for a positive errno value. */
  errnoName(errno: number): string;
  /** True in the sanitized build. */
  sanitized: boolean;
  /** Sanitized build only: writes one byte past a heap block (the process must die). */
  asanSelfTest?: () => void;
  /** The limits the addon checks against (native/constants.cc); use these, never a copy. */
  constants: NativeConstants;

  // ---- features add their functions below, one block each ----

  // ---- vectored I/O (native/sys/vectored.cc) ----
  /** readv(2), or preadv(2) when position is given. Returns bytes read; short reads are returned as is. */
  readv(fd: number, buffers: ArrayBufferView[], position?: number | bigint | null): number;
  /** writev(2), or pwritev(2) when position is given. Returns bytes written; short writes as is. */
  writev(fd: number, buffers: ArrayBufferView[], position?: number | bigint | null): number;

  // ---- sockets (native/sys/unix_socket.cc, socket_address.cc, socket_options.cc) ----
  /** socket(family, type | SOCK_CLOEXEC [| SOCK_NONBLOCK]); type 'stream' when left out. */
  socket(family: SocketFamily, type?: SocketType, options?: { nonBlocking?: boolean }): number;
  /** socketpair(AF_UNIX, type | SOCK_CLOEXEC [| SOCK_NONBLOCK]). */
  socketpair(type: SocketType, options?: { nonBlocking?: boolean }): [number, number];
  /** bind(2) to a Unix path ('\0'-prefixed: abstract) or an IP { host, port }. */
  bind(fd: number, address: SocketAddress): void;
  listen(fd: number, backlog?: number): void;
  /** accept4(2) with SOCK_CLOEXEC; the new fd belongs to the caller. */
  accept(fd: number): number;
  connect(fd: number, address: SocketAddress): void;
  shutdown(fd: number, how: 'read' | 'write' | 'both'): void;
  getsockname(fd: number): string | AddressInfo;
  getpeername(fd: number): string | AddressInfo;
  setsockopt<K extends keyof SocketOptions>(fd: number, option: K, value: SocketOptions[K]): void;
  getsockopt<K extends keyof SocketOptions>(fd: number, option: K): SocketOptions[K];
  close(fd: number): void;
  /** sendmsg(2) and recvmsg(2) with the options' values as arguments (`options` itself only for
   * its type check): what src/syscalls.ts's sendmsg and recvmsg call, the options read in JS
   * (cheaper than from C++). recvmsgWith writes bytes, flags, the fd count and the fds into
   * scratch and returns credentials/from, when any, as an object. */
  sendmsgWith(fd: number, buffers: ArrayBufferView[], fds: unknown, credentials: unknown, to: unknown, options: unknown): number;
  recvmsgWith(fd: number, buffers: ArrayBufferView[], maxFds: unknown, controlFds: unknown, options: unknown, scratch?: Float64Array): unknown;
  /** SO_PEERCRED of a connected stream/seqpacket socket. */
  peerCredentials(fd: number): Credentials;
  /** SO_PASSCRED on or off: recvmsg then reports the sender's credentials (datagrams). */
  setPassCredentials(fd: number, on: boolean): void;
  /** poll(2) one fd for 'read' or 'write' up to timeoutMs (-1: forever). True when ready. */
  waitFd(fd: number, event: 'read' | 'write', timeoutMs: number): boolean;

  // ---- POSIX shared memory (native/sys/shm.cc) ----
  /** shm_open(3) with O_CLOEXEC added. flags: fs's strings ('r', 'r+', 'w+', 'wx+') or O_* bits.
   * Name: one leading '/', no other '/', at most 255 bytes (else TypeError, ERR_INVALID_ARG_VALUE). */
  shmOpen(name: string, flags?: ShmFlags, mode?: number): number;
  shmUnlink(name: string): void;
  ftruncate(fd: number, length: number): void;
  /** mmap(2) of [offset, offset+length), MAP_SHARED: an external ArrayBuffer, munmap'd when
   * collected. write: PROT_READ|PROT_WRITE. Otherwise PROT_READ: a JS store into the buffer is a
   * SIGSEGV, so only read (copy) from it. offset: a multiple of constants.PAGE_SIZE.
   * Throws RangeError (ERR_OUT_OF_RANGE) for length 0 or a range past the object's end. */
  mmap(fd: number, length: number, options?: { write?: boolean; offset?: number }): ArrayBuffer;
  /** Detaches the ArrayBuffer (later use is a TypeError), then munmap(2)s it. A second call,
   * or a buffer mmap did not make, throws TypeError (ERR_INVALID_ARG_VALUE). */
  munmap(buffer: ArrayBuffer): void;

  // ---- memfds, seals, fd flags and file locks (native/sys/: memfd.cc, fd_flags.cc, file_lock.cc) ----
  /** memfd_create(2) with MFD_CLOEXEC, and MFD_ALLOW_SEALING unless allowSealing is false. */
  memfdCreate(name: string, options?: { allowSealing?: boolean }): number;
  /** fcntl(F_ADD_SEALS): seals is an OR of `seals.*`. */
  addSeals(fd: number, seals: number): void;
  /** fcntl(F_GET_SEALS), or undefined when the file cannot carry seals (not tmpfs/hugetlbfs). */
  getSeals(fd: number): number | undefined;
  /** The F_SEAL_* bits. */
  seals: { F_SEAL_SEAL: number; F_SEAL_SHRINK: number; F_SEAL_GROW: number; F_SEAL_WRITE: number; F_SEAL_FUTURE_WRITE: number };
  /** Turns O_NONBLOCK on or off on an open file (fcntl F_SETFL). */
  setNonBlocking(fd: number, on: boolean): void;
  /** Copies the extended attributes of the file at fromPath (never through a symlink) onto the
   * open file toFd; returns the names it could not set. native/sys/xattr_copy.cc, used by
   * src/keep-attributes.ts. */
  copyXattrs(fromPath: string, toFd: number): string[];
  /** renameat2(RENAME_NOREPLACE): from to `to` only if nothing is there (EEXIST), in one step;
   * EINVAL where the file system cannot. native/sys/rename.cc, used by src/write-target.ts. */
  renameNoReplace(from: string, to: string): void;
  /** flock(2). Without wait: false (instead of waiting) when another open file holds the lock. */
  flock(fd: number, operation: 'exclusive' | 'shared' | 'unlock', options?: { wait?: boolean }): boolean;
  /** PR_SET_PDEATHSIG(SIGKILL) for this process; killed at once when its parent is no longer
   * parentPid (it died before the call). native/parent_death.cc, used by src/parent-death.ts. */
  dieWithParent(parentPid: number): void;
  /** Starts file (looked up on PATH) with args, stdin /dev/null, stdout and stderr as pipes
   * whose read ends (CLOEXEC) the caller owns; PR_SET_PDEATHSIG(SIGKILL) is set in the child
   * between fork and exec, so it dies with this process. Wait for it with waitChild. */
  spawnDyingWithParent(file: string, args: string[]): { pid: number; stdout: number; stderr: number };
  /** Waits (off the JS thread) for a child spawnDyingWithParent started: its exit and its CPU
   * time from wait4 (every thread of it). */
  waitChild(pid: number): Promise<{ exitCode: number | null; signal: string | null; usrSec: number; sysSec: number }>;

  // ---- io_uring Ring (native/ring/: js.cc over core, op) ----
  /** The Ring class; use it through src/ring/ring.ts, which types it. */
  Ring: new (options?: { entries?: number; cqEntries?: number; sqpoll?: boolean }) => any;
  /** Registers the class recvmsg results are made with (src/native.ts does it; without one
   * they are plain objects with the same properties). */
  setRecvResultClass(ctor: new (bytesRead: number, fds: number | number[] | undefined, flags: number, credentials: Credentials | undefined, from: string | AddressInfo | undefined) => RecvResult): void;
  /** Registers the class the Ring rejects/throws with once closed (src/ring/ does it). */
  ringSetClosedErrorClass(ctor: new (message?: string) => Error): void;
  /** Tests only: this Ring's close() and env teardown cancel as on kernels before 5.19, where
   * IORING_ASYNC_CANCEL_ANY is refused (its SQE carries a flag the kernel answers with EINVAL),
   * so the per-op fallback (one cancel by user_data per op) runs for real. */
  ringTestRefuseCancelAny(ring: object): void;

  // ---- storage benchmark (native/bench_binding.cc, native/bench/) ----
  /** Runs one job (numjobs threads of one engine) off the JS thread: lays out the file when
   * missing or short, runs, verifies. Rejects with an errno error (code/errno/syscall/path, and
   * offset for an I/O), or code ERR_IOLAB_BENCH (refused input) / ERR_IOLAB_VERIFY (wrong data). */
  benchRun(job: BenchJob, onProgress?: (progress: BenchProgress) => void): Promise<BenchResult>;
  /** Runs the jobs at the same time (fio's jobs between two stonewalls): each file laid out
   * first, one after another, then every job's threads together. One result per entry
   * (job.entry, default the job's index): the jobs of an entry summed, as fio's group_reporting.
   * The process CPU of the run is split between the jobs by their threads. */
  benchRunGroup(jobs: BenchJob[], onProgress?: (progress: BenchProgress) => void): Promise<BenchResult[]>;
  /** The statistics the runner reports for exactly these samples (ns), through the same histogram. */
  benchHistogram(samples: number[]): BenchHistogram;
  /** After another program (fio) wrote into an iolab file on iolab's behalf: records the file
   * as it is now (inode, size, mtime, sampled content), as holding data other than the pattern. */
  benchMarkWritten(filename: string): void;
  /** The native engine table, in list order: names, depth limit and each engine's options. */
  benchEngines: BenchEngineInfo[];
  /** fio's percentile list, the order of BenchHistogram.percentiles. */
  benchPercentileList: number[];
  // ---- echo suite (native/echo_binding.cc) ----
  /** Binds and listens (numeric host), then serves on a thread of its own until stop().
   * Throws EADDRINUSE and friends at once; `done` settles when the server has closed everything. */
  echoStartServer(engine: 'uring' | 'epoll', options: EchoNativeServerOptions): EchoServerHandle;
  /** Runs the load generator (or the thread-per-connection client) on threads of its own. */
  echoRunLoad(options: EchoLoadOptions): EchoLoadHandle;
  /** RLIMIT_NOFILE of this process; `raise`: the soft limit raised to the hard one first
   * (children started afterwards inherit it). */
  echoOpenFileLimit(raise?: boolean): { soft: number; hard: number };
  // ---- bench ipc (native/ipc_binding.cc, native/ipc/) ----
  /** The sending side of one cell, off the JS thread: makes the transport, passes the receiver's
   * end over controlFd (a seqpacket socket whose peer runs ipcServe), runs, collects the report.
   * `done` rejects with code ERR_IOLAB_IPC_CHECK (wrong bytes), ERR_IOLAB_IPC_PEER_GONE,
   * ERR_IOLAB_IPC_UNAVAILABLE, ERR_IOLAB_IPC_STOPPED (after stop()) or an errno error. */
  ipcSend(controlFd: number, transport: string, mode: IpcMode, cell: IpcCell): IpcJob<IpcCellResult>;
  /** Single-thread memcpy of cell.messageBytes for cell.durationMs: the same-run limit. */
  ipcMemcpy(cell: IpcCell): IpcJob<IpcCellResult>;
  /** The receiving side: serves cells from controlFd until it closes. */
  ipcServe(controlFd: number): IpcJob<void>;
  /** The largest message the transport's socket takes here; 0 when it has no per-message limit. */
  ipcLargestMessage(transport: string): number;
  /** Why the transport cannot run here (io_uring refused), or null. */
  ipcUnavailable(transport: string): string | null;
  /** Bytes of memory one cell takes, both processes together. */
  ipcFootprint(transport: string, mode: IpcMode, messageBytes: number): number;
  /** The transports, in table order. */
  ipcTransports: string[];
  /** The smallest message (it carries its sequence number). */
  ipcMinMessage: number;
  /** The C floor of bench api's fd-message loop (native/ipc/fdmsg.c), off the JS thread:
   * sendmsg(1 byte + passedFd) + recvmsg + close of the received fd, for about durationMs. */
  benchFdMessages(passedFd: number, durationMs: number): Promise<{ messages: number; seconds: number }>;
  /** bench api's ping-pong peer (native/ipc/pingpong.c), off the JS thread: writes back every
   * byte read from the stream socket fd; resolves when the other end closes it. */
  pingpongEcho(fd: number): Promise<void>;
  /** The ping-pong group's C floor: `roundTrips` round trips of messageBytes over fd to an
   * echo (0 or absent: as many as start within durationMs), one in flight, off the JS thread;
   * the round trips' p50 and p99 from the latency histogram. */
  pingpongLoop(fd: number, options: { messageBytes: number; roundTrips?: number; durationMs: number }):
    Promise<{ roundTrips: number; elapsedNs: number; p50Ns: number; p99Ns: number }>;

  // ---- the shared-memory channel (native/channel_binding.cc, native/channel/) ----
  /** A new sealed memfd region of two rings of `capacity` bytes (a power of two, 4 KiB to
   * 1 GiB): the creating side's end, over its own copy of `socket` (a Unix stream socket;
   * TypeError ERR_INVALID_ARG_VALUE for any other fd). */
  channelCreate(socket: number, capacity: number): NativeChannelEnd;
  /** The joining side's end over the memfd the creator passed, which it adopts (closed once
   * mapped, or at once when it is not a channel's: ERR_CHANNEL_PROTOCOL). */
  channelJoin(socket: number, memfd: number): NativeChannelEnd;
  /** Marks socket (by inode, process-wide) as carrying a channel before its setup starts:
   * ERR_CHANNEL_BUSY when one does already. The end made over it takes the claim over and
   * lets it go when freed; a setup that fails before calls channelUnclaim. */
  channelClaim(socket: number): void;
  channelUnclaim(socket: number): void;
  /** A pidfd (the caller's to close) of the process at the other end of socket (SO_PEERCRED:
   * the one that made the socketpair, or connected or listened); -1 when it has ended, -2 when
   * there is nothing to watch (it is this process, or pidfd_open is refused here). */
  channelPeerPidfd(socket: number): number;
}

/** The flag bits `constants` names: MSG_* (recv/send flags), SOCK_*, O_* (as fs.constants). */
export type FlagConstant =
  | 'MSG_OOB' | 'MSG_PEEK' | 'MSG_DONTROUTE' | 'MSG_CTRUNC' | 'MSG_TRUNC' | 'MSG_DONTWAIT' | 'MSG_EOR' | 'MSG_WAITALL'
  | 'MSG_NOSIGNAL' | 'MSG_MORE' | 'MSG_ERRQUEUE' | 'MSG_CMSG_CLOEXEC'
  | 'SOCK_STREAM' | 'SOCK_DGRAM' | 'SOCK_SEQPACKET' | 'SOCK_RAW' | 'SOCK_NONBLOCK' | 'SOCK_CLOEXEC'
  | 'O_RDONLY' | 'O_WRONLY' | 'O_RDWR' | 'O_CREAT' | 'O_EXCL' | 'O_NOCTTY' | 'O_TRUNC' | 'O_APPEND' | 'O_NONBLOCK'
  | 'O_DSYNC' | 'O_SYNC' | 'O_DIRECT' | 'O_DIRECTORY' | 'O_NOFOLLOW' | 'O_NOATIME' | 'O_CLOEXEC';

export interface NativeConstants extends Readonly<Record<FlagConstant, number>> {
  /** Buffers one readv/writev/sendmsg/recvmsg takes at most (1024). */
  IOV_MAX: number;
  /** fds one SCM_RIGHTS message carries at most (253). */
  SCM_MAX_FD: number;
  /** Bytes of a Unix socket path (107: sun_path keeps its NUL). */
  UNIX_PATH_MAX: number;
  /** Bytes of an abstract socket name, its leading '\0' included (108). */
  UNIX_ABSTRACT_MAX: number;
  /** sysconf(_SC_PAGESIZE): mmap offsets are a multiple of it. */
  PAGE_SIZE: number;
  /** SQ entries one io_uring may have at most (32768). */
  IORING_MAX_ENTRIES: number;
}

export type SocketType = 'stream' | 'dgram' | 'seqpacket';
/** AF_UNIX, AF_INET, AF_INET6. */
export type SocketFamily = 'unix' | 'inet' | 'inet6';

/** An IP address as bind, connect and sendmsg's `to` take it. host: a numeric IPv4 or IPv6
 * address ('fe80::1%eth0' with a scope); a name needs dns.lookup first. Left out: the socket
 * family's wildcard for bind ('0.0.0.0', '::'), its loopback otherwise ('127.0.0.1', '::1').
 * port: 0 to 65535; bind's is 0 (any free port) when left out. */
export interface InetAddress {
  host?: string;
  port?: number;
}

/** A socket address as the calls take it: a Unix socket path (a string; '\0'-prefixed: an
 * abstract name) or an IP address. */
export type SocketAddress = string | InetAddress;

/** An IP socket's address as getsockname, getpeername and recvmsg's `from` give it, the shape
 * of node:net's address(). */
export interface AddressInfo {
  address: string;
  family: 'IPv4' | 'IPv6';
  port: number;
}

/** The options setsockopt and getsockopt take, by name, with their value's type. getsockopt
 * gives what the kernel holds: SO_RCVBUF and SO_SNDBUF come back doubled (socket(7)). */
export interface SocketOptions {
  SO_REUSEADDR: boolean;
  SO_REUSEPORT: boolean;
  SO_KEEPALIVE: boolean;
  SO_BROADCAST: boolean;
  TCP_NODELAY: boolean;
  IPV6_V6ONLY: boolean;
  SO_RCVBUF: number;
  SO_SNDBUF: number;
  /** Seconds close() waits for unsent data; -1: off (the default); 0: close() resets the
   * connection (RST), as net.Socket's resetAndDestroy(). */
  SO_LINGER: number;
}

/** shmOpen's flags: fs's flag strings ('r' read, 'r+' read and write, 'w+' create or truncate,
 * 'wx+' create, failing when it exists), or O_* bits (constants) as a number. */
export type ShmFlags = 'r' | 'r+' | 'w+' | 'wx+' | 'xw+' | number;

export interface Credentials {
  pid: number;
  uid: number;
  gid: number;
}

export interface SendOptions {
  /** fds to pass (SCM_RIGHTS, Unix-domain sockets), at most SCM_MAX_FD. */
  fds?: number[];
  /** Where an unconnected datagram goes: a Unix socket path, or a UDP { host, port }. */
  to?: SocketAddress;
  /** Attach this process's SCM_CREDENTIALS (Unix-domain sockets). */
  credentials?: boolean;
}

export interface RecvOptions {
  /** How many fds the caller accepts (default 0). More arriving: all are closed, fdsTruncated. */
  maxFds?: number;
  /** Size the control buffer for this many fds plus one SCM_CREDENTIALS (default SCM_MAX_FD, so
   * that fds beyond maxFds are seen and closed here). A smaller value lets the kernel cut the control data
   * (MSG_CTRUNC; it closes what it cut): for tests of that path. */
  controlFds?: number;
}

export interface RecvResult {
  /** Bytes of payload received (for a truncated datagram: what fit). */
  bytesRead: number;
  /** Received fds, each close-on-exec and owned by the caller. Empty when fdsTruncated. */
  fds: number[];
  /** True when anything was cut: the payload (MSG_TRUNC) or the fds. */
  truncated: boolean;
  /** The datagram was longer than the buffers (MSG_TRUNC). */
  dataTruncated: boolean;
  /** Control data was cut (MSG_CTRUNC) or more than maxFds fds came: every received fd was closed. */
  fdsTruncated: boolean;
  /** Sender credentials (SCM_CREDENTIALS), when SO_PASSCRED is on. */
  credentials?: Credentials;
  /** Sender address of a datagram, when it has one: a Unix path ('\0'-prefixed when
   * abstract), or an IP socket's { address, family, port }. */
  from?: string | AddressInfo;
  /** 0 bytes on a stream socket, or on a seqpacket socket whose peer has shut down: the peer
   * closed. (A zero-length seqpacket message from a live peer is not eof.) */
  eof: boolean;
}

const require = createRequire(import.meta.url);

/** How to build the addon from source on Debian, named in every error about a missing addon. */
const buildHint = 'build it from source with: npm rebuild iolab (needs: apt-get install g++ make python3 liburing-dev libaio-dev systemtap-sdt-dev)';

/** The addon file: the sanitized build under IOLAB_ASAN=1; else one built here (build/Release),
 * else the package's prebuilt one for this platform (prebuilds/<platform>-<arch>/, glibc). */
export function addonPath(): string {
  if (process.platform !== 'linux') {
    throw Object.assign(new Error(`iolab needs Linux (its calls are Linux's: io_uring, SCM_RIGHTS, memfd); this is ${process.platform}`), { code: 'ERR_IOLAB_PLATFORM' });
  }
  if (process.env.IOLAB_ASAN === '1') {
    const path = join(projectRoot, 'build-asan/build/Release/iolab.node');
    if (!existsSync(path)) throw Object.assign(new Error(`the sanitized addon is not built (${path} is missing); run: npm run build:asan`), { code: 'ERR_IOLAB_NOT_BUILT' });
    return path;
  }
  try {
    return (require('node-gyp-build') as { path(dir: string): string }).path(projectRoot);
  } catch {
    throw Object.assign(new Error(`no iolab addon was built and no prebuilt one fits ${process.platform}-${process.arch}; ${buildHint}`), { code: 'ERR_IOLAB_NOT_BUILT' });
  }
}

function loadAddon(): NativeAddon {
  const path = addonPath();
  try {
    return require(path) as NativeAddon;
  } catch (err) {
    // a prebuilt addon made for glibc fails here on musl, or on a glibc older than its build's
    const why = err instanceof Error ? err.message.split('\n')[0] : String(err);
    throw Object.assign(new Error(`the iolab addon ${path} does not load here (${why}); ${buildHint}`), { code: 'ERR_IOLAB_NOT_BUILT' });
  }
}

/** The raw addon: private to iolab. The public API (src/index.ts) is defined over it. */
export const native: NativeAddon = loadAddon();

/** recvmsg's result (sync and Ring). Made by the addon through this constructor: one call into
 * JS that V8 optimizes, cheaper than setting each property from C++. fds: undefined (none), the
 * one fd, or an array; flags: 1 dataTruncated, 2 fdsTruncated, 4 eof. */
export class Received implements RecvResult {
  bytesRead: number;
  fds: number[];
  truncated: boolean;
  dataTruncated: boolean;
  fdsTruncated: boolean;
  credentials?: Credentials;
  from?: string | AddressInfo;
  eof: boolean;
  constructor(bytesRead: number, fds: number | number[] | undefined, flags: number, credentials: Credentials | undefined, from: string | AddressInfo | undefined) {
    this.bytesRead = bytesRead;
    this.fds = fds === undefined ? [] : typeof fds === 'number' ? [fds] : fds;
    this.truncated = (flags & 3) !== 0;
    this.dataTruncated = (flags & 1) !== 0;
    this.fdsTruncated = (flags & 2) !== 0;
    if (credentials !== undefined) this.credentials = credentials;
    if (from !== undefined) this.from = from;
    this.eof = (flags & 4) !== 0;
  }
}
native.setRecvResultClass(Received);

/** What the addon holds and has not released (rings, ops in flight, held buffers, mappings, fds
 * it owns, native jobs and servers): every counter is zero once everything was released. */
export const liveObjects: () => LiveObjects = native.liveObjects;

/** The addon's limits (IOV_MAX, SCM_MAX_FD, UNIX_PATH_MAX, PAGE_SIZE...) and the flag bits
 * the calls take as numbers (MSG_*, SOCK_*, O_*). */
export const constants: NativeConstants = native.constants;

/** True when err is a syscall error thrown by the addon (or by Node's fs) with a code. */
export function isErrnoException(err: unknown): err is ErrnoException {
  return err instanceof Error && typeof (err as ErrnoException).code === 'string' &&
    typeof (err as ErrnoException).errno === 'number';
}
