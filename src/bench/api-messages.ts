// bench api's channel group: the messages every contender moves, and the receiver's check of
// each one, the same on every row. A message is a 4 KiB reference page repeated, with its
// sequence number (u32, little-endian) written over the first 4 bytes of every 4 KiB page and
// over its last 4 bytes. The receiver checks every stamp (a message that is stale, torn at a
// page, out of order, repeated or cut short fails) and compares the rest byte for byte: all of
// a message up to 4 KiB, and one whole page of a larger one, a different page each message, as
// `bench ipc` does (docs/ipc.md).
const pageBytes = 4096;
/** The smallest message: room for the two stamps. */
export const minMessageBytes = 8;

/** The reference page: fixed pseudo-random bytes (the same in every process). */
const reference = (() => {
  const page = new Uint8Array(pageBytes);
  let x = 0x9e3779b9;
  for (let i = 0; i < pageBytes; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    page[i] = x & 0xff;
  }
  return page;
})();

function putU32(bytes: Uint8Array, at: number, value: number): void {
  bytes[at] = value & 0xff;
  bytes[at + 1] = (value >>> 8) & 0xff;
  bytes[at + 2] = (value >>> 16) & 0xff;
  bytes[at + 3] = value >>> 24;
}

function getU32(bytes: Uint8Array, at: number): number {
  return (bytes[at] | (bytes[at + 1] << 8) | (bytes[at + 2] << 16) | (bytes[at + 3] << 24)) >>> 0;
}

/** A message buffer of `size` bytes, filled once; stamp() turns it into message `seq`. */
export function messageBuffer(size: number): Buffer {
  const buffer = Buffer.allocUnsafe(size);
  for (let at = 0; at < size; at += pageBytes) buffer.set(reference.subarray(0, Math.min(pageBytes, size - at)), at);
  return buffer;
}

/** Writes message seq's stamps into a buffer made by messageBuffer (or a copy of one). */
export function stamp(message: Uint8Array, seq: number): void {
  const size = message.length;
  for (let at = 0; at + 4 <= size; at += pageBytes) putU32(message, at, seq);
  putU32(message, size - 4, seq);
}

/** The first byte of message seq that the receiver compares beyond the stamps (a message of at
 * least 9 bytes): where the tests' IOLAB_API_FAULT changes one. */
export function comparedByte(size: number, seq: number): number {
  return (size <= pageBytes ? 0 : (seq % Math.ceil(size / pageBytes)) * pageBytes) + 4;
}

/** Why `view` is not message `seq` of `size` bytes, or undefined when it is. */
export function checkMessage(view: Uint8Array, seq: number, size: number): string | undefined {
  if (view.length !== size) return `message ${seq} is ${view.length} bytes, not ${size}`;
  for (let at = 0; at + 4 <= size; at += pageBytes) {
    const got = getU32(view, at);
    if (got !== seq) return `message ${seq} differs at byte ${at}: the stamp there is message ${got}'s`;
  }
  const last = getU32(view, size - 4);
  if (last !== seq) return `message ${seq} differs at byte ${size - 4}: the stamp there is message ${last}'s`;
  // the compared page, between its stamp and the message's last one
  const start = comparedByte(size, seq);
  const from = start - 4;
  const end = Math.min(from + pageBytes, size - 4);
  let same = true;
  if (end - start <= 256) {
    for (let i = start; i < end; i++) if (view[i] !== reference[i - from]) same = false;
  } else {
    same = Buffer.compare(view.subarray(start, end), reference.subarray(start - from, end - from)) === 0;
  }
  if (same) return undefined;
  let i = start;
  while (view[i] === reference[i - from]) i++;
  return `message ${seq} differs at byte ${i}: expected 0x${reference[i - from].toString(16)}, got 0x${view[i].toString(16)}`;
}
