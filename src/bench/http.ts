// `iolab bench http`: the same node:http handler served by node's own server and on the Ring
// (onRing), and fastify on each where it is installed, under wrk (HTTP load in C, one thread by
// default, leaving the cores to the servers): req/s, p50/p99 latency and the server's CPU per
// request from /proc, at 1 to 1000 connections, with 1 and 10 requests in flight per
// connection (wrk's pipelining). With --workers, the servers of several processes instead:
// node:http and onRing under node:cluster, onRing with reusePort, their CPU summed over every
// process and the spread over the workers. Servers rotate within each round; the figures are
// medians of the rounds, printed with their ratios (http-results.ts).
import { Command, Option } from 'commander';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { commandLine, emitResults, oneLineErrors, UserError } from '../cli-util.js';
import { interruptedBy, interruption, markInterrupted } from '../interrupt.js';
import { durationOption, numberListOption, numberOption } from '../numbers.js';
import { childEnv, runDyingWithParent } from '../parent-death.js';
import { removeDeadRunsLeftovers, runFolderKind, runFolderPrefix } from '../leftovers.js';
import { resultsOption } from '../path-options.js';
import { cpuTicks } from '../procfs.js';
import { iolabArgv } from '../spawn-iolab.js';
import { raiseOpenFileLimitFor } from '../echo/load.js';
import { machineInfo } from './machine.js';
import { httpServerNames, loadFastify, serveCommand, type HttpServerName } from './http-servers.js';
import { workerServerNames, type WorkerCounts } from './http-workers.js';
import { buildHttpResults, formatHttpResults, type BenchServerName, type HttpSample } from './http-results.js';

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

interface Running {
  child: ChildProcess;
  port: number;
  /** Every process of the server: the one started, and its workers. */
  pids: number[];
  exited: Promise<void>;
  /** Each worker's connections and requests so far (a server of workers). */
  counts?: () => Promise<WorkerCounts[]>;
}

function startServer(name: BenchServerName, workers: number | undefined, signal: AbortSignal): Promise<Running | undefined> {
  const [file, argv] = iolabArgv(['bench', 'http', 'serve', '--server', name, ...(workers === undefined ? [] : ['--processes', String(workers)])]);
  const child = spawn(file, argv, { stdio: [workers === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'], env: childEnv(), detached: true });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  let out = '';
  const waiting: ((counts: WorkerCounts[]) => void)[] = [];
  const counts = () => new Promise<WorkerCounts[]>((resolve) => {
    waiting.push(resolve);
    child.stdin!.write('counts\n');
  });
  return new Promise((resolve, reject) => {
    let err = '';
    child.stderr!.on('data', (d: Buffer) => (err += d));
    child.stdout!.on('data', (d: Buffer) => {
      out += d;
      const lines = out.split('\n');
      out = lines.pop()!;
      for (const line of lines) {
        const m = JSON.parse(line) as { listening?: true; port: number; workers?: number[]; counts?: WorkerCounts[] };
        if (m.listening) resolve({ child, port: m.port, pids: [child.pid!, ...(m.workers ?? [])], exited, ...(workers === undefined ? {} : { counts }) });
        if (m.counts) waiting.shift()?.(m.counts);
      }
    });
    // stopped while it starts: a server of several processes can take seconds to listen
    const onAbort = () => child.kill('SIGTERM');
    signal.addEventListener('abort', onAbort, { once: true });
    child.once('exit', (code, killedBy) => {
      signal.removeEventListener('abort', onAbort);
      for (const w of waiting.splice(0)) w([]);
      if (signal.aborted) return resolve(undefined);
      reject(new UserError(`the ${name} server ${code !== null ? `exited with status ${code}` : `was killed by ${killedBy}`} before listening` +
        (err.trim() ? `: ${err.trim().split('\n').pop()}` : '')));
    });
  });
}

/** The CPU ticks of every process of a server, or undefined if one is gone. */
function serverTicks(s: Running): number | undefined {
  let sum = 0;
  for (const pid of s.pids) {
    const t = cpuTicks(pid);
    if (t === undefined) return undefined;
    sum += t;
  }
  return sum;
}

/** Each worker's share of a run: its counts after less before. */
function perWorkerOf(before: WorkerCounts[], after: WorkerCounts[]): WorkerCounts[] {
  return after.map((a) => {
    const b = before.find((x) => x.pid === a.pid);
    return { pid: a.pid, connections: a.connections - (b?.connections ?? 0), requests: a.requests - (b?.requests ?? 0) };
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
  servers: BenchServerName[];
  /** The worker counts of the servers of several processes (--workers); none: one process each. */
  workers?: number[];
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
      for (const workers of o.workers ?? [undefined]) {
        const servers = new Map<BenchServerName, Running>();
        for (const name of rotate(o.servers, round - 1)) {
          if (signal.aborted) break rounds;
          const s = await startServer(name, workers, signal);
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
              const countsBefore = await server.counts?.();
              const before = serverTicks(server);
              const run = await runDyingWithParent('wrk', ['-t', String(Math.min(o.threads, connections)), '-c', String(connections),
                '-d', `${o.durationSec}s`, '--timeout', '10s', '-s', script, `http://127.0.0.1:${server.port}/`], signal);
              const after = serverTicks(server);
              const countsAfter = signal.aborted ? undefined : await server.counts?.();
              const line = run.stdout.trim().split('\n').find((l) => l.startsWith('{"requests"'));
              if (line === undefined) {
                if (signal.aborted) break rounds;
                throw new UserError(`wrk failed (${run.exitCode !== null ? `status ${run.exitCode}` : run.signal}): ${run.stderr.trim().split('\n').pop() ?? 'no output'}`);
              }
              const m = JSON.parse(line) as { requests: number; durationUs: number; p50Us: number; p99Us: number; errors: number };
              const sample: HttpSample = {
                round, server: name, ...(workers === undefined ? {} : { workers }), connections, inFlight, requests: m.requests,
                reqPerSec: m.durationUs > 0 ? m.requests / (m.durationUs / 1e6) : 0,
                ...(m.p50Us >= 0 ? { p50Us: m.p50Us } : {}), ...(m.p99Us >= 0 ? { p99Us: m.p99Us } : {}), errors: m.errors,
                ...(before !== undefined && after !== undefined && m.requests > 0 ? { serverUsPerReq: ((after - before) * 1e6) / USER_HZ / m.requests } : {}),
                ...(countsBefore && countsAfter && countsAfter.length > 0 ? { perWorker: perWorkerOf(countsBefore, countsAfter) } : {}),
                ...(signal.aborted ? { partial: true } : {}),
              };
              samples.push(sample);
              const spread = sample.perWorker ? `, per worker ${sample.perWorker.map((w) => `${w.connections} conn ${w.requests} req`).join(' / ')}` : '';
              log(`round ${round} ${workers === undefined ? '' : `${workers} worker(s) `}${connections} conn x ${inFlight} ${name}: ${Math.round(sample.reqPerSec)} req/s, ` +
                `p50 ${sample.p50Us ?? '-'} us, p99 ${sample.p99Us ?? '-'} us, ${sample.serverUsPerReq?.toFixed(2) ?? '-'} us/req${spread}` +
                `${sample.errors ? `, ${sample.errors} errors` : ''}${sample.partial ? ' (partial)' : ''}`);
            }
          }
        }
        for (const s of servers.values()) {
          await stopServer(s);
          running.delete(s);
        }
      }
    }
  } finally {
    await Promise.all([...running].map(stopServer));
    rmSync(dir, { recursive: true, force: true });
  }
  return { samples, ...(signal.aborted ? { interruptedBy: interruptedBy() ?? 'a signal' } : {}) };
}

interface CommandOptions {
  connections: number[];
  inFlight: number[];
  duration: number;
  rounds: number;
  servers?: string;
  workers?: number[] | true;
  threads: number;
  output?: string;
  json?: boolean;
}

function serversFrom(value: string | undefined, workers: boolean): BenchServerName[] {
  const known: readonly string[] = workers ? workerServerNames : httpServerNames;
  const fastify = !workers && loadFastify() !== undefined;
  if (value === undefined) return workers ? [...workerServerNames] : fastify ? [...httpServerNames] : ['node', 'ring'];
  const names = value.split(',').map((s) => s.trim()).filter((s) => s !== '');
  const unknown = names.filter((n) => !known.includes(n));
  if (names.length === 0 || unknown.length > 0) {
    throw new UserError(`--servers: expected a comma-separated list of ${known.join(', ')}${workers ? ' (the servers of --workers)' : ''}, got '${value}'`);
  }
  if (!workers && !fastify && names.some((n) => n.startsWith('fastify'))) throw new UserError('--servers: the fastify servers need fastify installed (npm install fastify)');
  return names as BenchServerName[];
}

export function benchHttpCommand(): Command {
  const cmd = new Command('http')
    .description('node:http on the Ring (onRing) against node\'s own server, and fastify on each where installed, under wrk: req/s, p50/p99 latency and the server\'s CPU per request, medians and ratios to node; with --workers, on several processes (node:cluster, reusePort)')
    .option('--connections <list>', 'connection counts (wrk -c)', numberListOption({ min: 1, max: 10000 }), [1, 100, 1000])
    .option('--in-flight <list>', 'requests in flight per connection: 1, or more pipelined by wrk', numberListOption({ min: 1, max: 100 }), [1, 10])
    .addOption(new Option('--duration <time>', 'time per run: 5, 2m (a bare number is seconds), whole seconds (wrk\'s)')
      .argParser(durationOption({ wholeSeconds: true })).default(5000, '5s'))
    .option('--rounds <n>', 'rounds (servers alternate within each)', numberOption({ min: 1 }), 3)
    .option('--servers <list>', `servers, comma-separated (${httpServerNames.join(', ')}; default: all, the fastify ones where fastify is installed; with --workers: ${workerServerNames.join(', ')}, default all)`)
    .option('--workers [list]', 'servers of several processes instead, at each of these worker counts (default 1,2): node:http and onRing under node:cluster, onRing with reusePort', numberListOption({ min: 1, max: 1024 }))
    .option('--threads <n>', 'wrk threads', numberOption({ min: 1, max: 64 }), 1)
    .option('--json', 'print the results as JSON instead of the table')
    .addOption(resultsOption('also write the results as JSON to this file (npm run bench:http: bench-results/http.json)'))
    .option('--force', 'replace an existing --output file (or a symlink itself, never its target)')
    .addHelpText('after', `
Needs wrk (Debian: apt-get install wrk). Every server answers GET / with "hello world" from the
same node:http handler; "ring" is that server with onRing(), the one line a user changes.
With --workers, each server is N processes: node-cluster (node:http under node:cluster),
ring-cluster (the same with onRing), ring-reuseport (onRing, listen({ reusePort: true }) in
each worker: a socket each); node:cluster schedules round-robin unless the environment says
NODE_CLUSTER_SCHED_POLICY=none. The CPU per request sums every process of a server; the
spread columns give the fewest and most connections and requests one worker took.

Examples:
  $ iolab bench http --connections 1,100 --duration 3
  $ iolab bench http --servers node,ring --in-flight 1
  $ iolab bench http --workers 1,2 --connections 100 --in-flight 1`)
    .action(async (opts: CommandOptions) => {
      const workers = opts.workers === true ? [1, 2] : opts.workers;
      const options: HttpBenchOptions = {
        connections: opts.connections, inFlight: opts.inFlight, durationSec: opts.duration / 1000, rounds: opts.rounds,
        servers: serversFrom(opts.servers, workers !== undefined), ...(workers ? { workers } : {}), threads: opts.threads,
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
