// The one number parser for every numeric option of every command: decimal whole numbers and,
// where the option is a size, fio's binary suffixes (k, m, g, t, with or without b: "4k" = "4kb"
// = 4096, "128M"). "4KiB" is refused: fio reads it as 4000 bytes. Nothing else: no hex, no
// exponents, no signs, no fractions. Limits belong to the option.
import { InvalidArgumentError } from 'commander';

export interface NumberRule {
  /** Smallest value allowed (default 0). */
  min?: number;
  /** Largest value allowed (default Number.MAX_SAFE_INTEGER). */
  max?: number;
  /** A size in bytes: accepts k/m/g/t suffixes (binary, as fio reads them). */
  size?: boolean;
  /** Why max is the limit, shown in the error ("io_uring's entry limit"). */
  maxReason?: string;
}

const units: Record<string, number> = { '': 1, k: 2 ** 10, m: 2 ** 20, g: 2 ** 30, t: 2 ** 40 };

/** What the rule accepts, as the error shows it: "a whole number from 1 to 65535". */
export function describeRule(rule: NumberRule): string {
  const min = rule.min ?? 0;
  const show = (n: number) => (rule.size ? formatSize(n) : String(n));
  const range = rule.max !== undefined ? `from ${show(min)} to ${show(rule.max)}` : `>= ${show(min)}`;
  return rule.size ? `a size ${range} (bytes; k, m, g, t suffixes)` : `a whole number ${range}`;
}

/** The value, or an Error whose message says what was expected ("expected ..., got '0x50'"). */
export function parseWholeNumber(text: string, rule: NumberRule = {}): number {
  const binary = rule.size ? /^(\d+)(([kmgt])ib)$/i.exec(text.trim()) : null;
  if (binary) {
    // fio (kb_base=1024) reads 4KiB as 4000 bytes, which few who write it mean: refused, not read either way
    const [, n, suffix, unit] = binary;
    const k = unit.toLowerCase();
    const power = Object.keys(units).indexOf(k);
    throw new RangeError(`'${text}': fio reads ${suffix} as a power of 1000 (${n}${suffix} = ${Number(n) * 1000 ** power} bytes), ` +
      `so iolab does not take it; write ${n}${k} for ${Number(n) * units[k]} bytes, or ${Number(n) * 1000 ** power}`);
  }
  const m = (rule.size ? /^(\d+)([kmgt]?)b?$/i : /^(\d+)()$/).exec(text.trim());
  const value = m ? Number(m[1]) * units[m[2].toLowerCase()] : NaN;
  const min = rule.min ?? 0;
  const max = rule.max ?? Number.MAX_SAFE_INTEGER;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    const tooLarge = m !== null && value > max;
    const why = tooLarge && rule.maxReason ? ` (${rule.maxReason})` : '';
    // A number past an option's unstated limit (the largest whole number a double holds
    // exactly) is told that limit, not just ">= min".
    throw new RangeError(`expected ${describeRule(tooLarge ? { ...rule, max } : rule)}${why}, got '${text}'`);
  }
  return value;
}

type Parser<T> = ((value: string) => T) & { rule: NumberRule; list?: boolean };

export function asCommanderError<T>(fn: (value: string) => T): (value: string) => T {
  return (value) => {
    try {
      return fn(value);
    } catch (err) {
      throw new InvalidArgumentError((err as Error).message);
    }
  };
}

/** A commander argParser for one number (`.option('--iodepth <n>', '...', numberOption({ min: 1 }))`). */
export function numberOption(rule: NumberRule = {}): Parser<number> {
  const parse = asCommanderError((value: string) => parseWholeNumber(value, rule));
  return Object.assign(parse, { rule });
}

/** A commander argParser for a comma list of numbers ("32,64,128"; "4k,64k" for sizes). */
export function numberListOption(rule: NumberRule = {}): Parser<number[]> {
  const parse = asCommanderError((value: string) => parseNumberList(value, rule));
  return Object.assign(parse, { rule, list: true });
}

export function parseNumberList(value: string, rule: NumberRule = {}): number[] {
  const parts = value.split(',').map((s) => s.trim());
  if (value.trim() === '' || parts.some((p) => p === '')) {
    throw new RangeError(`expected a comma-separated list, each ${describeRule(rule)}, got '${value}'`);
  }
  return parts.map((p) => parseWholeNumber(p, rule));
}

/**
 * Checks a value that did not come from the command line as text (a preset, a JSON job, a
 * sweep point): numbers must be whole and within the rule, strings are parsed. The error names
 * the option as a user types it ("--iodepth: expected ...").
 */
export function checkNumber(optionName: string, value: unknown, rule: NumberRule = {}): number {
  const flag = optionName.startsWith('-') ? optionName : `--${optionName}`;
  try {
    if (typeof value === 'number') return parseWholeNumber(Number.isSafeInteger(value) ? String(value) : 'NaN', rule);
    if (typeof value === 'string') return parseWholeNumber(value, rule);
    throw new RangeError(`expected ${describeRule(rule)}, got ${JSON.stringify(value) ?? String(value)}`);
  } catch (err) {
    throw new RangeError(`${flag}: ${(err as Error).message}`);
  }
}

/** fio's boolean options (direct, time_based...): 0 or 1, nothing else. */
export function boolOption(): ((value: string) => boolean) & { rule: NumberRule } {
  const parse = (value: string): boolean => {
    if (value.trim() === '0') return false;
    if (value.trim() === '1') return true;
    throw new InvalidArgumentError(`expected 0 or 1, got '${value}'`);
  };
  return Object.assign(parse, { rule: { min: 0, max: 1 } });
}

/** 134217728 -> "128M", 4096 -> "4k", 1000 -> "1000": the shortest exact spelling. */
export function formatSize(n: number): string {
  for (const [suffix, unit] of [['T', 2 ** 40], ['G', 2 ** 30], ['M', 2 ** 20], ['k', 2 ** 10]] as const) {
    if (n >= unit && n % unit === 0) return `${n / unit}${suffix}`;
  }
  return String(n);
}

/** "1 byte", "2 bytes", "1 message": units that agree with their number. */
export function plural(n: number, unit: string, units = `${unit}s`): string {
  return `${n} ${n === 1 ? unit : units}`;
}

// Durations: a number with its unit (250us, 500ms, 2s, 1m, 1h). A bare number is seconds in
// every option of iolab's own, as fio reads its runtime; fio's job options keep fio's units
// (thinktime and latency_target: microseconds, log_avg_msec: milliseconds), as fio reads them.
// An option whose bare number once meant another unit (bench api --duration: milliseconds)
// refuses a bare number, so no old command line silently changes meaning.
export interface DurationRule {
  /** Allow 0 (ramp_time); otherwise a duration must be > 0. */
  zero?: boolean;
  /** The unit of a bare number: seconds, unless the option is fio's with another unit. */
  unit?: 'us' | 'ms' | 's';
  /** Whole milliseconds only (what a native timer takes): 250us is refused, not rounded. */
  wholeMs?: boolean;
  /** Whole seconds only (what wrk's -d takes). */
  wholeSeconds?: boolean;
  /** A bare number is refused, with the unit it used to mean (`milliseconds`). */
  bareWas?: string;
  /** A shorter longest duration than MAX_DURATION_MS, and why (`what every server's timer holds`). */
  max?: { ms: number; why: string };
}

const timeUnits: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** The longest duration any option takes: 10^9 s (31 years), what a native timer holds in ms. */
export const MAX_DURATION_MS = 1e12;

/** fio's time values: "10" (seconds unless the rule says ms), "500ms", "2s", "1m", "1h", "250us"
 * -> milliseconds. Whole numbers with an optional unit, nothing else. */
export function parseDuration(text: string, rule: DurationRule = {}): number {
  const m = /^(\d+)(us|ms|s|m|h)?$/i.exec(text.trim());
  if (m && m[2] === undefined && rule.bareWas !== undefined) {
    throw new RangeError(`a bare number here was ${rule.bareWas}, and is seconds elsewhere in iolab: give the unit, ` +
      `${m[1]}ms or ${m[1]}s, got '${text}'`);
  }
  const ms = m ? Number(m[1]) * timeUnits[(m[2] ?? rule.unit ?? 's').toLowerCase()] : NaN;
  if (!Number.isFinite(ms) || ms < 0 || (ms === 0 && !rule.zero)) {
    throw new RangeError(`expected a duration ${rule.zero ? '>= 0' : '> 0'} such as 10, 500ms or 2s, got '${text}'`);
  }
  if (ms > MAX_DURATION_MS) throw new RangeError(`expected a duration of at most ${MAX_DURATION_MS / 1000}s, got '${text}'`);
  if (rule.max && ms > rule.max.ms) throw new RangeError(`expected a duration of at most ${rule.max.ms / 1000}s (${rule.max.why}), got '${text}'`);
  if (rule.wholeMs && !Number.isInteger(ms)) throw new RangeError(`expected a whole number of milliseconds (1ms or more), got '${text}'`);
  if (rule.wholeSeconds && ms % 1000 !== 0) throw new RangeError(`expected whole seconds (such as 5 or 5s; 1s or more), got '${text}'`);
  return ms;
}

/** A commander argParser for a duration (value in milliseconds); `duration` marks it so for the
 * test that holds every duration option of the program to the one rule. */
export function durationOption(rule: DurationRule = {}): ((value: string) => number) & { rule: DurationRule; duration: true } {
  return Object.assign(asCommanderError((value: string) => parseDuration(value, rule)), { rule, duration: true as const });
}
