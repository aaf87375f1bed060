// fio's random_distribution (random, zipf:THETA[:CENTER], pareto:H[:CENTER], normal:DEV[:CENTER])
// zoned:50/5:30/15:20/ and random_generator: read as fio reads them, run by native/bench/job_dist.c.
// zoned_abs and a separate distribution for writes (after a comma) are refused by name.
import { asCommanderError } from '../numbers.js';

export interface Distribution {
  text: string;
  kind: number;  // job.h's enum rand_dist
  value: number;
  center?: number;
  /** zoned: [access %, size %] per zone. */
  zones?: number[];
}

/** fio's zoned:50/5:30/15:20/ : each zone's share of the I/Os over its share of the blocks, in
 * order; an empty size is what is left; the shares of the I/Os add up to 100, as fio checks. */
function parseZones(text: string): Distribution {
  const zones: number[] = [];
  let sizes = 0;
  let access = 0;
  const parts = text.slice('zoned:'.length).split(':');
  parts.forEach((part, i) => {
    const m = /^(\d+)\/(\d*)$/.exec(part.trim());
    if (!m) throw new RangeError(`each zone is ACCESS%/SIZE% (50/5), got '${part}' in '${text}'`);
    const size = m[2] === '' ? (i === parts.length - 1 ? 100 - sizes : NaN) : Number(m[2]);
    if (!Number.isFinite(size)) throw new RangeError(`only the last zone may leave its size empty, in '${text}'`);
    zones.push(Number(m[1]), size);
    access += Number(m[1]);
    sizes += size;
  });
  if (access !== 100) throw new RangeError(`the zones' shares of the I/Os add up to ${access}, not 100 (as fio checks), in '${text}'`);
  if (sizes > 100) throw new RangeError(`the zones' sizes add up to ${sizes} percent, more than the file, in '${text}'`);
  return { text, kind: 4, value: 0, zones };
}

const KINDS: Record<string, number> = { random: 0, zipf: 1, pareto: 2, normal: 3, zoned: 4 };

export function parseDistribution(value: string): Distribution {
  const text = value.trim();
  if (text.includes(',')) throw new RangeError(`'${text}': one distribution for reads and writes (iolab runs no separate one after a comma)`);
  const [name, v, c, ...rest] = text.split(':');
  if (name === 'zoned') return parseZones(text);
  if (name === 'zoned_abs') throw new RangeError('zoned_abs (zones in bytes) is not run by iolab (random, zipf, pareto, normal, zoned are)');
  const kind = KINDS[name];
  if (kind === undefined || rest.length > 0) throw new RangeError(`expected random, zipf:THETA, pareto:H or normal:DEV (each with an optional :CENTER), got '${text}'`);
  if (kind === 0) {
    if (v !== undefined) throw new RangeError(`random takes no value, got '${text}'`);
    return { text, kind, value: 0 };
  }
  const num = (s: string | undefined, what: string) => {
    const n = Number(s);
    if (s === undefined || s.trim() === '' || !Number.isFinite(n)) throw new RangeError(`${name} needs ${what}, got '${text}'`);
    return n;
  };
  const param = num(v, name === 'zipf' ? 'a theta (zipf:1.2)' : name === 'pareto' ? 'a power between 0 and 1 (pareto:0.2)' : 'a deviation in percent (normal:20)');
  if (name === 'zipf' && (param <= 0 || param === 1)) throw new RangeError(`zipf's theta must be above 0 and not 1 (as fio), got ${param}`);
  if (name === 'pareto' && (param <= 0 || param >= 1)) throw new RangeError(`pareto's power must be between 0 and 1 (as fio), got ${param}`);
  if (name === 'normal' && (param < 0 || param > 100)) throw new RangeError(`normal's deviation is a percent from 0 to 100 (as fio), got ${param}`);
  const center = c === undefined ? undefined : num(c, 'a center between 0 and 1');
  if (center !== undefined && (center < 0 || center > 1)) throw new RangeError(`the center must be between 0 and 1 (as fio), got ${center}`);
  return { text, kind, value: param, center };
}

/** The native job's fields for a distribution. */
export function distributionFields(d: Distribution | undefined): Record<string, number | number[]> {
  if (d === undefined || d.kind === 0) return {};
  if (d.zones) return { randomDistribution: d.kind, distributionZones: d.zones };
  return { randomDistribution: d.kind, distributionMicros: Math.round(d.value * 1e6),
    distributionCenterMicros: d.center === undefined ? -1e6 : Math.round(d.center * 1e6) };
}

/** fio's random_generator: tausworthe (fio's default) and tausworthe64 pick fio's generator, whose
 * sequence iolab's does not repeat in any case (docs/storage.md); lfsr promises every block once
 * per pass without a map, which iolab's random map gives: it turns the map on. */
export function parseGenerator(value: string): string {
  const text = value.trim();
  if (!['tausworthe', 'tausworthe64', 'lfsr'].includes(text)) {
    throw new RangeError(`expected tausworthe, tausworthe64 or lfsr, as fio, got '${text}'`);
  }
  return text;
}

export const distributionOption = asCommanderError(parseDistribution);
export const generatorOption = asCommanderError(parseGenerator);
