// The Ring's batches as src/ring/ring.ts offers them, over the addon's flat forms (native-ring.ts):
// each request's and message's properties are read once here (a getter may answer differently
// the second time), the views gathered into one Array, the counts and fds into typed arrays;
// what does not have the expected shape goes to the addon's object form, which names what is
// wrong. The signal and timeout go with the one native call (op-options.ts), after every
// argument read.
import { Received, type RecvResult } from '../native.js';
import type { NativeRing } from './native-ring.js';
import { withOptions, type OpOptions } from './op-options.js';

/** One read of a readvBatch: IORING_OP_READV into `buffers` at `position` (omitted, null or -1:
 * the file position). */
export interface ReadvRequest {
  buffers: ArrayBufferView[];
  position?: number | bigint | null;
}

/** The rejection of a readvBatch in which an op failed: that op's error (an ErrnoException, or
 * RingClosedError, AbortError...) with `index`, its place, and `results`, each op's bytes or
 * Error. Every read that succeeded has been copied into its buffers. */
export interface ReadvBatchError extends Error {
  code: string;
  errno?: number;
  syscall?: string;
  index: number;
  results: (number | Error)[];
}

/** readvBatch's scratch arrays, reused from call to call (the addon copies them). */
export interface ReadvScratch {
  positions: Float64Array | undefined;
  viewCounts: Int32Array | undefined;
}

// A plain loop: cheaper than Array.from's iterator, and than setting elements from C++.
function toNumbers(bytes: Int32Array): number[] {
  const out: number[] = [];
  for (let i = 0; i < bytes.length; i++) out.push(bytes[i]);
  return out;
}

/** An fd as the addon takes one: an integer in [0, 2^31-1]. */
export function isFdNumber(f: unknown): f is number {
  return typeof f === 'number' && (f | 0) === f && f >= 0;
}

function isOptionsObject(options: unknown): boolean {
  return options === undefined || (options !== null && typeof options === 'object');
}

export function sendmsgBatch(ring: NativeRing, fd: number, messages: { buffers: ArrayBufferView[]; fds?: number[] }[], options: ({ credentials?: boolean } & OpOptions) | undefined): Promise<number[]> {
  const objectForm = () => withOptions(ring, options, () => ring.sendmsgBatch(fd, messages, options));
  if (!Array.isArray(messages) || !isOptionsObject(options)) return objectForm();
  const n = messages.length;
  const views: unknown[] = [];
  const fds: number[] = [];
  const viewCounts = new Int32Array(n);
  const fdCounts = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const m = messages[i] as { buffers?: unknown; fds?: unknown } | null;
    if (m === null || typeof m !== 'object') return objectForm();
    const list = m.buffers;
    const passed = m.fds;
    if (!Array.isArray(list) || (passed !== undefined && !Array.isArray(passed))) return objectForm();
    const count = list.length;
    for (let k = 0; k < count; k++) views.push(list[k]);
    viewCounts[i] = count;
    if (passed !== undefined) {
      const nfds = passed.length;
      for (let k = 0; k < nfds; k++) {
        const f: unknown = passed[k];
        if (!isFdNumber(f)) return objectForm(); // anything but an fd number gets the object form's error
        fds.push(f);
      }
      fdCounts[i] = nfds;
    }
  }
  const credentials = options?.credentials;
  const packedFds = new Int32Array(fds);
  return withOptions(ring, options, () => ring.sendmsgBatchFlat(fd, views, viewCounts, packedFds, fdCounts, credentials)).then(([bytes]) => Array.from(bytes));
}

export function recvmsgBatch(ring: NativeRing, fd: number, buffers: ArrayBufferView[][], options: ({ maxFds?: number; controlFds?: number } & OpOptions) | undefined): Promise<RecvResult[]> {
  const objectForm = () => withOptions(ring, options, () => ring.recvmsgBatch(fd, buffers, options));
  if (!Array.isArray(buffers) || !isOptionsObject(options)) return objectForm();
  const n = buffers.length;
  const views: unknown[] = [];
  const viewCounts = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const list = buffers[i];
    if (!Array.isArray(list)) return objectForm();
    const count = list.length;
    for (let k = 0; k < count; k++) views.push(list[k]);
    viewCounts[i] = count;
  }
  const maxFds = options?.maxFds;
  const controlFds = options?.controlFds;
  const stride = 3 + (typeof maxFds === 'number' ? maxFds : 0);
  return withOptions(ring, options, () => ring.recvmsgBatchFlat(fd, views, viewCounts, maxFds, controlFds)).then(([numbers, extras]) => {
    const out: RecvResult[] = new Array(n);
    for (let i = 0, at = 0; i < out.length; i++, at += stride) {
      const count = numbers[at + 2];
      const fds = count === 0 ? [] : count === 1 ? [numbers[at + 3]] : Array.from(numbers.subarray(at + 3, at + 3 + count));
      const extra = extras?.[i];
      out[i] = new Received(numbers[at], fds, numbers[at + 1], extra?.credentials, extra?.from);
    }
    return out;
  });
}

export function readvBatch(ring: NativeRing, scratch: ReadvScratch, fd: number, requests: ReadvRequest[], options: OpOptions | undefined): Promise<number[]> {
  const objectForm = () => withOptions(ring, options, () => ring.readvBatch(fd, requests)).then(toNumbers);
  if (!Array.isArray(requests)) return objectForm();
  const n = requests.length;
  // The scratch arrays are this call's until the addon has copied them: a getter run below
  // that calls readvBatch again finds none and makes its own.
  let positions = scratch.positions;
  let viewCounts = scratch.viewCounts;
  scratch.positions = scratch.viewCounts = undefined;
  if (positions === undefined || viewCounts === undefined || positions.length < n) {
    positions = new Float64Array(Math.max(n, 32));
    viewCounts = new Int32Array(positions.length);
  }
  try {
    const views: unknown[] = [];
    let oneEach = true;
    for (let i = 0; i < n; i++) {
      const r = requests[i] as { buffers?: unknown; position?: unknown } | null;
      if (r === null || typeof r !== 'object') return objectForm();
      const list = r.buffers;
      const p = r.position;
      // anything else (a bigint position, no buffers array) gets the object form's checks
      if (!Array.isArray(list) || (typeof p !== 'number' && p !== undefined && p !== null)) return objectForm();
      positions[i] = typeof p === 'number' ? p : -1;
      const count = list.length;
      for (let k = 0; k < count; k++) views.push(list[k]);
      viewCounts[i] = count;
      if (count !== 1) oneEach = false;
    }
    const counts = oneEach ? undefined : viewCounts;
    const at = positions;
    // a small batch's views also as arguments: the addon gets them in one call, not one read each
    const flat = options !== undefined
      ? withOptions(ring, options, () => (views.length <= 64 ? ring.readvBatchFlat(fd, views, counts, at, n, ...views) : ring.readvBatchFlat(fd, views, counts, at, n)))
      : views.length <= 64 ? ring.readvBatchFlat(fd, views, counts, at, n, ...views) : ring.readvBatchFlat(fd, views, counts, at, n);
    return flat.then(toNumbers);
  } finally {
    scratch.positions = positions;
    scratch.viewCounts = viewCounts;
  }
}
