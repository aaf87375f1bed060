// The errors src/ring/stream.ts throws and hands to a stream's end(): Node's own codes and words;
// and how a handler's throw is reported.
import { getSystemErrorMap } from 'node:util';
import type { ErrnoException } from '../native.js';

/** The error of a constructor called without its token (stream.ts), as Node's internal classes throw. */
export function illegalConstructor(): TypeError {
  return Object.assign(new TypeError('Illegal constructor'), { code: 'ERR_ILLEGAL_CONSTRUCTOR' });
}

/** An errno error like the addon's (code, errno, syscall), from a CQE's -errno: Node's negative
 * errno, and E<n> for a number Node has no name for. */
export function errnoError(res: number, syscall: string): ErrnoException {
  const [code, text] = getSystemErrorMap().get(res) ?? [`E${-res}`, `unknown error ${-res}`];
  return Object.assign(new Error(`${code}: ${text}, ${syscall}`), { code, errno: res, syscall });
}

/** A buffer id that is not one of `count` (RangeError) or no number at all (TypeError). */
export function badId(id: unknown, count: number): Error {
  if (typeof id !== 'number') {
    return Object.assign(new TypeError(`The "id" argument must be of type number. Received type ${typeof id}`), { code: 'ERR_INVALID_ARG_TYPE' });
  }
  return Object.assign(new RangeError(`The value of "id" is out of range. It must be an integer >= 0 and <= ${count - 1}. Received ${id}`), { code: 'ERR_OUT_OF_RANGE' });
}

/** A handler's throw, reported as an uncaught exception on the next tick, so that whatever
 * called the handler goes on (the rest of a dispatch, the other callbacks). */
export function throwLater(err: unknown): void {
  process.nextTick(() => { throw err; });
}
