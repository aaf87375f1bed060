// Argument objects that run JS while a Ring method reads them, for the model-based test: an
// array element or an option behind a getter, and a `then` on the prototype of the values a
// recvmsg resolves with (looked up when the addon settles its Promise). Each runs its action
// once; the action re-enters the Ring (world.reenter), detaches or shrinks one of the op's own
// views, or calls the same method again.
import { resizableBytes } from '../resizable.js';
import { coverage, undetachable, type Reentry, type World } from './world.js';

export type AdversaryAction = Reentry | 'detachOwn' | 'shrinkOwn' | 'callAgain';
export interface Adversary {
  where: 'element' | 'option' | 'then';
  action: AdversaryAction;
}

/** The views of a read in flight, as the model sees them: their lengths when made, so that
 * what a detached or shrunk view did not get can be counted. */
export interface OpViews {
  views: ArrayBufferView[];
  lengths: number[];
  /** A getter detached or shrank one of them while the method read its arguments: whether
   * the method took that view's length before or after is its own affair, so what the read
   * shows is not checked, only how many bytes it took. */
  touched?: boolean;
}

export type Memory = 'heap' | 'shared' | 'resizable' | 'mapped' | 'readOnlyMapped';

/** Views of `sizes` bytes in one kind of memory; `map` carves them out of the world's mapping
 * of a memfd (read-write, or read-only: a store there is a SIGSEGV). */
export function makeViews(sizes: number[], memory: Memory, map?: (n: number, writable: boolean) => Uint8Array): OpViews {
  const views = sizes.map((n): ArrayBufferView => {
    if (memory === 'shared') return new Uint8Array(new SharedArrayBuffer(n));
    if (memory === 'resizable') return resizableBytes(n);
    if ((memory === 'mapped' || memory === 'readOnlyMapped') && map !== undefined) return map(n, memory === 'mapped');
    return Buffer.alloc(n);
  });
  return { views, lengths: [...sizes] };
}

/** Detaches a view's memory, as a transfer to another thread does. False when it cannot be (a
 * SharedArrayBuffer, the world's mappings, already detached). */
export function detach(view: ArrayBufferView): boolean {
  const buffer = view.buffer;
  if (!(buffer instanceof ArrayBuffer) || undetachable.has(buffer) || buffer.byteLength === 0) return false;
  structuredClone(buffer, { transfer: [buffer] });
  return true;
}

/** Shrinks a resizable view's memory to half. */
export function shrink(view: ArrayBufferView): boolean {
  const buffer = view.buffer as ArrayBuffer & { resizable?: boolean; resize?: (n: number) => void };
  if (buffer.resizable !== true || buffer.resize === undefined) return false;
  buffer.resize(Math.floor(buffer.byteLength / 2));
  return true;
}

/** The action, ready to run once: `own` are the op's views, `again` the same method called
 * again on a free target. */
export function once(world: World, adversary: Adversary | undefined, own: OpViews | undefined, again: () => void, where: string): () => void {
  let done = adversary === undefined;
  return () => {
    if (done) return;
    done = true;
    coverage.reentered++;
    const { action } = adversary!;
    if (action === 'detachOwn' || action === 'shrinkOwn') {
      const first = own?.views[0];
      if (first === undefined) return world.reenter(action === 'detachOwn' ? 'detachOther' : 'shrinkOther', where);
      own!.touched = true;
      if (action === 'detachOwn') detach(first);
      else shrink(first);
    } else if (action === 'callAgain') {
      again();
    } else {
      world.reenter(action, where);
    }
  };
}

/** A copy of `list` whose last element is read through a getter that runs `fire` first. */
export function withElementGetter<T>(list: T[], fire: () => void): T[] {
  const out = [...list];
  if (out.length === 0) return out;
  const last = out[out.length - 1];
  Object.defineProperty(out, out.length - 1, { get: () => { fire(); return last; }, enumerable: true, configurable: true });
  return out;
}

/** An options object whose `key` is read through a getter that runs `fire` first. */
export function withOptionGetter<T extends object>(options: T, key: keyof T, fire: () => void): T {
  const value = options[key];
  const out = { ...options };
  Object.defineProperty(out, key, { get: () => { fire(); return value; }, enumerable: true, configurable: true });
  return out;
}

/** A `then` getter on `proto` that runs `fire` the first time a value of it is resolved, then
 * takes itself away (it answers undefined: not a thenable). */
export function armThen(proto: object, fire: () => void): void {
  Object.defineProperty(proto, 'then', {
    configurable: true,
    get() {
      delete (proto as { then?: unknown }).then;
      fire();
      return undefined;
    },
  });
}
