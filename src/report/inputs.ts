// Reads a benchmark's JSON by its shape: bench iops (fio-shaped jobs[], iolab's or fio's own,
// with --vs-fio's summary and sweeps' one job per point; testIOPS mode's engines), bench latency,
// bench echo, bench ipc, bench api (its ping-pong group's round trips apart) and bench http
// (http-input.ts). A run that was interrupted says so (partial), whatever
// its kind, and so does each figure of a job that was cut short.
// Readers take what they find and ignore keys they do not know, so a file from an older or a
// newer iolab still charts.
import { currentName, generatorAliases, serverAliases, transportAliases } from '../aliases.js';
import { parseWholeNumber } from '../numbers.js';
import { verdictText } from '../bench/goals.js';
import { common, isObject, num, type Common, type Json, type Ratio } from './json-fields.js';
import { readHttp, type HttpInput } from './http-input.js';

export type { Machine, Ratio } from './json-fields.js';
export type { HttpInput } from './http-input.js';

/** One job of a storage run: one engine at one point, read or write. */
export interface StoragePoint {
  engine: string;
  /** Who ran it: iolab's engine or fio. */
  source: 'iolab' | 'fio';
  rw: string;
  bs: number;
  iodepth: number;
  numjobs: number;
  direction: 'read' | 'write';
  iops: number;
  bwBytes: number;
  clatP99Ns?: number;
  /** Completion-latency percentiles (p, ns), p1..p99.99 as fio writes them. */
  percentiles: { p: number; ns: number }[];
}

export interface StorageInput extends Common { kind: 'storage'; points: StoragePoint[]; ratios: Ratio[] }
export interface EchoPoint { server: string; clients: number; reqPerSec: number }
/** The server's CPU per request under one generator (reports since bench echo keyed them). */
export interface EchoCpuPoint { server: string; generator: string; clients: number; serverUsPerReq: number }
export interface EchoInput extends Common { kind: 'echo'; lengthBytes?: number; points: EchoPoint[]; cpu: EchoCpuPoint[]; ratios: Ratio[] }
export interface IpcRow { transport: string; mode?: string; messageBytes: number; bytesPerSec: number; p99Ns?: number }
export interface IpcInput extends Common { kind: 'ipc'; rows: IpcRow[]; memcpy: { messageBytes: number; bytesPerSec: number }[]; ratios: Ratio[] }
export interface ApiRow { contender: string; inflight: number; opsPerSec: number; messageBytes?: number }
/** A ping-pong row: one message in flight to a child that echoes it; the round trip's medians. */
export interface ApiRoundTrip { contender: string; messageBytes: number; p50Us: number; p99Us?: number }
export interface ApiInput extends Common { kind: 'api'; rows: ApiRow[]; roundTrips: ApiRoundTrip[]; ratios: Ratio[] }

/** One engine's latency at one percentile, one direction (bench latency). */
export interface LatencyPoint { engine: string; direction: 'read' | 'write'; p: number; ns: number }
export interface LatencyInput extends Common { kind: 'latency'; bs?: number; direct?: boolean; points: LatencyPoint[]; ratios: Ratio[] }

export type BenchInput = StorageInput | LatencyInput | EchoInput | IpcInput | ApiInput | HttpInput;

/** A job's figures cover less than it was to run (iolab's mark on a job Ctrl-C stopped). */
const cutShort = (job: Json) => isObject(job.iolab) && (job.iolab as Json).interrupted === true;

/** A size option as fio writes it ("4k", "4096"); undefined when absent or unreadable. */
function sizeOption(v: unknown): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v !== 'string') return undefined;
  try {
    return parseWholeNumber(v.replace(/-.*$/, ''), { size: true });
  } catch {
    return undefined;
  }
}

function jobOptions(job: Json, global: Json): Json {
  const own = (isObject(job['job options']) ? job['job options'] : isObject(job.job_options) ? job.job_options : {}) as Json;
  return { ...global, ...own };
}

function jobSource(job: Json, file: Json): 'iolab' | 'fio' {
  const marked = job.source ?? (isObject(job.iolab) ? (job.iolab as Json).source : undefined);
  if (marked === 'fio' || marked === 'iolab') return marked;
  const version = String(file['fio version'] ?? '');
  return version.startsWith('fio') ? 'fio' : 'iolab';
}

function percentilesOf(direction: Json): { p: number; ns: number }[] {
  const clat = (isObject(direction.clat_ns) ? direction.clat_ns : direction.lat_ns) as Json | undefined;
  if (!clat || !isObject(clat.percentile)) return [];
  return Object.entries(clat.percentile as Json)
    .map(([k, v]) => ({ p: Number(k), ns: num(v) ?? NaN }))
    .filter((x) => Number.isFinite(x.p) && Number.isFinite(x.ns) && x.ns > 0)
    .sort((a, b) => a.p - b.p);
}

function storagePoints(json: Json): StoragePoint[] {
  const global = (isObject(json['global options']) ? json['global options'] : {}) as Json;
  const points: StoragePoint[] = [];
  for (const job of (json.jobs as unknown[]).filter(isObject)) {
    if (num(job.error) || job.unavailable) continue;
    const o = jobOptions(job, global);
    const engine = `${String(o.ioengine ?? job.jobname ?? 'job')}${cutShort(job) ? ' (partial)' : ''}`;
    for (const direction of ['read', 'write'] as const) {
      const d = job[direction];
      if (!isObject(d) || !((num(d.iops) ?? 0) > 0)) continue;
      const percentiles = percentilesOf(d);
      points.push({
        engine, source: jobSource(job, json), rw: String(o.rw ?? o.readwrite ?? 'read'),
        bs: sizeOption(o.bs ?? o.blocksize) ?? 4096, iodepth: num(o.iodepth) ?? 1, numjobs: num(o.numjobs) ?? 1,
        direction, iops: num(d.iops)!, bwBytes: num(d.bw_bytes) ?? (num(d.bw) ?? 0) * 1024,
        clatP99Ns: percentiles.find((x) => x.p === 99)?.ns, percentiles,
      });
    }
  }
  return points;
}

/** Does a --vs-fio summary entry's sweep point (fio's names, string values) name this point? */
function samePoint(p: StoragePoint, e: Json): boolean {
  const point = (isObject(e.point) ? e.point : e.iodepth !== undefined ? { iodepth: e.iodepth } : {}) as Json;
  return Object.entries(point).every(([k, v]) => {
    if (k === 'iodepth' || k === 'numjobs') return p[k] === num(v);
    if (k === 'bs') return p.bs === sizeOption(v);
    if (k === 'rw') return p.rw === String(v);
    return true;
  });
}

/** --vs-fio's summary: fio's figures per engine and point, and the ratios iolab/fio. */
function vsFio(json: Json, points: StoragePoint[]): { fio: StoragePoint[]; ratios: Ratio[] } {
  const summary = isObject(json.vs_fio) ? (json.vs_fio as Json) : undefined;
  if (!summary || !Array.isArray(summary.engines)) return { fio: [], ratios: [] };
  const fio: StoragePoint[] = [];
  const ratios: Ratio[] = [];
  const fioName = String(summary.fio ?? 'fio');
  for (const e of summary.engines.filter(isObject)) {
    const ours = points.find((p) => p.engine === e.engine && p.source === 'iolab' && samePoint(p, e));
    const fioIops = num(e.fio_iops);
    if (ours && fioIops && !points.some((p) => p.source === 'fio' && p.engine === ours.engine && samePoint(p, e))) {
      fio.push({ ...ours, source: 'fio', iops: fioIops, clatP99Ns: num(e.fio_clat_p99_ns), percentiles: [], bwBytes: fioIops * ours.bs });
    }
    const at = isObject(e.point) ? ` ${Object.entries(e.point).map(([k, v]) => `${k}=${String(v)}`).join(' ')}` : '';
    const name = `${String(e.engine)}${at}`;
    const ratio = num(e.ratio);
    if (ratio !== undefined) {
      ratios.push({ table: `IOPS iolab / ${fioName}`, name, value: ratio,
        note: fioIops ? `${Math.round(num(e.iolab_iops) ?? 0)} vs ${Math.round(fioIops)} IOPS` : undefined });
    }
    const cpu = num(e.cpu_ratio);
    if (cpu !== undefined) ratios.push({ table: `CPU per I/O iolab / ${fioName} (lower is leaner)`, name, value: cpu });
  }
  return { fio, ratios };
}

/** npm run bench:iops's summary: rows of iolab vs fio per job label (vs_fio, cpu_bound). */
function readStorageSummary(file: string, json: Json): StorageInput {
  const points: StoragePoint[] = [];
  const ratios: Ratio[] = [];
  for (const [group, rw] of [['vs_fio', 'randread'], ['cpu_bound', 'randread, CPU-bound']] as const) {
    for (const r of (Array.isArray(json[group]) ? json[group] as unknown[] : []).filter(isObject)) {
      if (r.unavailable) continue;
      const label = String(r.label ?? r.engine).replace(/\s*qd\d+/, '');
      const base = { engine: label, rw, bs: 4096, iodepth: num(r.iodepth) ?? 1, numjobs: 1, direction: 'read' as const, percentiles: [] };
      for (const source of ['iolab', 'fio'] as const) {
        const iops = num(r[`${source}_iops`]);
        if (iops) points.push({ ...base, source, iops, bwBytes: iops * 4096, clatP99Ns: num(r[`${source}_clat_p99_ns`]) });
      }
      if (num(r.ratio) !== undefined) ratios.push({ table: 'IOPS iolab / fio', name: String(r.label ?? r.engine), value: num(r.ratio)! });
      if (num(r.cpu_ratio) !== undefined) ratios.push({ table: 'CPU per I/O iolab / fio (lower is leaner)', name: String(r.label ?? r.engine), value: num(r.cpu_ratio)! });
    }
  }
  return { kind: 'storage', ...common(file, json), points, ratios };
}

/** testIOPS mode's rw names (bench iops FILE -m=MODE). */
const testIopsModes: Record<string, string> = { rRD: 'randread', sRD: 'read', rWR: 'randwrite', sWR: 'write' };

/** bench iops -m=MODE: one IOPS figure per engine at the mode's rw, 4 KiB and QD 64 unless the
 * JSON says otherwise. */
function readTestIops(file: string, json: Json): StorageInput {
  const rw = testIopsModes[String(json.mode)] ?? String(json.mode);
  const points: StoragePoint[] = [];
  for (const e of (json.engines as unknown[]).filter(isObject)) {
    const iops = num(e.iops);
    if (e.unavailable || !iops) continue;
    const bs = num(e.bs) ?? 4096;
    points.push({
      engine: `${String(e.engine)}${e.partial ? ' (partial)' : ''}`, source: 'iolab', rw, bs, iodepth: num(e.iodepth) ?? 64, numjobs: 1,
      direction: rw.endsWith('write') ? 'write' : 'read', iops, bwBytes: iops * bs, percentiles: [],
    });
  }
  return { kind: 'storage', ...common(file, json), points, ratios: [] };
}

function readStorage(file: string, json: Json): StorageInput {
  const points = storagePoints(json);
  const extra = vsFio(json, points);
  return { kind: 'storage', ...common(file, json), points: [...points, ...extra.fio], ratios: extra.ratios };
}

/** A server's name, or a pair's ('uring/epoll'), as it is spelt now: results written before the
 * rename say uring for io_uring. */
const serverName = (name: string) => name.split('/').map((n) => currentName(serverAliases, n)).join('/');

/** bench echo: medians per client count and contender (servers; the generator's references apart),
 * and where the results have them, the servers' CPU per request under each generator and its
 * ratios. Older results list the servers under `engines`. */
function readEcho(file: string, json: Json): EchoInput {
  const listed = Array.isArray(json.servers) ? json.servers : Array.isArray(json.engines) ? json.engines : undefined;
  const servers = listed?.map((s) => serverName(String(s)));
  const cpu: EchoCpuPoint[] = [];
  const ratios: Ratio[] = [];
  for (const [generator, byClients] of Object.entries(isObject(json.byGenerator) ? json.byGenerator : {})) {
    for (const [clients, m] of Object.entries(isObject(byClients) ? byClients : {})) {
      for (const [server, cell] of Object.entries(isObject(m) ? m : {})) {
        const us = isObject(cell) ? num(cell.serverUsPerReq) : undefined;
        if (us !== undefined && num(clients) !== undefined) {
          cpu.push({ server: serverName(server), generator: currentName(generatorAliases, generator), clients: num(clients)!, serverUsPerReq: us });
        }
      }
    }
  }
  for (const [generator, byClients] of Object.entries(isObject(json.usPerReqRatios) ? json.usPerReqRatios : {})) {
    for (const [clients, r] of Object.entries(isObject(byClients) ? byClients : {})) {
      for (const [name, v] of Object.entries(isObject(r) ? r : {})) {
        if (num(v) !== undefined) {
          ratios.push({ table: 'echo server us/req ratios (lower: less CPU per request)',
            name: `${serverName(name)} at ${clients} clients, ${currentName(generatorAliases, generator)} generator`, value: num(v)! });
        }
      }
    }
  }
  const points: EchoPoint[] = [];
  if (isObject(json.medians)) {
    for (const [clients, m] of Object.entries(json.medians as Json)) {
      if (!isObject(m)) continue;
      for (const [server, v] of Object.entries(m)) {
        if (num(v) !== undefined && num(clients) !== undefined) points.push({ server: serverName(server), clients: num(clients)!, reqPerSec: num(v)! });
      }
    }
  }
  if (isObject(json.ratios)) {
    for (const [clients, r] of Object.entries(json.ratios as Json)) {
      if (!isObject(r)) continue;
      for (const [name, v] of Object.entries(r)) {
        if (num(v) !== undefined) ratios.push({ table: 'echo req/s ratios', name: `${serverName(name)} at ${clients} clients`, value: num(v)! });
      }
    }
  }
  const isServer = (s: string) => (servers ? servers.includes(s) : !['generator', 'thread-per-conn'].includes(s));
  return { kind: 'echo', ...common(file, json), lengthBytes: num(json.length), points: points.filter((p) => isServer(p.server)), cpu, ratios };
}

/** bench latency: per engine, the read and write percentiles it printed (p50, p99, p99.9). */
function readLatency(file: string, json: Json): LatencyInput {
  const points: LatencyPoint[] = [];
  for (const e of (json.engines as unknown[]).filter(isObject)) {
    if (e.unavailable) continue;
    const engine = `${String(e.engine)}${e.partial ? ' (partial)' : ''}`;
    for (const direction of ['read', 'write'] as const) {
      const d = e[direction];
      if (!isObject(d)) continue;
      for (const [p, key] of [[50, 'p50_ns'], [99, 'p99_ns'], [99.9, 'p99_9_ns']] as const) {
        const ns = num(d[key]);
        if (ns !== undefined && ns > 0) points.push({ engine, direction, p, ns });
      }
    }
  }
  return { kind: 'latency', ...common(file, json), bs: num(json.bs), direct: typeof json.direct === 'boolean' ? json.direct : undefined,
    points, ratios: [] };
}

function readIpc(file: string, json: Json): IpcInput {
  const rows = (json.rows as unknown[]).filter(isObject).map((r) => ({
    transport: currentName(transportAliases, String(r.transport)), mode: r.mode === undefined ? undefined : String(r.mode), messageBytes: num(r.messageBytes) ?? NaN,
    bytesPerSec: num(r.bytesPerSec) ?? NaN, p99Ns: num(r.p99Ns),
  })).filter((r) => r.messageBytes > 0 && r.bytesPerSec > 0);
  const memcpy = Object.entries((json.memcpyBytesPerSec ?? {}) as Json)
    .map(([size, v]) => ({ messageBytes: num(size) ?? NaN, bytesPerSec: num(v) ?? NaN }))
    .filter((m) => m.messageBytes > 0 && m.bytesPerSec > 0).sort((a, b) => a.messageBytes - b.messageBytes);
  const ratios: Ratio[] = [];
  for (const r of rows) {
    const ceiling = memcpy.find((m) => m.messageBytes === r.messageBytes);
    if (ceiling) {
      ratios.push({ table: 'IPC bytes/s / memcpy', name: `${r.transport}${r.mode ? ` ${r.mode}` : ''} at ${r.messageBytes} B`, value: r.bytesPerSec / ceiling.bytesPerSec });
    }
  }
  return { kind: 'ipc', ...common(file, json), rows, memcpy, ratios };
}

function readApi(file: string, json: Json): ApiInput {
  // the ping-pong group's rows are round trip times, charted apart, not a rate beside the others
  const roundTrips = (json.rows as unknown[]).filter(isObject).filter((r) => r.group === 'pingpong')
    .map((r) => ({ contender: String(r.contender), messageBytes: num(r.messageBytes) ?? NaN, p50Us: num(r.rttP50Us) ?? NaN,
      ...(num(r.rttP99Us) !== undefined ? { p99Us: num(r.rttP99Us) } : {}) }))
    .filter((r) => r.messageBytes > 0 && r.p50Us > 0);
  const rows = (json.rows as unknown[]).filter(isObject).filter((r) => r.group !== 'pingpong')
    .map((r) => ({ contender: String(r.contender), inflight: num(r.inflight) ?? 1, opsPerSec: num(r.opsPerSec) ?? NaN,
      ...(num(r.messageBytes) !== undefined ? { messageBytes: num(r.messageBytes) } : {}) }))
    .filter((r) => r.opsPerSec > 0);
  const partial = common(file, json).partial !== undefined;
  const ratios = (Array.isArray(json.ratios) ? json.ratios : []).filter(isObject).filter((r) => num(r.ratio) !== undefined)
    .map((r) => ({ table: 'bench api ratios', name: String(r.name), value: num(r.ratio)!,
      note: num(r.goal) !== undefined ? `goal >= ${num(r.goal)}x: ${verdictText(num(r.ratio)! >= num(r.goal)!, partial)}` : undefined }));
  for (const r of (Array.isArray(json.rttRatios) ? json.rttRatios : []).filter(isObject)) {
    if (num(r.ratio) !== undefined) ratios.push({ table: 'bench api ping-pong p50 round trip ratios (lower is faster)', name: String(r.name), value: num(r.ratio)!, note: undefined });
  }
  return { kind: 'api', ...common(file, json), rows, roundTrips, ratios };
}

/** The input's kind by its shape, or undefined when it is none iolab charts. */
export function readBenchJson(file: string, value: unknown): BenchInput | undefined {
  if (!isObject(value)) return undefined;
  if (Array.isArray(value.jobs)) return readStorage(file, value);
  if (Array.isArray(value.vs_fio)) return readStorageSummary(file, value);
  if (typeof value.mode === 'string' && Array.isArray(value.engines) && value.engines.some((e) => isObject(e) && 'iops' in e)) {
    return readTestIops(file, value);
  }
  if (isObject(value.medians) && (Array.isArray(value.samples) || Array.isArray(value.servers) || Array.isArray(value.engines))) return readEcho(file, value);
  if (Array.isArray(value.engines) && value.engines.some((e) => isObject(e) && (isObject(e.read) || isObject(e.write)))) {
    return readLatency(file, value);
  }
  if (Array.isArray(value.rows) && ('memcpyBytesPerSec' in value || value.rows.some((r) => isObject(r) && 'transport' in r))) {
    return readIpc(file, value);
  }
  if (Array.isArray(value.rows) && value.rows.some((r) => isObject(r) && 'contender' in r && 'opsPerSec' in r)) return readApi(file, value);
  if (isObject(value.cells) && Array.isArray(value.samples)) return readHttp(file, value);
  return undefined;
}
