// fio's block size forms: `bs=4k`; `bs=4k,8k` (reads 4k, writes 8k: fio's read,write[,trim]
// list); `bsrange=1k-4k` (a range: each I/O's length a multiple of the smallest; fio 3.33 reads
// `bs=1k-4k` as 1k, and so does iolab);
// bssplit (sizes by their share of the I/Os, reads,writes). A read,write pair is the size of the
// direction the job moves (a job of both moves each direction at its own). fio's other
// per-direction values (rate, rate_iops), io_submit_mode, sync, overwrite and flow are read here too.
import { UserError } from '../cli-util.js';
import { asCommanderError, parseWholeNumber } from '../numbers.js';

/** A block size as written: one size, a range (fio's bs=a-b, bsrange), or one per direction. */
export type BlockSizes = number | { text: string; min: number; max: number } | { text: string; read: number; write: number };

const sizeRule = { min: 1, max: 2 ** 30, size: true } as const;

/** --bs: 4k, 4k,8k (read,write; a third, trim, must match the write's), or 1k-4k, which fio 3.33
 * reads as its first size (1k: its bs takes no range, bsrange does; what fio runs, iolab runs). */
export function parseBlockSizes(value: string): BlockSizes {
  const text = value.trim();
  const range = /^([^,-]+)-([^,-]+)$/.exec(text);
  if (range) {
    parseRange(text);  // both ends sizes, the second not below the first
    return parseWholeNumber(range[1].trim(), sizeRule);
  }
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

/** fio's bssplit as written: a split for reads and one for writes (the same unless a second
 * follows a comma), each [size, percent, ...] in fio's order. */
export interface Split { text: string; read: number[]; write: number[] }

/** The block sizes a job runs: bs (every length a multiple of it), and bsMax (fio's range,
 * bs=1k-4k, bsrange) or bssplit ([size, percent, ...]; bssplitWrite the writes' own) when the
 * length varies per I/O. */
export interface JobBlockSizes { bs: number; bsMax?: number; bssplit?: number[]; bssplitWrite?: number[] }

const sizesOf = (split: number[]) => split.filter((_, i) => i % 2 === 0);

/** A job of this rw's block sizes from its bs, bsrange and bssplit, or a refusal naming the option. */
export function jobBlockSizes(bs: BlockSizes | undefined, range: BlockSizes | undefined, split: Split | undefined,
  rw: string): JobBlockSizes | undefined {
  const reads = rw === 'read' || rw === 'randread';
  const writes = rw === 'write' || rw === 'randwrite';
  if (split !== undefined) {
    // the splits of the directions the job moves: offsets are aligned to their smallest size
    const used = reads ? [split.read] : writes ? [split.write] : [split.read, split.write];
    const sizes = used.flatMap(sizesOf);
    const min = Math.min(...sizes);
    if (sizes.some((s) => s % min !== 0)) {
      throw new UserError(`bssplit: each size a multiple of the smallest (${min}), which the offsets are aligned to; got ${sizes.join(', ')}`);
    }
    return { bs: min, bssplit: split.read, ...(split.write !== split.read ? { bssplitWrite: split.write } : {}) };
  }
  const given = range ?? bs;
  if (given === undefined) return undefined;
  if (typeof given === 'number') return { bs: given };
  const name = range !== undefined ? 'bsrange' : 'bs';
  if ('min' in given) {
    if (given.max % given.min !== 0 && given.min !== given.max) {
      throw new UserError(`${name}=${given.text}: iolab draws lengths that are multiples of ${given.min} (fio's rule for a power of 2), ` +
        `so the range ends at a multiple of it`);
    }
    return given.min === given.max ? { bs: given.min } : { bs: given.min, bsMax: given.max };
  }
  if (reads) return { bs: given.read };
  if (writes || given.read === given.write) return { bs: given.write };
  // a job of both directions: each its own length, as a split of one size per direction
  const min = Math.min(given.read, given.write);
  if (Math.max(given.read, given.write) % min !== 0) {
    throw new UserError(`${name}=${given.text}: in one ${rw} job iolab aligns every offset to the smaller size, ` +
      'so the larger must be a multiple of it');
  }
  return { bs: min, bssplit: [given.read, 100], bssplitWrite: [given.write, 100] };
}

/** The one block size of a job (testIOPS mode): a range's or split's smallest. */
export function jobBlockSize(bs: BlockSizes | undefined, range: BlockSizes | undefined, rw: string): number | undefined {
  return jobBlockSizes(bs, range, undefined, rw)?.bs;
}

/** One direction's split, 512/4:4k/67:64k/ : sizes with their percent of the I/Os, as fio reads
 * it: an empty percent shares what the others leave (each the same whole share), and what is
 * left over after that goes to the size of the largest share; the sizes in fio's order, by their
 * share, where fio's draw looks them up. */
function parseOneSplit(text: string, whole: string): number[] {
  const entries = text.split(':').map((e) => {
    const m = /^([^/]+)(?:\/(\d*))?$/.exec(e.trim());
    if (!m) throw new RangeError(`each entry is SIZE/PERCENT (4k/67), got '${e}' in '${whole}'`);
    const pct = m[2] === undefined || m[2] === '' || Number(m[2]) === 0 ? undefined : Number(m[2]);
    return { size: parseWholeNumber(m[1].trim(), sizeRule), pct };
  });
  const given = entries.reduce((s, e) => s + (e.pct ?? 0), 0);
  const open = entries.filter((e) => e.pct === undefined).length;
  if (given > 100) throw new RangeError(`the percentages of '${text}' add up to ${given}, more than 100`);
  const share = open > 0 ? Math.floor((100 - given) / open) : 0;
  const ordered = entries.map((e) => ({ size: e.size, pct: e.pct ?? share })).sort((a, b) => a.pct - b.pct);
  ordered[ordered.length - 1].pct += 100 - ordered.reduce((s, e) => s + e.pct, 0);
  if (ordered.length > 16) throw new RangeError(`'${text}' has ${ordered.length} sizes; iolab runs up to 16`);
  return ordered.flatMap((e) => [e.size, e.pct]);
}

/** fio's bssplit=4k/67:64k/ for reads and writes, or reads,writes[,trims] (2k/50:4k/50,4k/90:8k/10;
 * iolab runs no trims, so a third split is checked and runs nothing). */
export function parseSplit(value: string): Split {
  const text = value.trim();
  const [r, w, t, ...rest] = text.split(',');
  if (rest.length > 0) throw new RangeError(`expected reads[,writes[,trims]], got '${text}'`);
  if (w !== undefined && w.trim() === '') {
    throw new RangeError(`'${text}': the writes' split after the comma is empty (fio then writes at bs); give it, or leave out the comma`);
  }
  if (t !== undefined && t.trim() !== '') parseOneSplit(t, text);
  const read = parseOneSplit(r, text);
  return { text, read, write: w === undefined ? read : parseOneSplit(w, text) };
}

export const splitOption = asCommanderError(parseSplit);

/** fio's cmdprio_bssplit (libaio, io_uring): entries bs/percent[/class/level[/hint]] (without a
 * class, the engine's cmdprio_class/cmdprio/cmdprio_hint), reads,writes as bssplit's (one set for
 * both without a comma), as [ddir, bs, percent, prio (-1: the engine's), ...]; an entry of 0
 * percent says nothing (fio skips it), and a direction's entries of one size add up to at most 100. */
export function parseCmdprioSplit(value: string): { text: string; entries: number[] } {
  const text = value.trim();
  const [r, w, ...rest] = text.split(',');
  if (rest.length > 1) throw new RangeError(`expected reads[,writes[,trims]], got '${text}'`);
  const entries: number[] = [];
  const direction = (part: string, ddir: number) => {
    const total = new Map<number, number>();
    for (const e of part.split(':').filter((x) => x.trim() !== '')) {
      const f = e.trim().split('/');
      if (f.length < 1 || f.length > 5 || f.length === 3 || f.slice(1).some((x) => !/^\d*$/.test(x))) {
        throw new RangeError(`each entry is BS/PERCENT[/CLASS/LEVEL[/HINT]] (64k/25/1/1), got '${e}' in '${text}'`);
      }
      const bs = parseWholeNumber(f[0].trim(), sizeRule);
      const pct = Math.min(Number(f[1] || 0), 100);
      const [klass, level, hint] = f.slice(2).map(Number);
      if (pct === 0) continue;
      total.set(bs, (total.get(bs) ?? 0) + pct);
      if ((total.get(bs) ?? 0) > 100) throw new RangeError(`the percentages for bs ${bs} add up to more than 100 in '${text}' (fio refuses it too)`);
      const prio = klass === undefined ? -1 : (Math.min(klass, 7) << 13) | (Math.min(hint ?? 0, 1023) << 3) | Math.min(level, 7);
      entries.push(ddir, bs, pct, prio);
    }
  };
  direction(r, 0);
  direction(w ?? r, 1);
  return { text, entries };
}

export const cmdprioSplitOption = asCommanderError(parseCmdprioSplit);

/** fio's rate and rate_iops: one value for reads and writes, or `read,write[,trim]` where an
 * empty one is no cap (`rate=,500k` caps writes only); the trim one caps no I/O iolab runs. */
export interface PerDirection { text: string; read: number; write: number }

function parsePerDirection(value: string, size: boolean): PerDirection {
  const text = value.trim();
  const parts = text.split(',').map((s) => s.trim());
  const one = (s: string | undefined) => (s === undefined || s === '' ? 0 : parseWholeNumber(s, { min: 1, size }));
  if (parts.length === 1) return { text, read: one(parts[0]), write: one(parts[0]) };
  if (parts.length > 3) throw new RangeError(`expected read[,write[,trim]], got '${value}'`);
  // a trim rate is checked and caps nothing, as in fio for a job that issues no trims (fio's
  // exitwhat example's rate=300,300,300): iolab runs no trims
  one(parts[2]);
  return { text, read: one(parts[0]), write: one(parts[1]) };
}

export const rateOption = asCommanderError((v: string) => parsePerDirection(v, true));
export const rateIopsOption = asCommanderError((v: string) => parsePerDirection(v, false));

/** fio's io_submit_mode: inline (fio's default: the job thread submits) or offload (iodepth
 * submit threads, each with the job's engine, run the I/Os the job thread paces). */
export const submitModeOption = asCommanderError((v: string) => {
  if (v.trim() === 'inline' || v.trim() === 'offload') return v.trim();
  throw new RangeError(`expected inline or offload, got '${v}'`);
});

/** fio's offset: a size, or N% of the file's size (fio's start_offset_percent). */
export const offsetOption = asCommanderError((v: string): number | { percent: number } => {
  const pct = /^(\d+(?:\.\d+)?)%$/.exec(v.trim());
  if (!pct) return parseWholeNumber(v.trim(), { min: 0, size: true });
  const percent = Number(pct[1]);
  if (percent > 100) throw new RangeError(`expected a percent from 0 to 100, got '${v}'`);
  return { percent };
});

/** fio's percentages with decimals (latency_percentile=99.9): 0 to 100. */
export const percentOption = asCommanderError((v: string) => {
  const text = v.trim();
  const pct = /^\d+(\.\d+)?$/.test(text) ? Number(text) : NaN;
  if (!(pct >= 0 && pct <= 100)) throw new RangeError(`expected a percent from 0 to 100, got '${v}'`);
  return pct;
});

/** fio's verify_pattern: 0x hex bytes in the order written (0xaa555aa5), or a "quoted" string. */
export const verifyPatternOption = asCommanderError((v: string) => {
  const text = v.trim();
  const hex = /^0x([0-9a-f]+)$/i.exec(text);
  const quoted = /^"(.+)"$/s.exec(text);  // fio takes double quotes only
  const bytes = hex && hex[1].length % 2 === 0 ? Buffer.from(hex[1], 'hex') : quoted ? Buffer.from(quoted[1]) : undefined;
  if (!bytes) {
    throw new RangeError(`expected 0x and an even number of hex digits (0xaa555aa5) or a string in double quotes ("abc"), got '${v}' ` +
      '(fio\'s decimal numbers, %o and lists in a verify_pattern are not run)');
  }
  if (bytes.length > 512) throw new RangeError(`'${v}' is ${bytes.length} bytes; fio takes at most 512`);
  return bytes;
});

/** fio's exit_what: group, stonewall or all. */
export const exitWhatOption = asCommanderError((v: string) => {
  const what = v.trim();
  if (what === 'group' || what === 'stonewall' || what === 'all') return what;
  throw new RangeError(`expected group, stonewall or all, as fio, got '${v}'`);
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

/** fio's flow: a weight from -1000 to 1000 (a job whose weight is not above 0 runs free, as fio 3.33 runs its butterfly example). */
export const flowOption = asCommanderError((v: string) => {
  const n = Number(v.trim());
  if (v.trim() === '' || !Number.isInteger(n) || n < -1000 || n > 1000) throw new RangeError(`expected a whole number from -1000 to 1000, got '${v}'`);
  return n;
});
