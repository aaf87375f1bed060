// The cases of the Ring-vs-sync differential test and the rule that judges each: the product of
// fd kind x position x peer timing x memory x call, and whether the Ring's outcome is the sync
// call's on a twin fd (the value or errno code, what the views hold, what is left in the fd).

export type FdKind = 'file' | 'stream' | 'seqpacket' | 'pipe' | 'memfd';
export type Position = 'omitted' | 'null' | 'minus1' | number;
export type Memory = 'heap' | 'shared' | 'dataView' | 'mapped' | 'readOnlyMapped' | 'detached' | 'shrunk';
export type Call = 'read' | 'readv' | 'readvMany' | 'readvBatch' | 'readvBatchBounce' | 'recv';

export interface Case {
  id: number;
  fd: FdKind;
  position: Position;
  timing: 'now' | 'later';
  memory: Memory;
  call: Call;
  sizes: number[];
}

export const fdKinds: FdKind[] = ['file', 'stream', 'seqpacket', 'pipe', 'memfd'];
export const calls: Call[] = ['read', 'readv', 'readvMany', 'readvBatch', 'readvBatchBounce', 'recv'];
// (0 and 3: on a socket or pipe the kernel takes 0 as no position and refuses others)
const positions: Position[] = ['omitted', 'null', 'minus1', 0, 3];
const memories: Memory[] = ['heap', 'shared', 'dataView', 'mapped', 'readOnlyMapped', 'detached', 'shrunk'];

/** The whole product (recv takes no position; a file has no peer to be late). */
export function allCases(): Case[] {
  const out: Case[] = [];
  for (const call of calls) {
    for (const fd of fdKinds) {
      for (const position of call === 'recv' ? ['omitted' as const] : positions) {
        for (const timing of fd === 'file' || fd === 'memfd' ? ['now' as const] : ['now' as const, 'later' as const]) {
          for (const memory of memories) {
            const sizes = call === 'readvMany' ? [3, 5] : call.startsWith('readvBatch') ? [8, 8] : [8];
            out.push({ id: out.length, fd, position, timing, memory, call, sizes });
          }
        }
      }
    }
  }
  return out;
}

export interface Outcome {
  value?: number | number[];
  error?: string;
  results?: (number | string)[];
  threw?: string;
  views?: string[];
  left?: string;
}
export interface Sides {
  ring?: Outcome;
  sync?: Outcome;
  syncUnpositioned?: Outcome;
  syncZeroAsStream?: Outcome;
}

/** An outcome as comparable JSON: a method that threw is as one that rejected. */
function shape(o: Outcome | undefined, keepLeft = true): string {
  if (o === undefined) return 'missing';
  const { value, error, results, threw, views, left } = o;
  return JSON.stringify({ value, error: error ?? threw, results, views, left: keepLeft ? left : undefined });
}

/** Undefined when the Ring did as the sync call did; otherwise what differs. */
export function verdict(c: Case, answer: Sides | { crash: string }): string | undefined {
  if ('crash' in answer) return `the process died (${answer.crash})`;
  const sides = answer;
  const ring = sides.ring;
  if (ring === undefined) return 'no outcome';
  if (shape(ring) === shape(sides.sync)) return undefined;
  // A position on a socket or pipe: as preadv (ESPIPE), or read as a stream (all of a batch's
  // reads, or those at 0, which the kernel takes as no position).
  const others = [sides.syncUnpositioned, sides.syncZeroAsStream].filter((o) => o !== undefined);
  if (others.some((o) => shape(ring) === shape(o))) return undefined;
  // readvBatch refuses the whole batch with ESPIPE before it reads anything (docs/ring.md): the
  // sync loop's ESPIPE, with no view written and every byte still in the fd.
  const untouched = (o: Outcome | undefined) => o?.views?.map((v) => '0'.repeat(v.length));
  if (c.call.startsWith('readvBatch') && ring.error === 'ESPIPE' && ring.results === undefined && sides.sync?.error === 'ESPIPE' &&
    JSON.stringify(ring.views) === JSON.stringify(untouched(sides.sync)) && ring.left === sides.sync?.left) return undefined;
  // Into a read-only mapping: EFAULT as the sync call, the memory untouched; a Ring that went
  // through bounce memory may have taken the bytes from a stream (what is left may differ).
  const failsAlike = (o: Outcome | undefined) => shape(ring, false) === shape(o, false) && ring.error === 'EFAULT';
  if (c.memory === 'readOnlyMapped' && [sides.sync, ...others].some(failsAlike)) return undefined;
  // The Ring refuses a read into a read-only mapping before it reads (docs/ring.md): EFAULT for
  // the whole call, where the sync call fails too (EFAULT, or an error the kernel finds first),
  // no view written and every byte still in the fd (a seqpacket's sync read drops the message
  // it could not copy; the Ring, refusing first, leaves it there).
  if (c.memory === 'readOnlyMapped' && ring.error === 'EFAULT' && ring.results === undefined && sides.sync?.error !== undefined &&
    JSON.stringify(ring.views) === JSON.stringify(untouched(sides.sync)) &&
    (ring.left === sides.sync.left || (c.fd === 'seqpacket' && sides.sync.left === 'EAGAIN'))) return undefined;
  return [`the Ring: ${shape(ring)}`, `the sync call: ${shape(sides.sync)}`,
    ...(sides.syncUnpositioned === undefined ? [] : [`the sync call without the position: ${shape(sides.syncUnpositioned)}`]),
    ...(sides.syncZeroAsStream === undefined ? [] : [`the sync call without the position where it is 0: ${shape(sides.syncZeroAsStream)}`])].join('\n    ');
}

export function describeCase(c: Case): string {
  return `${c.call} of a ${c.fd} at ${String(c.position)}, ${c.timing === 'later' ? 'some bytes now, the rest later' : 'the bytes there'}, into ${c.memory} memory`;
}
