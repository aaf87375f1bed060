// fio's steady state (steadystate / ss, ss_dur, ss_ramp, and fio 3.42's ss_interval): the
// criterion as fio reads it, the native job's fields (native/bench/job_steady.c judges it) and
// the job's "steadystate" object of fio's JSON.
import { UserError } from '../cli-util.js';
import { asCommanderError, parseDuration } from '../numbers.js';
import type { BenchResult } from '../native.js';

/** job.h's enum ss_kind. */
const SS = { iops: 1, bw: 2, lat: 4, slope: 8, pct: 16 } as const;

export interface SteadyCriterion {
  text: string;
  /** The native job's ss_kind bits. */
  kind: number;
  /** The limit: a percent with pct, else IOPS, bytes/s, or ns for lat. */
  limit: number;
}

/** fio's ss=iops:10%, iops_slope:0.1%, bw:..., bw_slope:..., lat:..., lat_slope:... (lat: fio
 * 3.42); a threshold is needed, a percent of the mean or an absolute value (lat in a time). */
export function parseSteadyState(value: string): SteadyCriterion {
  const text = value.trim();
  const m = /^(iops|bw|lat)(_slope)?:(.+)$/.exec(text);
  if (!m) {
    throw new RangeError(`expected iops, iops_slope, bw, bw_slope, lat or lat_slope, then a threshold (iops:10%, bw_slope:0.1%), ` +
      `as fio, got '${text}'`);
  }
  const kind = SS[m[1] as 'iops' | 'bw' | 'lat'] | (m[2] ? SS.slope : 0);
  const threshold = m[3].trim();
  const pct = /^(\d+(?:\.\d+)?)\s*%$/.exec(threshold);
  if (pct) return { text, kind: kind | SS.pct, limit: Number(pct[1]) };
  if (m[1] === 'lat') return { text, kind, limit: parseDuration(threshold, { unit: 'us' }) * 1e6 };
  const limit = Number(threshold);
  if (!/^\d+(\.\d+)?$/.test(threshold) || !Number.isFinite(limit)) {
    throw new RangeError(`the threshold of '${text}' is a percent (10%) or a number, got '${threshold}'`);
  }
  return { text, kind, limit };
}

export const steadyStateOption = asCommanderError(parseSteadyState);

/** fio's default criterion when only ss_dur is given. */
const DEFAULT = parseSteadyState('iops_slope:0.01%');

export interface SteadyOptions {
  steadystate?: SteadyCriterion;
  steadystate_duration?: number;
  steadystate_ramp_time?: number;
  steadystate_check_interval?: number;
  group_reporting?: boolean;
}

/** The native job's fields: none without ss_dur (fio: steady state off). The window is whole
 * intervals of at least 1 s, more than one, as fio 3.42 checks (3.33 took any). */
export function steadyStateFields(o: SteadyOptions): Record<string, number | boolean> {
  if (!o.steadystate_duration) return {};
  const interval = o.steadystate_check_interval ?? 1000;
  if (interval < 1000) throw new UserError(`ss_interval ${interval}ms: fio's steady state checks at most once a second (fio 3.42 refuses it too)`);
  if (o.steadystate_duration % interval !== 0 || o.steadystate_duration <= interval) {
    throw new UserError(`ss_dur ${o.steadystate_duration}ms is not a whole number of ss_interval ${interval}ms, more than one ` +
      `(fio 3.42: "ss_duration must be multiple of ss_check_interval")`);
  }
  const c = o.steadystate ?? DEFAULT;
  return { ssKind: c.kind, ssLimitMicros: Math.round(c.limit * 1e6), ssDurMs: o.steadystate_duration,
    ssRampMs: o.steadystate_ramp_time ?? 0, ssIntervalMs: o.steadystate_check_interval ?? 1000, ssGroup: o.group_reporting ?? false };
}

/** fio's JSON "steadystate" object of a job: its criterion, whether it was attained, and the
 * window (bytes and I/Os per interval, the mean latency per interval for lat), as fio writes it. */
export function steadyStateJson(job: { ssKind?: number; ssLimitMicros?: number; ssDurMs?: number }, r: BenchResult | undefined) {
  const ss = r?.steadystate;
  if (!job.ssDurMs || !ss) return {};
  const kind = job.ssKind ?? 0;
  const pct = (kind & SS.pct) !== 0 ? '%' : '';
  const name = `${kind & SS.iops ? 'iops' : kind & SS.lat ? 'lat' : 'bw'}${kind & SS.slope ? '_slope' : ''}`;
  const mean = (xs: number[]) => (xs.length ? Math.floor(xs.reduce((a, b) => a + b, 0) / xs.length) : 0);
  return {
    steadystate: {
      ss: `${name}:${((job.ssLimitMicros ?? 0) / 1e6).toFixed(6)}${pct}`,
      duration: Math.floor(job.ssDurMs / 1000),
      attained: ss.attained ? 1 : 0,
      criterion: `${ss.criterion.toFixed(6)}${pct}`,
      max_deviation: ss.deviation,
      slope: ss.slope,
      data: {
        bw_mean: mean(ss.bw), iops_mean: mean(ss.iops),
        ...(kind & SS.lat ? { lat_mean: mean(ss.latNs), lat_ns: ss.latNs } : {}),
        iops: ss.iops, bw: ss.bw,
      },
    },
  };
}
