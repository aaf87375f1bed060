// `bench iops --sweep key=v1,v2,...`: the points of a sweep over fio's iodepth, bs, numjobs or
// rw (several --sweep flags cross each other). Each point is one fio-style job per engine,
// with the point's options in its "job options".
import type { BenchJob } from '../native.js';
import { UserError } from '../cli-util.js';
import { formatSize, parseNumberList } from '../numbers.js';
import { MAX_IODEPTH } from './engines.js';
import { parseRw } from './storage-job.js';

export interface SweepAxis {
  key: 'iodepth' | 'bs' | 'numjobs' | 'rw';
  values: (number | string)[];
}

/** One point: the job fields it sets, and its options as fio spells them. */
export interface SweepPoint {
  set: Partial<BenchJob>;
  options: Record<string, string>;
}

const rules = {
  iodepth: { min: 1, max: MAX_IODEPTH },
  bs: { min: 1, max: 2 ** 30, size: true },
  numjobs: { min: 1, max: 1024 },
} as const;

/** commander argParser for --sweep (repeatable: the axes are collected). */
export function parseSweep(value: string, previous: SweepAxis[] = []): SweepAxis[] {
  const m = /^([a-z_]+)=(.*)$/.exec(value.trim());
  const key = m?.[1];
  if (!m || (key !== 'iodepth' && key !== 'bs' && key !== 'numjobs' && key !== 'rw')) {
    throw new UserError(`--sweep: expected iodepth=, bs=, numjobs= or rw= and a comma list (iodepth=1,2,4,8), got '${value}'`);
  }
  if (previous.some((a) => a.key === key)) throw new UserError(`--sweep: ${key} is swept twice`);
  let values: (number | string)[];
  try {
    values = key === 'rw' ? m[2].split(',').map((s) => parseRw(s.trim())) : parseNumberList(m[2], rules[key]);
  } catch (err) {
    throw new UserError(`--sweep ${key}: ${(err as Error).message}`);
  }
  return [...previous, { key, values }];
}

/** Every combination of the axes' values, first axis outermost. No axes: one empty point. */
export function sweepPoints(axes: SweepAxis[]): SweepPoint[] {
  let points: SweepPoint[] = [{ set: {}, options: {} }];
  for (const axis of axes) {
    points = points.flatMap((p) => axis.values.map((v) => ({
      set: { ...p.set, [axis.key]: v },
      options: { ...p.options, [axis.key]: axis.key === 'bs' ? formatSize(v as number) : String(v) },
    })));
  }
  return points;
}
