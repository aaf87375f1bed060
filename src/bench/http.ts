// `iolab bench http`: the same node:http handler served by node's own server and on the Ring
// (onRing), and fastify on each where it is installed, under wrk (HTTP load in C, one thread by
// default, leaving the cores to the servers): req/s, p50/p99 latency and the server's CPU per
// request from /proc, at 1 to 1000 connections, with 1 and 10 requests in flight per
// connection (wrk's pipelining). Servers rotate within each round; the figures are medians of
// the rounds, printed with their ratios to node and the goals.
import { Command, Option } from 'commander';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { commandLine, emitResults, oneLineErrors, UserError } from '../cli-util.js';
import { median, table } from '../format.js';
import { interruptedBy, interruption, markInterrupted } from '../interrupt.js';
import { durationOption, numberListOption, numberOption } from '../numbers.js';
import { childEnv, runDyingWithParent } from '../parent-death.js';
import { removeDeadRunsLeftovers, runFolderKind, runFolderPrefix } from '../leftovers.js';
import { judged, verdictText } from './goals.js';
import { resultsOption } from '../path-options.js';
import { cpuTicks } from '../procfs.js';
import { iolabArgv } from '../spawn-iolab.js';
import { raiseOpenFileLimitFor } from '../echo/load.js';
import { machineInfo } from './machine.js';
import { httpServerNames, loadFastify, serveCommand, type HttpServerName } from './http-servers.js';

export interface HttpSample {
  round: number;
  server: HttpServerName;
  connections: number;
  /** Requests in flight per connection (wrk's pipelining). */
  inFlight: number;
  reqPerSec: number;
  requests: number;
  /** Latency of a request (of a pipelined batch with inFlight > 1), wrk's, in microseconds;
   * none where wrk gave none. */
  p50Us?: number;
  p99Us?: number;
  /** The server process's CPU time over the run / the requests answered, in microseconds. */
  serverUsPerReq?: number;
  errors: number;
  partial?: boolean;
}

export interface HttpCell { reqPerSec: number; p50Us?: number; p99Us?: number; serverUsPerReq?: number }

const USER_HZ = 100; // /proc's clock ticks per second (procfs.ts)

/** wrk's Lua: pipelined requests (inFlight > 1), and one JSON line of what it measured. */
function wrkScript(inFlight: number): string {
  const pipelined = inFlight > 1 ? `
local req
request = function()
  if req == nil then
    local r = {}
    for i = 1, ${inFlight} do r[i] = wrk.format(nil, "/") end
    req = table.concat(r)
  end
  return req
end` : '';
  // wrk's own percentiles (what its --latency prints). Its 4.1 returns 0 where its histogram
  // holds fewer samples than it counted (seen with pipelining): then there is no figure (-1).
  return `${pipelined}
local function percentile(s, p)
  local v = s:percentile(p)
  if v == 0 then return -1 end
  return v
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('{"requests":%.0f,"durationUs":%.0f,"p50Us":%.0f,"p99Us":%.0f,"errors":%.0f}\\n',
    summary.requests, summary.duration, percentile(latency, 50), percentile(latency, 99),
    e.connect + e.read + e.write + e.status + e.timeout))
end
`;
}

interface Running { child: ChildProcess; port: number; exited: Promise<void> }

function startServer(name: HttpServerName, signal: AbortSignal): Promise<Running | undefined> {
  const [file, argv] = iolabArgv(['bench', 'http', 'serve', '--server', name]);
  const child = spawn(file, argv, { stdio: ['ignore', 'pipe', 'pipe'], env: childEnv(), detached: true });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stderr!.on('data', (d: Buffer) => (err += d));
    child.stdout!.on('data', (d: Buffer) => {
      out += d;
      const line = out.split('\n').find((l) => l.includes('"listening"'));
      if (line) resolve({ child, port: (JSON.parse(line) as { port: number }).port, exited });
    });
    child.once('exit', (code, killedBy) => {
      if (signal.aborted) return resolve(undefined);
      reject(new UserError(`the ${name} server ${code !== null ? `exited with status ${code}` : `was killed by ${killedBy}`} before listening` +
        (err.trim() ? `: ${err.trim().split('\n').pop()}` : '')));
    });
  });
}

async function stopServer(s: Running): Promise<void> {
  if (s.child.exitCode !== null || s.child.signalCode !== null) return;
  s.child.kill('SIGTERM');
  const timer = setTimeout(() => s.child.kill('SIGKILL'), 5000);
  await s.exited;
  clearTimeout(timer);
}

export interface HttpBenchOptions {
  connections: number[];
  inFlight: number[];
  durationSec: number;
  rounds: number;
  servers: HttpServerName[];
  threads: number;
}

const rotate = <T>(xs: readonly T[], by: number) => xs.map((_, i) => xs[(i + by) % xs.length]);

export async function runHttpBench(o: HttpBenchOptions, log: (line: string) => void): Promise<{ samples: HttpSample[]; interruptedBy?: string }> {
  const signal = interruption();
  removeDeadRunsLeftovers([runFolderKind('iolab-bench-http')], 'a bench http run');
  const dir = mkdtempSync(runFolderPrefix('iolab-bench-http'));
  const samples: HttpSample[] = [];
  const running = new Set<Running>();
  try {
    rounds: for (let round = 1; round <= o.rounds; round++) {
      const servers = new Map<HttpServerName, Running>();
      for (const name of rotate(o.servers, round - 1)) {
        if (signal.aborted) break rounds;
        const s = await startServer(name, signal);
        if (s === undefined) break rounds;
        running.add(s);
        servers.set(name, s);
      }
      for (const connections of o.connections) {
        for (const inFlight of o.inFlight) {
          for (const name of rotate(o.servers, round - 1)) {
            if (signal.aborted) break rounds;
            const server = servers.get(name)!;
            const script = join(dir, `pipeline-${inFlight}.lua`);
            writeFileSync(script, wrkScript(inFlight));
            const before = cpuTicks(server.child.pid!);
            const run = await runDyingWithParent('wrk', ['-t', String(Math.min(o.threads, connections)), '-c', String(connections),
              '-d', `${o.durationSec}s`, '--timeout', '10s', '-s', script, `http://127.0.0.1:${server.port}/`], signal);
            const after = cpuTicks(server.child.pid!);
            const line = run.stdout.trim().split('\n').find((l) => l.startsWith('{"requests"'));
            if (line === undefined) {
              if (signal.aborted) break rounds;
              throw new UserError(`wrk failed (${run.exitCode !== null ? `status ${run.exitCode}` : run.signal}): ${run.stderr.trim().split('\n').pop() ?? 'no output'}`);
            }
            const m = JSON.parse(line) as { requests: number; durationUs: number; p50Us: number; p99Us: number; errors: number };
            const sample: HttpSample = {
              round, server: name, connections, inFlight, requests: m.requests, reqPerSec: m.durationUs > 0 ? m.requests / (m.durationUs / 1e6) : 0,
              ...(m.p50Us >= 0 ? { p50Us: m.p50Us } : {}), ...(m.p99Us >= 0 ? { p99Us: m.p99Us } : {}), errors: m.errors,
              ...(before !== undefined && after !== undefined && m.requests > 0 ? { serverUsPerReq: ((after - before) * 1e6) / USER_HZ / m.requests } : {}),
              ...(signal.aborted ? { partial: true } : {}),
            };
            samples.push(sample);
            log(`round ${round} ${connections} conn x ${inFlight} ${name}: ${Math.round(sample.reqPerSec)} req/s, p50 ${sample.p50Us ?? '-'} us, p99 ${sample.p99Us ?? '-'} us, ` +
              `${sample.serverUsPerReq?.toFixed(2) ?? '-'} us/req${sample.errors ? `, ${sample.errors} errors` : ''}${sample.partial ? ' (partial)' : ''}`);
          }
        }
      }
      for (const s of servers.values()) {
        await stopServer(s);
        running.delete(s);
      }
    }
  } finally {
    await Promise.all([...running].map(stopServer));
    rmSync(dir, { recursive: true, force: true });
  }
  return { samples, ...(signal.aborted ? { interruptedBy: interruptedBy() ?? 'a signal' } : {}) };
}

export interface HttpBenchResults {
  durationSec: number;
  rounds: number;
  servers: HttpServerName[];
  samples: HttpSample[];
  /** "connections x inFlight" -> server -> medians of the rounds */
  cells: Record<string, Partial<Record<HttpServerName, HttpCell>>>;
  /** "connections x inFlight" -> 'ring/node'...: req/s, p50 and CPU per request of the first over the second's */
  ratios: Record<string, Record<string, { reqPerSec: number; p50?: number; usPerReq?: number }>>;
  /** met: null when the run was cut short (src/bench/goals.ts). */
  goals: { text: string; met: boolean | null }[];
  errors: number;
  interrupted: boolean;
  signal?: string;
}

const pairs: [HttpServerName, HttpServerName][] = [['ring', 'node'], ['fastify-ring', 'fastify']];

export function buildHttpResults(o: HttpBenchOptions, run: { samples: HttpSample[]; interruptedBy?: string }): HttpBenchResults {
  const cells: HttpBenchResults['cells'] = {};
  for (const s of run.samples) {
    const key = `${s.connections} x ${s.inFlight}`;
    const row = (cells[key] ??= {});
    if (row[s.server]) continue;
    const mine = run.samples.filter((x) => x.server === s.server && x.connections === s.connections && x.inFlight === s.inFlight);
    // a median only where every round has the figure
    const medianOf = (f: (x: HttpSample) => number | undefined) => {
      const v = mine.map(f);
      return v.every((x) => x !== undefined) ? median(v as number[]) : undefined;
    };
    const [p50Us, p99Us, serverUsPerReq] = [medianOf((x) => x.p50Us), medianOf((x) => x.p99Us), medianOf((x) => x.serverUsPerReq)];
    row[s.server] = {
      reqPerSec: median(mine.map((x) => x.reqPerSec)),
      ...(p50Us !== undefined ? { p50Us } : {}), ...(p99Us !== undefined ? { p99Us } : {}), ...(serverUsPerReq !== undefined ? { serverUsPerReq } : {}),
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
      if (a !== 'ring') continue;
      const [connections, inFlight] = key.split(' x ').map(Number);
      if (connections === 1 && inFlight === 1) {
        goals.push({ text: `1 connection: ring/node req/s ${r.reqPerSec.toFixed(2)}x (goal >= 0.9x), p50 ${r.p50?.toFixed(2) ?? '-'}x (goal <= 1x)`,
          met: judged(r.reqPerSec >= 0.9 && r.p50 !== undefined && r.p50 <= 1, cutShort) });
      } else if (connections >= 100) {
        goals.push({ text: `${key}: ring/node req/s ${r.reqPerSec.toFixed(2)}x (goal >= 1.3x), CPU per request ${r.usPerReq?.toFixed(2) ?? '-'}x (goal <= 0.8x)`,
          met: judged(r.reqPerSec >= 1.3 && r.usPerReq !== undefined && r.usPerReq <= 0.8, cutShort) });
      }
    }
  }
  return {
    durationSec: o.durationSec, rounds: o.rounds, servers: o.servers, samples: run.samples, cells, ratios, goals,
    errors: run.samples.reduce((n, s) => n + s.errors, 0),
    interrupted: run.interruptedBy !== undefined, ...(run.interruptedBy ? { signal: run.interruptedBy } : {}),
  };
}

export function formatHttpResults(r: HttpBenchResults): string {
  const cut = r.interrupted ? ` (interrupted by ${r.signal}: partial, figures of the rounds that ran)` : '';
  const lines = [`HTTP servers under wrk, ${r.durationSec} s per run, median of ${r.rounds} round(s), loopback${cut}`, ''];
  const rows: string[][] = [];
  for (const [key, row] of Object.entries(r.cells)) {
    for (const [server, c] of Object.entries(row)) {
      const partial = r.samples.some((s) => s.partial && s.server === server && `${s.connections} x ${s.inFlight}` === key);
      rows.push([key, `${server}${partial ? ' (partial)' : ''}`, String(Math.round(c!.reqPerSec)), String(c!.p50Us ?? '-'), String(c!.p99Us ?? '-'), c!.serverUsPerReq?.toFixed(2) ?? '-']);
    }
  }
  lines.push(table(['conns x in flight', 'server', 'req/s', 'p50 us', 'p99 us', 'server us/req'], rows).trimEnd());
  lines.push('(p50/p99: wrk\'s latency of a request, of a pipelined batch with more than 1 in flight, - where wrk gave none;');
  lines.push(' server us/req: the server process\'s CPU time over the run / the requests answered; lower is better)');
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

interface CommandOptions {
  connections: number[];
  inFlight: number[];
  duration: number;
  rounds: number;
  servers?: string;
  threads: number;
  output?: string;
  json?: boolean;
}

function serversFrom(value: string | undefined): HttpServerName[] {
  const fastify = loadFastify() !== undefined;
  if (value === undefined) return fastify ? [...httpServerNames] : ['node', 'ring'];
  const names = value.split(',').map((s) => s.trim()).filter((s) => s !== '');
  const unknown = names.filter((n) => !(httpServerNames as readonly string[]).includes(n));
  if (names.length === 0 || unknown.length > 0) throw new UserError(`--servers: expected a comma-separated list of ${httpServerNames.join(', ')}, got '${value}'`);
  if (!fastify && names.some((n) => n.startsWith('fastify'))) throw new UserError('--servers: the fastify servers need fastify installed (npm install fastify)');
  return names as HttpServerName[];
}

export function benchHttpCommand(): Command {
  const cmd = new Command('http')
    .description('node:http on the Ring (onRing) against node\'s own server, and fastify on each where installed, under wrk: req/s, p50/p99 latency and the server\'s CPU per request, medians and ratios to node')
    .option('--connections <list>', 'connection counts (wrk -c)', numberListOption({ min: 1, max: 10000 }), [1, 100, 1000])
    .option('--in-flight <list>', 'requests in flight per connection: 1, or more pipelined by wrk', numberListOption({ min: 1, max: 100 }), [1, 10])
    .addOption(new Option('--duration <time>', 'time per run: 5, 2m (a bare number is seconds), whole seconds (wrk\'s)')
      .argParser(durationOption({ wholeSeconds: true })).default(5000, '5s'))
    .option('--rounds <n>', 'rounds (servers alternate within each)', numberOption({ min: 1 }), 3)
    .option('--servers <list>', `servers, comma-separated (${httpServerNames.join(', ')}; default: all, the fastify ones where fastify is installed)`)
    .option('--threads <n>', 'wrk threads', numberOption({ min: 1, max: 64 }), 1)
    .option('--json', 'print the results as JSON instead of the table')
    .addOption(resultsOption('also write the results as JSON to this file (npm run bench:http: bench-results/http.json)'))
    .option('--force', 'replace an existing --output file (or a symlink itself, never its target)')
    .addHelpText('after', `
Needs wrk (Debian: apt-get install wrk). Every server answers GET / with "hello world" from the
same node:http handler; "ring" is that server with onRing(), the one line a user changes.

Examples:
  $ iolab bench http --connections 1,100 --duration 3
  $ iolab bench http --servers node,ring --in-flight 1`)
    .action(async (opts: CommandOptions) => {
      const options: HttpBenchOptions = {
        connections: opts.connections, inFlight: opts.inFlight, durationSec: opts.duration / 1000, rounds: opts.rounds,
        servers: serversFrom(opts.servers), threads: opts.threads,
      };
      if (spawnSync('wrk', ['-v']).error !== undefined) throw new UserError('bench http needs wrk on PATH (Debian: apt-get install wrk)');
      // before any server starts: they inherit the raised limit
      raiseOpenFileLimitFor(Math.max(...opts.connections), '--connections');
      const run = await runHttpBench(options, (line) => { if (!opts.json) process.stderr.write(`${line}\n`); });
      const results = buildHttpResults(options, run);
      emitResults(opts, { ...results, machine: machineInfo(), command: commandLine(), date: new Date().toISOString() }, formatHttpResults(results));
      if (run.interruptedBy) markInterrupted();
      else if (results.errors) process.exitCode = 1;
    });
  cmd.addCommand(serveCommand(), { hidden: true });
  return oneLineErrors(cmd);
}
