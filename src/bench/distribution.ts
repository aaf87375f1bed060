// fio's random_distribution (random, zipf:THETA[:CENTER], pareto:H[:CENTER], normal:DEV[:CENTER])
// zoned:50/5:30/15:20/ and zoned_abs:60/20G:40/100G, each zoned one with the writes' zones after a
// comma, as fio's (reads,writes[,trims]), and random_generator: read as fio reads them, run by
// native/bench/job_dist.c.
import { asCommanderError, parseWholeNumber } from '../numbers.js';

export interface Distribution {
  text: string;
  kind: number;  // job.h's enum rand_dist
  value: number;
  center?: number;
  /** zoned: [access %, size %] per zone (zoned_abs: [access %, bytes]); zonesWrite the writes' own. */
  zones?: number[];
  zonesWrite?: number[];
}

/** One direction's zones of fio's zoned:50/5:30/15:20/ (zoned_abs:60/20G:40/100G): each zone's share
 * of the I/Os over its share of the blocks (its bytes), in order; an empty size is what is left;
 * the shares of the I/Os add up to 100, as fio checks. */
function parseZoneList(list: string, text: string, abs: boolean): number[] {
  const zones: number[] = [];
  let sizes = 0;
  let access = 0;
  const parts = list.split(':');
  parts.forEach((part, i) => {
    const m = /^(\d+)\/(.*)$/.exec(part.trim());
    if (!m) throw new RangeError(`each zone is ACCESS%/${abs ? 'SIZE' : 'SIZE%'} (50/${abs ? '10G' : '5'}), got '${part}' in '${text}'`);
    const last = i === parts.length - 1;
    const size = m[2] === '' ? (last && !abs ? 100 - sizes : NaN) : abs ? parseWholeNumber(m[2].trim(), { min: 1, size: true }) : Number(m[2]);
    if (!Number.isFinite(size)) throw new RangeError(`only the last zone of a zoned (percent) split may leave its size empty, in '${text}'`);
    zones.push(Number(m[1]), size);
    access += Number(m[1]);
    sizes += size;
  });
  if (access !== 100) throw new RangeError(`the zones' shares of the I/Os add up to ${access}, not 100 (as fio checks), in '${text}'`);
  if (!abs && sizes > 100) throw new RangeError(`the zones' sizes add up to ${sizes} percent, more than the file, in '${text}'`);
  return zones;
}

/** fio's zoned and zoned_abs: zones for reads, and the writes' after a comma (a third, the
 * trims', is read and runs nothing: iolab issues no trims), as fio's bssplit. */
function parseZones(text: string, abs: boolean): Distribution {
  const [reads, writes, trims, ...rest] = text.slice(text.indexOf(':') + 1).split(',');
  if (rest.length > 0) throw new RangeError(`expected reads[,writes[,trims]] zones, got '${text}'`);
  if (trims !== undefined && trims.trim() !== '') parseZoneList(trims, text, abs);
  const zones = parseZoneList(reads, text, abs);
  const zonesWrite = writes === undefined || writes.trim() === '' ? undefined : parseZoneList(writes, text, abs);
  return { text, kind: abs ? 5 : 4, value: 0, zones, ...(zonesWrite ? { zonesWrite } : {}) };
}

const KINDS: Record<string, number> = { random: 0, zipf: 1, pareto: 2, normal: 3, zoned: 4, zoned_abs: 5 };

export function parseDistribution(value: string): Distribution {
  const text = value.trim();
  // fio's HOWTO writes zoned_abs=60/20G..., which fio fails to parse: zoned_abs: is its form
  if (text.startsWith('zoned_abs=')) {
    throw new RangeError(`'${text}': write zoned_abs:${text.slice('zoned_abs='.length)} (fio fails to parse zoned_abs= too)`);
  }
  if (text.startsWith('zoned_abs:')) return parseZones(text, true);
  if (text.startsWith('zoned:')) return parseZones(text, false);
  if (text.includes(',')) {
    throw new RangeError(`'${text}': zoned and zoned_abs take the writes' zones after a comma; fio reads no second ${text.split(':')[0]} ` +
      '(it fails to parse the value)');
  }
  const [name, v, c, ...rest] = text.split(':');
  const kind = KINDS[name];
  if (kind === undefined || rest.length > 0) {
    throw new RangeError(`expected random, zipf:THETA, pareto:H or normal:DEV (each with an optional :CENTER), zoned: or zoned_abs:, got '${text}'`);
  }
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
  if (d.zones) return { randomDistribution: d.kind, distributionZones: d.zones, ...(d.zonesWrite ? { distributionZonesWrite: d.zonesWrite } : {}) };
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

/** fio's file_service_type: roundrobin, sequential or random, each with :N, the I/Os to a file
 * before the next is picked; zipf, pareto, normal (gauss) with their :VALUE[:CENTER] (fio's
 * defaults 1.1, 0.2 and 0), the file of each I/O drawn from them. */
export interface FileService { text: string; kind: number; nr: number; value: number; center?: number }

const FILE_SERVICES: Record<string, number> = { roundrobin: 0, sequential: 1, random: 2, zipf: 3, pareto: 4, normal: 5, gauss: 5 };

export function parseFileService(value: string): FileService {
  const text = value.trim();
  const [name, v, c, ...rest] = text.split(':');
  const kind = FILE_SERVICES[name];
  if (kind === undefined || rest.length > 0 || (kind < 3 && c !== undefined)) {
    throw new RangeError(`expected roundrobin, sequential or random (each with :N, the I/Os before the next file), or zipf, pareto, ` +
      `normal (each with :VALUE[:CENTER]), got '${text}'`);
  }
  if (kind < 3) {
    const nr = v === undefined ? 1 : Number(v);
    if (!Number.isInteger(nr) || nr < 1) throw new RangeError(`${name}:N takes a whole number of I/Os from 1, got '${text}'`);
    return { text, kind, nr, value: 0 };
  }
  const param = v === undefined ? [1.1, 0.2, 0][kind - 3] : Number(v);
  if (!Number.isFinite(param)) throw new RangeError(`${name}'s value is a number, got '${text}'`);
  if (kind === 3 && (param <= 0 || param === 1)) throw new RangeError(`zipf's theta must be above 0 and not 1 (as fio), got ${param}`);
  if (kind === 4 && (param <= 0 || param >= 1)) throw new RangeError(`pareto's power must be between 0 and 1 (as fio), got ${param}`);
  if (kind === 5 && (param < 0 || param >= 100)) throw new RangeError(`normal's deviation is a percent from 0 to 100 (as fio), got ${param}`);
  const center = c === undefined ? undefined : Number(c);
  if (center !== undefined && !(center >= 0 && center <= 1)) throw new RangeError(`the center must be between 0 and 1 (as fio), got '${c}'`);
  return { text, kind, nr: 1, value: param, center };
}

/** The native job's fields for a file service type. */
export function fileServiceFields(f: FileService | undefined): Record<string, number> {
  if (f === undefined) return {};
  return { fileService: f.kind, fileServiceNr: f.nr, fileServiceParamMicros: Math.round(f.value * 1e6),
    fileServiceCenterMicros: f.center === undefined ? -1e6 : Math.round(f.center * 1e6) };
}

export const fileServiceOption = asCommanderError(parseFileService);
export const distributionOption = asCommanderError(parseDistribution);
export const generatorOption = asCommanderError(parseGenerator);
