// bench api's channel group, between threads: the queue a careful developer writes by hand on a
// SharedArrayBuffer, the channel's peer for a worker. One writer, one reader: records of a u32
// length and the bytes (4-aligned) in a ring of `capacity` bytes; a record that does not fit
// before the end leaves a marker and starts again at 0. Waiting is Atomics.waitAsync on the index
// the other side moves, and a side notifies only when the other said it waits (the reader: once
// half the ring is free).
const HEAD = 0; // bytes written, mod 2^32 (the writer's)
const TAIL = 1; // bytes read, mod 2^32 (the reader's)
const READER_WAITS = 2;
const WRITER_WAITS = 3;
const HEADER_BYTES = 16;
const WRAP = 0xffffffff;

// Atomics.waitAsync (Node 16 on; the project's TypeScript lib predates its type)
type WaitAsync = (array: Int32Array, index: number, value: number) => { async: boolean; value: Promise<unknown> | string };
const waitAsync = (Atomics as unknown as { waitAsync: WaitAsync }).waitAsync;

/** The shared memory of a ring of `capacity` bytes (a power of two). */
export function sabRingMemory(capacity: number): SharedArrayBuffer {
  return new SharedArrayBuffer(HEADER_BYTES + capacity);
}

const align = (n: number) => (n + 3) & ~3;

export class SabRingWriter {
  readonly #index: Int32Array;
  readonly #bytes: Uint8Array;
  readonly #view: DataView;
  readonly #capacity: number;

  constructor(memory: SharedArrayBuffer) {
    this.#index = new Int32Array(memory, 0, 4);
    this.#bytes = new Uint8Array(memory, HEADER_BYTES);
    this.#view = new DataView(memory, HEADER_BYTES);
    this.#capacity = this.#bytes.length;
  }

  /** Copies the message in and returns true, or false when it does not fit now. */
  trySend(message: Uint8Array): boolean {
    const need = 4 + align(message.length);
    const head = Atomics.load(this.#index, HEAD) >>> 0;
    const used = (head - (Atomics.load(this.#index, TAIL) >>> 0)) >>> 0;
    const at = head & (this.#capacity - 1);
    const tailRoom = this.#capacity - at;
    const skip = tailRoom < need ? tailRoom : 0; // the record starts again at 0
    if (used + skip + need > this.#capacity) return false;
    let write = at;
    if (skip > 0) {
      if (tailRoom >= 4) this.#view.setUint32(at, WRAP, true);
      write = 0;
    }
    this.#view.setUint32(write, message.length, true);
    this.#bytes.set(message, write + 4);
    Atomics.store(this.#index, HEAD, (head + skip + need) | 0);
    if (Atomics.load(this.#index, READER_WAITS) !== 0) Atomics.notify(this.#index, HEAD);
    return true;
  }

  /** Waits until the reader moved on, then sends. */
  async send(message: Uint8Array): Promise<void> {
    while (!this.trySend(message)) {
      const tail = Atomics.load(this.#index, TAIL);
      Atomics.store(this.#index, WRITER_WAITS, 1);
      if (!this.trySend(message)) {
        const waited = waitAsync(this.#index, TAIL, tail);
        if (waited.async) await waited.value;
        Atomics.store(this.#index, WRITER_WAITS, 0);
        continue;
      }
      Atomics.store(this.#index, WRITER_WAITS, 0);
      return;
    }
  }
}

/** Reads every record to `take` (a view valid while it runs) until `take` returns false. */
export async function sabRingRead(memory: SharedArrayBuffer, take: (message: Uint8Array) => boolean): Promise<void> {
  const index = new Int32Array(memory, 0, 4);
  const bytes = new Uint8Array(memory, HEADER_BYTES);
  const view = new DataView(memory, HEADER_BYTES);
  const capacity = bytes.length;
  let tail = Atomics.load(index, TAIL) >>> 0;
  for (;;) {
    const head = Atomics.load(index, HEAD) >>> 0;
    if (head === tail) {
      Atomics.store(index, READER_WAITS, 1);
      if ((Atomics.load(index, HEAD) >>> 0) === tail) {
        const waited = waitAsync(index, HEAD, tail | 0);
        if (waited.async) await waited.value;
      }
      Atomics.store(index, READER_WAITS, 0);
      continue;
    }
    while (tail !== head) {
      const at = tail & (capacity - 1);
      const tailRoom = capacity - at;
      if (tailRoom < 4 || view.getUint32(at, true) === WRAP) {
        tail = (tail + tailRoom) >>> 0;
        continue;
      }
      const length = view.getUint32(at, true);
      const more = take(bytes.subarray(at + 4, at + 4 + length));
      tail = (tail + 4 + align(length)) >>> 0;
      Atomics.store(index, TAIL, tail | 0);
      // a waiting writer is woken once half the ring is free, not for every record read
      if (Atomics.load(index, WRITER_WAITS) !== 0 && ((Atomics.load(index, HEAD) >>> 0) - tail) >>> 0 <= capacity / 2) Atomics.notify(index, TAIL);
      if (!more) return;
    }
  }
}
