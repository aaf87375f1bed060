// bench http's JSON: per cell (connections x requests in flight) and server, the medians of the
// rounds (req/s, the server's CPU per request, p50/p99), and the ratios of each pair (ring/node,
// fastify-ring/fastify). The servers are read from the cells, not from a list: a server bench
// http gains later charts as it is.
import { common, isObject, num, type Common, type Json, type Ratio } from './json-fields.js';

/** One server at one cell: the medians of the rounds. */
export interface HttpPoint { server: string; connections: number; inFlight: number; reqPerSec: number; serverUsPerReq?: number; p50Us?: number }
export interface HttpInput extends Common { kind: 'http'; durationSec?: number; points: HttpPoint[]; ratios: Ratio[] }

/** "100 x 10" -> [100, 10]. */
function cellKey(key: string): [number, number] | undefined {
  const m = /^(\d+) x (\d+)$/.exec(key.trim());
  return m ? [Number(m[1]), Number(m[2])] : undefined;
}

export function readHttp(file: string, json: Json): HttpInput {
  const points: HttpPoint[] = [];
  for (const [key, row] of Object.entries(json.cells as Json)) {
    const at = cellKey(key);
    if (!at || !isObject(row)) continue;
    for (const [server, cell] of Object.entries(row)) {
      const reqPerSec = isObject(cell) ? num(cell.reqPerSec) : undefined;
      if (!isObject(cell) || reqPerSec === undefined || reqPerSec <= 0) continue;
      const us = num(cell.serverUsPerReq);
      const p50 = num(cell.p50Us);
      points.push({ server, connections: at[0], inFlight: at[1], reqPerSec, ...(us !== undefined ? { serverUsPerReq: us } : {}),
        ...(p50 !== undefined ? { p50Us: p50 } : {}) });
    }
  }
  const ratios: Ratio[] = [];
  for (const [key, byPair] of Object.entries(isObject(json.ratios) ? json.ratios : {})) {
    for (const [pair, r] of Object.entries(isObject(byPair) ? byPair : {})) {
      if (!isObject(r)) continue;
      const where = `${pair} at ${key.replace(' x ', ' connections x ')} in flight`;
      if (num(r.reqPerSec) !== undefined) ratios.push({ table: 'bench http req/s ratios (higher is faster)', name: where, value: num(r.reqPerSec)! });
      if (num(r.usPerReq) !== undefined) ratios.push({ table: 'bench http CPU per request ratios (lower is leaner)', name: where, value: num(r.usPerReq)! });
    }
  }
  return { kind: 'http', ...common(file, json), durationSec: num(json.durationSec), points, ratios };
}
