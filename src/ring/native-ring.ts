// The addon's ring object (native/ring/js.cc) as src/ring/ring.ts and src/ring/batch.ts call it:
// private, as the rest of the addon. readvOne/writevOne take the one buffer of the common case
// (reading a list from C++ costs three calls back into JS per op); the batches' flat forms take
// every view in one Array and the fds and counts in Int32Arrays, and return a packed result, so
// that no property is read or set from C++ per message. The object forms (sendmsgBatch,
// recvmsgBatch) check everything and say what is wrong: what does not have the expected shape
// goes there. armOp/cancelOps carry a method's signal and timeout (op-options.ts).
import type { Credentials, RecvResult } from '../native.js';
import type { Armable } from './op-options.js';
import type { NativeStreamMethods } from './stream.js';

/** Which setup flags the kernel accepted (COOP_TASKRUN where it can; deferTaskrun stays false: docs/ring.md). */
export interface RingFeatures {
  deferTaskrun: boolean;
  singleIssuer: boolean;
  coopTaskrun: boolean;
  taskrunFlag: boolean;
  submitAll: boolean;
  sqpoll: boolean;
  sqEntries: number;
  cqEntries: number;
}

/** Counters for tests and benchmarks. */
export interface RingStats {
  /** io_uring_submit calls (each one io_uring_enter at most). */
  submitCalls: number;
  /** SQEs the kernel took. */
  sqesSubmitted: number;
  /** CQEs handled. */
  cqesReaped: number;
  /** Ops that waited in the native backlog because the SQ was full. */
  overflowQueued: number;
  /** Times the CQ had overflowed (kernel-side backlog) and was flushed. */
  cqOverflows: number;
  /** Cancels queued one per op by close() or env teardown, where the kernel refused
   * IORING_ASYNC_CANCEL_ANY (kernels before 5.19); 0 where one cancel took them all. */
  cancelOps: number;
  /** Stream recvs that ended with ENOBUFS: the buffer ring was empty (each waits for a buffer
   * to come back). */
  recvNoBuffers: number;
  /** Streams that took the slot of a finished stream (its events all handed out first). */
  streamSlotsReused: number;
  /** Buffers given to `stream.send` whose bytes were copied into the stream's queue (a send
   * was ahead of them, or the socket took only part) and that went back to the ring at once. */
  streamSendsCopied: number;
  /** Writes the socket took, wholly or in part, inside stream.write() (no SQE for those bytes). */
  streamSendsDirect: number;
}

export type Packed = [Float64Array, ({ credentials?: Credentials; from?: string } | undefined)[] | undefined];
export type Position = number | bigint | null | undefined;

export interface NativeRing extends NativeStreamMethods, Armable {
  readonly features: RingFeatures;
  readonly stats: RingStats;
  readonly closed: boolean;
  readonly inFlight: number;
  nop(): Promise<void>;
  read(fd: number, buffer: ArrayBufferView, position: Position): Promise<number>;
  write(fd: number, buffer: ArrayBufferView, position: Position): Promise<number>;
  readv(fd: number, buffers: unknown, position: Position): Promise<number>;
  writev(fd: number, buffers: unknown, position: Position): Promise<number>;
  readvOne(fd: number, buffer: unknown, position: Position): Promise<number>;
  writevOne(fd: number, buffer: unknown, position: Position): Promise<number>;
  fsync(fd: number, options: unknown): Promise<void>;
  /** Internal: resolves with the events once fd is readable (POLL_ADD, POLLIN). */
  pollIn(fd: number): Promise<number>;
  sendmsg(fd: number, buffers: unknown, options: unknown): Promise<number>;
  recvmsg(fd: number, buffers: unknown, options: unknown): Promise<RecvResult>;
  sendmsgBatch(fd: number, messages: unknown, options: unknown): Promise<number[]>;
  recvmsgBatch(fd: number, buffers: unknown, options: unknown): Promise<RecvResult[]>;
  sendmsgBatchFlat(fd: number, views: unknown[], viewCounts: Int32Array, fds: Int32Array, fdCounts: Int32Array, credentials: unknown): Promise<Packed>;
  recvmsgBatchFlat(fd: number, views: unknown[], viewCounts: Int32Array, maxFds: unknown, controlFds: unknown): Promise<Packed>;
  closeFds(fds: unknown): Promise<void>;
  readvBatch(fd: number, requests: unknown): Promise<Int32Array>;
  readvBatchFlat(fd: number, views: unknown[], viewCounts: Int32Array | undefined, positions: Float64Array, count: number, ...spread: unknown[]): Promise<Int32Array>;
  accept(fd: number): Promise<number>;
  connect(fd: number, address: unknown): Promise<void>;
  recv(fd: number, buffer: ArrayBufferView, flags: number | undefined): Promise<number>;
  send(fd: number, buffer: ArrayBufferView, flags: number | undefined): Promise<number>;
  closeFd(fd: number): Promise<void>;
  socket(family: unknown, type: unknown): Promise<number>;
  cancelFd(fd: number): Promise<number>;
  submit(): void;
  close(): Promise<void>;
}
