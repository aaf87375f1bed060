// fio's block size forms: `bs=4k`; `bs=4k,8k` (reads 4k, writes 8k: fio's read,write[,trim]
// list); `bs=4k-4k` and `bsrange=4k-4k` (a range). iolab runs one block size per job: a range
// whose ends are the same is that size, and a read,write pair is the size of the direction the
// job moves; what would need a block size per I/O is refused by name. fio's other per-direction
// values (rate, rate_iops), io_submit_mode, sync and overwrite are read here too.
import { UserError } from '../cli-util.js';
import { asCommanderError, parseWholeNumber } from '../numbers.js';

/** A block size as written: one size, a range (fio's bs=a-b, bsrange), or one per direction. */
export type BlockSizes = number | { text: string; min: number; max: number } | { text: string; read: number; write: number };

const sizeRule = { min: 1, max: 2 ** 30, size: true } as const;

/** --bs: 4k, 4k,8k (read,write; a third, trim, must match the write's) or 4k-4k. */
export function parseBlockSizes(value: string): BlockSizes {
  const text = value.trim();
  const range = /^([^,-]+)-([^,-]+)$/.exec(text);
  if (range) return parseRange(text);
  if (text.includes(',')) {
    const [read, write = '', trim] = text.split(',').map((s) => s.trim());
    const r = parseWholeNumber(read, sizeRule);
    const w = write === '' ? r : parseWholeNumber(write, sizeRule);
    if (trim !== undefined && trim !== '' && parseWholeNumber(trim, sizeRule) !== w) {
      throw new RangeError(`the trim size of '${value}' (iolab runs no trims) must be the write's or empty`);
    }
    return { text, read: r, write: w };
  }
  return parseWholeNumber(text, sizeRule);
}

/** --bsrange: 4k-4k (fio's blocksize_range). */
export function parseRange(value: string): BlockSizes {
  const m = /^([^,-]+)-([^,-]+)$/.exec(value.trim());
  if (!m) throw new RangeError(`expected a range of sizes such as 4k-16k, got '${value}'`);
  const min = parseWholeNumber(m[1].trim(), sizeRule);
  const max = parseWholeNumber(m[2].trim(), sizeRule);
  if (max < min) throw new RangeError(`the range '${value}' ends below its start`);
  return { text: value.trim(), min, max };
}

export const blockSizesOption = asCommanderError(parseBlockSizes);
export const rangeOption = asCommanderError(parseRange);

/** The one block size a job of this rw runs, or a refusal naming the option. */
export function jobBlockSize(bs: BlockSizes | undefined, range: BlockSizes | undefined, rw: string): number | undefined {
  const given = range ?? bs;
  if (given === undefined || typeof given === 'number') return given;
  const name = range !== undefined ? 'bsrange' : 'bs';
  if ('min' in given) {
    if (given.min === given.max) return given.min;
    throw new UserError(`${name}=${given.text}: a range of block sizes, one drawn per I/O in fio; iolab runs one block size ` +
      `per job (a range whose ends are equal, such as ${given.text.split('-')[0]}-${given.text.split('-')[0]}, runs)`);
  }
  const reads = rw === 'read' || rw === 'randread';
  const writes = rw === 'write' || rw === 'randwrite';
  if (reads) return given.read;
  if (writes || given.read === given.write) return given.write;
  throw new UserError(`${name}=${given.text}: reads and writes of other sizes in one ${rw} job; iolab runs one block size ` +
    'per job (a read job takes the first, a write job the second)');
}

/** fio's rate and rate_iops: one value for reads and writes, or `read,write[,trim]` where an
 * empty one is no cap (`rate=,500k` caps writes only). */
export interface PerDirection { text: string; read: number; write: number }

function parsePerDirection(value: string, size: boolean): PerDirection {
  const text = value.trim();
  const parts = text.split(',').map((s) => s.trim());
  const one = (s: string | undefined) => (s === undefined || s === '' ? 0 : parseWholeNumber(s, { min: 1, size }));
  if (parts.length === 1) return { text, read: one(parts[0]), write: one(parts[0]) };
  if (parts.length > 3 || (parts[2] ?? '') !== '') {
    if (parts.length > 3) throw new RangeError(`expected read[,write[,trim]], got '${value}'`);
    throw new RangeError(`'${value}': iolab runs no trims, so a trim rate caps nothing; leave it empty`);
  }
  return { text, read: one(parts[0]), write: one(parts[1]) };
}

export const rateOption = asCommanderError((v: string) => parsePerDirection(v, true));
export const rateIopsOption = asCommanderError((v: string) => parsePerDirection(v, false));

/** fio's io_submit_mode: inline (fio's default) is how iolab always submits; offload is refused. */
export const submitModeOption = asCommanderError((v: string) => {
  if (v.trim() === 'inline') return 'inline';
  if (v.trim() === 'offload') {
    throw new RangeError('offload hands submissions to fio\'s own submit threads; iolab\'s job thread submits (inline, fio\'s default)');
  }
  throw new RangeError(`expected inline or offload, got '${v}'`);
});

/** fio's sync: 0/none, 1/sync (O_SYNC), dsync (O_DSYNC): the native job's openSync. */
export const syncModeOption = asCommanderError((v: string) => {
  const modes: Record<string, number> = { 0: 0, none: 0, 1: 1, sync: 1, dsync: 2 };
  const mode = modes[v.trim()];
  if (mode === undefined) throw new RangeError(`expected 0, none, 1, sync or dsync, as fio, got '${v}'`);
  return mode;
});

/** fio's overwrite: iolab lays out every new file whole before the job, which is overwrite=1. */
export const overwriteOption = asCommanderError((v: string) => {
  if (v.trim() === '1') return 1;
  if (v.trim() === '0') {
    throw new RangeError('0 leaves a new file unwritten before the job (fio\'s default); iolab lays out every new file ' +
      'whole first, which is overwrite=1');
  }
  throw new RangeError(`expected 0 or 1, got '${v}'`);
});
