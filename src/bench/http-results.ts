// bench http's results: the samples of the rounds, their medians per cell, the ratios (ring to
// node; with --workers, each server to node:cluster), the goals, and the table. With --workers,
// each cell also says how the connections and requests spread over the workers.
import { judged, verdictText } from './goals.js';
import { median, table } from '../format.js';
import type { HttpServerName } from './http-servers.js';
import type { WorkerCounts, WorkerServerName } from './http-workers.js';

export type BenchServerName = HttpServerName | WorkerServerName;

export interface HttpSample {
  round: number;
  server: BenchServerName;
  /** The server's processes answering (with --workers). */
  workers?: number;
  connections: number;
  /** Requests in flight per connection (wrk's pipelining). */
  inFlight: number;
  reqPerSec: number;
  requests: number;
  /** Latency of a request (of a pipelined batch with inFlight > 1), wrk's, in microseconds;
   * none where wrk gave none. */
  p50Us?: number;
  p99Us?: number;
  /** The CPU time of every process of the server over the run / the requests answered, in
   * microseconds. */
  serverUsPerReq?: number;
  /** Each worker's connections and requests over the run (with --workers). */
  perWorker?: WorkerCounts[];
  errors: number;
  partial?: boolean;
}

/** Fewest and most per worker. */
export interface Spread { connections: [number, number]; requests: [number, number] }

export interface HttpCell { reqPerSec: number; p50Us?: number; p99Us?: number; serverUsPerReq?: number; spread?: Spread }

export interface HttpBenchResults {
  durationSec: number;
  rounds: number;
  servers: BenchServerName[];
  workers?: number[];
  /** With --workers: node:cluster's scheduling, 'rr' (the primary hands connections out) or
   * 'none' (the kernel gives them to the workers' accepts), as NODE_CLUSTER_SCHED_POLICY says. */
  clusterScheduling?: 'rr' | 'none';
  samples: HttpSample[];
  /** "connections x inFlight" (with --workers "N workers, connections x inFlight") -> server ->
   * medians of the rounds */
  cells: Record<string, Partial<Record<BenchServerName, HttpCell>>>;
  /** cell -> 'ring/node'...: req/s, p50 and CPU per request of the first over the second's */
  ratios: Record<string, Record<string, { reqPerSec: number; p50?: number; usPerReq?: number }>>;
  /** met: null when the run was cut short (src/bench/goals.ts). */
  goals: { text: string; met: boolean | null }[];
  errors: number;
  interrupted: boolean;
  signal?: string;
}

/** What the Ring must do against node's own server in a cell (connections x in flight), for
 * node:http and fastify alike: never behind, ahead where it batches. Cells between these take the
 * rule of the nearest below: at least as many requests for no more CPU each. */
function cellGoal(server: BenchServerName, key: string): { reqPerSec: number; usPerReq: number; p50?: number } | undefined {
  if (server !== 'ring' && server !== 'fastify-ring') return undefined;
  const [connections, inFlight] = key.split(' x ').map(Number);
  if (connections === 1 && inFlight === 1) return { reqPerSec: 0.95, p50: 1.05, usPerReq: 1 };
  if (connections >= 1000) return { reqPerSec: 1.2, usPerReq: 0.85 };
  if (connections >= 100 && inFlight === 1) return { reqPerSec: 1.3, usPerReq: 0.8 };
  return { reqPerSec: 1, usPerReq: 1 };
}

const pairs: [BenchServerName, BenchServerName][] = [['ring', 'node'], ['fastify-ring', 'fastify'], ['ring-cluster', 'node-cluster'], ['ring-reuseport', 'node-cluster']];

export const cellKey = (s: { workers?: number; connections: number; inFlight: number }) =>
  `${s.workers === undefined ? '' : `${s.workers} worker${s.workers === 1 ? '' : 's'}, `}${s.connections} x ${s.inFlight}`;

const range = (xs: number[]): [number, number] => [Math.min(...xs), Math.max(...xs)];

export function buildHttpResults(o: { durationSec: number; rounds: number; servers: BenchServerName[]; workers?: number[] },
  run: { samples: HttpSample[]; interruptedBy?: string }): HttpBenchResults {
  const cells: HttpBenchResults['cells'] = {};
  for (const s of run.samples) {
    const key = cellKey(s);
    const row = (cells[key] ??= {});
    if (row[s.server]) continue;
    const mine = run.samples.filter((x) => x.server === s.server && cellKey(x) === key);
    // a median only where every round has the figure
    const medianOf = (f: (x: HttpSample) => number | undefined) => {
      const v = mine.map(f);
      return v.every((x) => x !== undefined) ? median(v as number[]) : undefined;
    };
    const [p50Us, p99Us, serverUsPerReq] = [medianOf((x) => x.p50Us), medianOf((x) => x.p99Us), medianOf((x) => x.serverUsPerReq)];
    const spreads = mine.filter((x) => x.perWorker !== undefined && x.perWorker.length > 0)
      .map((x) => ({ connections: range(x.perWorker!.map((w) => w.connections)), requests: range(x.perWorker!.map((w) => w.requests)) }));
    row[s.server] = {
      reqPerSec: median(mine.map((x) => x.reqPerSec)),
      ...(p50Us !== undefined ? { p50Us } : {}), ...(p99Us !== undefined ? { p99Us } : {}), ...(serverUsPerReq !== undefined ? { serverUsPerReq } : {}),
      ...(spreads.length === mine.length && spreads.length > 0 ? {
        spread: {
          connections: [median(spreads.map((x) => x.connections[0])), median(spreads.map((x) => x.connections[1]))],
          requests: [median(spreads.map((x) => x.requests[0])), median(spreads.map((x) => x.requests[1]))],
        },
      } : {}),
    };
  }
  const ratios: HttpBenchResults['ratios'] = {};
  const goals: HttpBenchResults['goals'] = [];
  const cutShort = run.interruptedBy !== undefined || run.samples.some((s) => s.partial);
  for (const [key, row] of Object.entries(cells)) {
    for (const [a, b] of pairs) {
      const x = row[a];
      const y = row[b];
      if (!x || !y || !y.reqPerSec) continue;
      const r = { reqPerSec: x.reqPerSec / y.reqPerSec, ...(x.p50Us !== undefined && y.p50Us ? { p50: x.p50Us / y.p50Us } : {}),
        ...(x.serverUsPerReq !== undefined && y.serverUsPerReq ? { usPerReq: x.serverUsPerReq / y.serverUsPerReq } : {}) };
      (ratios[key] ??= {})[`${a}/${b}`] = r;
      const goal = cellGoal(a, key);
      if (goal === undefined) continue;
      const ok = r.reqPerSec >= goal.reqPerSec && (goal.p50 === undefined || (r.p50 !== undefined && r.p50 <= goal.p50)) &&
        r.usPerReq !== undefined && r.usPerReq <= goal.usPerReq;
      goals.push({
        text: `${key}: ${a}/${b} req/s ${r.reqPerSec.toFixed(2)}x (goal >= ${goal.reqPerSec}x)` +
          (goal.p50 === undefined ? '' : `, p50 ${r.p50?.toFixed(2) ?? '-'}x (goal <= ${goal.p50}x)`) +
          `, CPU per request ${r.usPerReq?.toFixed(2) ?? '-'}x (goal <= ${goal.usPerReq}x)`,
        met: judged(ok, cutShort),
      });
    }
  }
  return {
    durationSec: o.durationSec, rounds: o.rounds, servers: o.servers,
    ...(o.workers ? { workers: o.workers, clusterScheduling: process.env.NODE_CLUSTER_SCHED_POLICY === 'none' ? 'none' as const : 'rr' as const } : {}),
    samples: run.samples, cells, ratios, goals,
    errors: run.samples.reduce((n, s) => n + s.errors, 0),
    interrupted: run.interruptedBy !== undefined, ...(run.interruptedBy ? { signal: run.interruptedBy } : {}),
  };
}

export function formatHttpResults(r: HttpBenchResults): string {
  const cut = r.interrupted ? ` (interrupted by ${r.signal}: partial, figures of the rounds that ran)` : '';
  const scheduling = r.clusterScheduling === undefined ? ''
    : r.clusterScheduling === 'rr' ? ', node:cluster round-robin' : ', node:cluster SCHED_NONE (the kernel gives the connections out)';
  const lines = [`HTTP servers under wrk, ${r.durationSec} s per run, median of ${r.rounds} round(s), loopback${scheduling}${cut}`, ''];
  const rows: string[][] = [];
  const workers = r.workers !== undefined;
  for (const [key, row] of Object.entries(r.cells)) {
    for (const [server, c] of Object.entries(row)) {
      const partial = r.samples.some((s) => s.partial && s.server === server && cellKey(s) === key);
      const spread = c!.spread ? [`${c!.spread.connections[0]}-${c!.spread.connections[1]}`, `${c!.spread.requests[0]}-${c!.spread.requests[1]}`] : ['-', '-'];
      rows.push([key, `${server}${partial ? ' (partial)' : ''}`, String(Math.round(c!.reqPerSec)), String(c!.p50Us ?? '-'), String(c!.p99Us ?? '-'),
        c!.serverUsPerReq?.toFixed(2) ?? '-', ...(workers ? spread : [])]);
    }
  }
  lines.push(table([workers ? 'workers, conns x in flight' : 'conns x in flight', 'server', 'req/s', 'p50 us', 'p99 us', 'server us/req',
    ...(workers ? ['conns/worker', 'req/worker'] : [])], rows).trimEnd());
  lines.push('(p50/p99: wrk\'s latency of a request, of a pipelined batch with more than 1 in flight, - where wrk gave none;');
  lines.push(workers
    ? ' server us/req: the CPU time of every process of the server (primary and workers) over the run / the requests answered; lower is better;\n' +
      ' conns/worker, req/worker: the fewest and the most one worker took over the run)'
    : ' server us/req: the server process\'s CPU time over the run / the requests answered; lower is better)');
  if (Object.keys(r.ratios).length > 0) {
    lines.push('', 'ratios (req/s: higher is better; p50 and CPU per request: lower is better):');
    for (const [key, byPair] of Object.entries(r.ratios)) {
      for (const [pair, x] of Object.entries(byPair)) {
        lines.push(`${key}: ${pair} req/s ${x.reqPerSec.toFixed(2)}x, p50 ${x.p50?.toFixed(2) ?? '-'}x, CPU per request ${x.usPerReq?.toFixed(2) ?? '-'}x`);
      }
    }
  }
  if (r.goals.length > 0) {
    lines.push('', 'goals:');
    for (const g of r.goals) lines.push(`${g.text}: ${verdictText(g.met, r.interrupted)}`);
  }
  if (r.errors) lines.push(`errors: ${r.errors} (wrk's connect, read, write, status and timeout errors; see --json)`);
  return lines.join('\n') + '\n';
}
