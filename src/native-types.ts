// The types of the addon's subsystem exports (storage benchmark, echo suite, bench ipc): what
// src/native.ts's NativeAddon takes and returns for them. Types only; src/native.ts loads the
// addon and re-exports these.
export type IpcMode = 'throughput' | 'pingpong';

export interface IpcCell {
  messageBytes: number;
  durationMs: number;
  /** Run at least this many messages (round trips) even past durationMs (default 1). */
  minMessages?: number;
  /** Test knob: the sender changes one byte of this message (0-based). */
  faultMessage?: number;
  /** ... by sending the previous message's stamps in it, instead of changing one byte. */
  faultStale?: boolean;
  /** The receiver compares every byte instead of the sampled set. */
  checkFull?: boolean;
}

export interface IpcCellResult {
  /** Throughput: messages delivered and checked; pingpong: round trips. */
  messages: number;
  elapsedNs: number;
  /** Pingpong only: round-trip percentiles. */
  p50Ns?: number;
  p99Ns?: number;
  p999Ns?: number;
  /** Pingpong only: the sender's checks of the replies, all round trips together (left out of
   * the round-trip times). */
  checkNs?: number;
}

export interface IpcJob<T> {
  /** Asks the C loop to end; `done` then rejects with ERR_IOLAB_IPC_STOPPED. Harmless once done. */
  stop(): void;
  done: Promise<T>;
}

export type * from './native-bench-types.js';

export interface EchoServerStats {
  /** Connections accepted and served. */
  connections: number;
  /** Connections accepted and closed at once because of maxConns. */
  refused: number;
  bytesEchoed: number;
  peakConnections: number;
  /** uring: recvs cancelled because the connection's backlog was full (re-armed once drained). */
  recvPauses?: number;
  /** uring: recvs that ended with ENOBUFS because the provided buffer ring ran dry. */
  bufferWaits?: number;
  /** Connections closed because they moved no byte for the idle timeout. */
  idleClosed: number;
  /** Accept failures (EMFILE and the like) after which accepting paused. */
  acceptPauses: number;
  /** How the engine was set up (io_uring flags accepted, buffer sizes). */
  setup: string;
  /** uring: each kernel feature the server probed at start, and whether it took it. */
  features?: Partial<Record<EchoUringFeature, EchoFeatureState>>;
}

/** The uring server's probed features (docs/echo.md: what each buys, with its A/B). */
export type EchoUringFeature = 'noSqArray' | 'registeredRingFd' | 'directDescriptors' | 'recvBundle' | 'incrementalBuffers';

export interface EchoFeatureState {
  /** In use by this server. */
  accepted: boolean;
  /** Why not: refused by the kernel (with errno), not offered by it (no feature flag), turned
   * off, or supported but not used. */
  reason?: string;
  /** The kernel's refusal, e.g. 'EINVAL'. */
  errno?: string;
}

export interface EchoNativeServerOptions {
  /** Numeric IPv4/IPv6 address. */
  host: string;
  port: number;
  /** Connections beyond this many at once are accepted and closed at once (0: no limit). */
  maxConns?: number;
  /** uring: provided buffers, a power of two up to 32768 (default 4096). */
  buffers?: number;
  /** Close a connection that moved no byte for this long (0: never). */
  idleTimeoutMs?: number;
  /** uring: features not to try, as if the kernel refused them (tests, A/B runs). */
  uringFeaturesOff?: EchoUringFeature[];
}

export interface EchoServerHandle {
  /** The port actually bound (port 0 picks one). */
  port: number;
  /** Asks the server to stop; harmless after it has. */
  stop(): void;
  done: Promise<EchoServerStats>;
}

export interface EchoLoadOptions {
  /** Numeric IPv4/IPv6 address. */
  host: string;
  port: number;
  clients?: number;
  /** Bytes per message. */
  length?: number;
  durationMs?: number;
  /** After the duration, how long echoes still in flight may take (then: timeouts). */
  graceMs?: number;
  /** epoll/uring mode: worker threads (default 4). */
  threads?: number;
  /** 'epoll': the generator; 'uring': the generator on io_uring (less CPU per message);
   * 'threads': one blocking thread per connection (the reference). */
  mode?: 'epoll' | 'uring' | 'threads';
  /** The server's pid: its CPU time over the window comes back as serverCpuNs. */
  cpuPid?: number;
}

export interface EchoLoadResult {
  requests: number;
  responses: number;
  bytes: number;
  connected: number;
  errors: { connect: number; reset: number; shortEcho: number; mismatch: number; timeout: number };
  /** Why the first connect failed (a positive errno; 0 when none did). */
  connectErrno: number;
  /** stop() ended the window before the duration was up. */
  stoppedEarly: boolean;
  /** The measured window: from every client connected until the last thread stopped sending
   * and had its last echo (echoes that never came do not stretch it). */
  elapsedNs: number;
  /** CPU time the client's threads used during the window (not connecting or closing). */
  cpuNs: number;
  /** With cpuPid: that process's CPU time during the window. */
  serverCpuNs?: number;
  latencyNs: { p50: number; p99: number; p999: number; max: number };
}

export interface EchoLoadHandle {
  /** Ends the run early (results so far are reported). */
  stop(): void;
  done: Promise<EchoLoadResult>;
}

/** The addon file this process loads (the sanitized build under IOLAB_ASAN=1). */

/** One side of a shared-memory channel (native/channel_binding.cc over native/channel/): what
 * src/ring/channel.ts moves messages with. */
export interface NativeChannelEnd {
  /** The whole region (header and both rings) as an ArrayBuffer; detached by free(). */
  readonly region: ArrayBuffer;
  /** This side's copy of the socket: a byte arriving on it wakes this side, its end says the
   * other side is gone (receive on it to wait). */
  readonly socket: number;
  /** The creator's memfd, to pass to the joining side (closed by passed()). */
  readonly memfd: number;
  readonly capacity: number;
  readonly maxMessageBytes: number;
  /** Copies one message (a view, or an Array of views sent as one) in: false when it does not
   * fit now (nothing written). RangeError above maxMessageBytes; EFAULT when a view faults (a
   * mapping whose file shrank); ERR_CHANNEL_CLOSED when the other side has closed;
   * ERR_CHANNEL_PROTOCOL when the reader's tail is no reader's. */
  send(message: unknown): boolean;
  /** Copies messages[from], messages[from + 1]... in, in order, until one does not fit now, and
   * publishes them at once: how many. A message that cannot go (as send() throws) throws once
   * those before it are published, the error's `sent` their count. */
  sendMany(messages: unknown, from: number): number;
  /** Takes at most max messages at once, each as [offset, length] in out (a Uint32Array of
   * 2 * max): with a pool, copied into it from byte `at` on (each at a multiple of 8) while they
   * fit and let go of in the queue, offsets into the pool; with null, left in the queue until the
   * next take, offsets into region. The count (> 0); else 0 none there, -1 the other side closed
   * and every message was taken, -2 the queue holds what no writer makes, -3 the next message
   * does not fit in the pool's room (its length in out[1]). */
  take(pool: ArrayBuffer | null, at: number, max: number, out: Uint32Array): number;
  /** Sets this side's waiting flags (for a message; for room for a message of pendingBytes)
   * and looks again: true when it should sleep (receive on socket). */
  prepareSleep(wantMessage: boolean, wantRoom: boolean, pendingBytes: number): boolean;
  /** Spins up to ns nanoseconds (no syscall) for a message (wantMessage) or room for a message
   * of pendingBytes (wantRoom): true when it came. */
  spin(wantMessage: boolean, wantRoom: boolean, pendingBytes: number, ns: number): boolean;
  /** Clears this side's waiting flags after a wake-up. */
  woken(): void;
  /** Whether a message is there that next() has not handed out. */
  hasUnread(): boolean;
  /** Whether the other side has marked the channel closed. */
  peerClosed(): boolean;
  /** A pidfd of the other side's process pid (this end's, closed by free()): readable once it
   * has ended; -1 when it has ended already; -2 when pidfd_open is refused here. The same fd on
   * a second call. */
  watchPeer(pid: number): number;
  /** Sends the other side one wake-up byte. */
  wake(): void;
  /** Marks this side closed and wakes the other. */
  markClosed(): void;
  /** Unmaps (the region detached first) and closes the fds. */
  free(): void;
  /** The creator's memfd was passed: its copy here is closed. */
  passed(): void;
}
