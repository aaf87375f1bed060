// `iolab bench echo`: the options, the results (CPU per request and req/s: medians, ratios) and their table. The runs
// themselves are in echo-run.ts, the two-namespace setup in netns.ts.
import { Command, Option } from 'commander';
import { commandLine, emitResults, oneLineErrors, UserError } from '../cli-util.js';
import { median, ratio, table } from '../format.js';
import { markInterrupted } from '../interrupt.js';
import { durationOption, numberListOption, numberOption } from '../numbers.js';
import { resultsOption } from '../path-options.js';
import { generatorModes, raiseOpenFileLimitFor, type GeneratorMode } from '../echo/load.js';
import { echoServerNames, type EchoServerName } from '../echo/servers.js';
import { generatorAliases, knownNames, optionAlias, serverAliases } from '../aliases.js';
import { machineInfo } from './machine.js';
import { judged, verdictText } from './goals.js';
import { ms, runEchoBench, us, type EchoBenchOptions, type EchoBenchRun, type EchoSample } from './echo-run.js';
import { checkNetnsAllowed, parseNetem, type NetnsLink } from './netns.js';

/** Medians over the rounds of one server at one client count under one generator. */
export interface EchoCell {
  /** CPU time per response (us): the server process's, the generator's threads'. */
  serverUsPerReq?: number;
  generatorUsPerReq?: number;
  reqPerSec: number;
  /** Latency per message, send to full echo (ms): the median over the rounds of each round's
   * p50 and p99 (the generator's histogram, under 1.6% error). */
  p50Ms?: number;
  p99Ms?: number;
}

/** The latency goal at 1 client: the ring server's p50 within 1.2x the C io_uring server's and
 * at or below node's. Ratios are of the cells' p50 (median of the rounds). */
export interface LatencyGoal {
  generator: string;
  clients: number;
  p50Ms: Record<string, number>;
  /** 'ring/io_uring', 'ring/node': where both ran. */
  ratios: Record<string, number>;
  /** Each part's bound and whether it was met; a part whose peer did not run is left out. met:
   * null when the run was cut short (src/bench/goals.ts). */
  parts: { pair: string; atMost: number; met: boolean | null }[];
  met: boolean | null;
}

type ByClients<T> = Record<string, T>;

export interface EchoBenchResults {
  length: number;
  duration: number;
  rounds: number;
  servers: EchoServerName[];
  generators: GeneratorMode[];
  netns: boolean;
  link?: NetnsLink;
  samples: EchoSample[];
  /** generator -> clients -> server -> medians */
  byGenerator: Record<string, ByClients<Record<string, EchoCell>>>;
  /** generator -> clients -> 'io_uring/epoll'...: server us/req of the first over the second's
   * (lower is better: 0.5 = the first spends half the CPU per request). */
  usPerReqRatios: Record<string, ByClients<Record<string, number>>>;
  /** generator -> clients -> pair: req/s of the first over the second's. */
  reqPerSecRatios: Record<string, ByClients<Record<string, number>>>;
  /** generator -> clients -> pair: p50 latency of the first over the second's (lower is better). */
  p50Ratios: Record<string, ByClients<Record<string, number>>>;
  /** At 1 client, per generator where the ring server ran. */
  latencyGoals: LatencyGoal[];
  /** clients -> server -> median req/s, and clients -> pair -> req/s ratio, under the first
   * generator: what results before the generators were keyed held; ratios adds
   * 'generator/thread-per-conn' where both ran: the epoll server's req/s under the epoll
   * generator over its req/s under the thread-per-connection one. */
  medians: ByClients<Record<string, number>>;
  ratios: ByClients<Record<string, number>>;
  errors: number;
  interrupted: boolean;
  signal?: string;
}

// ring/io_uring: the TypeScript server on the Ring against the C one on the same calls;
// duplex/ring: what node:stream costs on the Ring; duplex/node: RingSocket against net.Socket
const ratioPairs: [string, string][] = [
  ['io_uring', 'epoll'], ['io_uring', 'node'], ['epoll', 'node'], ['ring', 'node'], ['ring', 'io_uring'], ['duplex', 'ring'], ['duplex', 'node'],
];

function pairRatios<T>(cells: ByClients<Record<string, T>>, value: (c: T) => number | undefined): ByClients<Record<string, number>> {
  const out: ByClients<Record<string, number>> = {};
  for (const [clients, m] of Object.entries(cells)) {
    for (const [a, b] of ratioPairs) {
      const x = m[a] !== undefined ? value(m[a]) : undefined;
      const y = m[b] !== undefined ? value(m[b]) : undefined;
      if (x !== undefined && y) (out[clients] ??= {})[`${a}/${b}`] = x / y;
    }
  }
  return out;
}

const goalBounds: [string, number][] = [['ring/io_uring', 1.2], ['ring/node', 1.0]];

function latencyGoal(generator: string, cells: Record<string, EchoCell> | undefined, ratios: Record<string, number>, cutShort: boolean): LatencyGoal | undefined {
  if (cells?.ring?.p50Ms === undefined) return undefined;
  const p50Ms: Record<string, number> = {};
  for (const server of ['ring', 'io_uring', 'node']) if (cells[server]?.p50Ms !== undefined) p50Ms[server] = cells[server].p50Ms!;
  const mine = Object.fromEntries(goalBounds.filter(([pair]) => ratios[pair] !== undefined).map(([pair]) => [pair, ratios[pair]]));
  const parts = goalBounds.filter(([pair]) => mine[pair] !== undefined).map(([pair, atMost]) => ({ pair, atMost, met: judged(mine[pair] <= atMost, cutShort) }));
  return { generator, clients: 1, p50Ms, ratios: mine, parts, met: judged(parts.length === goalBounds.length && parts.every((p) => p.met), cutShort) };
}

/** The goal line: the ring server's p50 against io_uring's and node's, each with its ratio and bound. */
function goalLine(g: LatencyGoal): string {
  const parts = goalBounds.map(([pair, atMost]) => {
    const peer = pair.split('/')[1];
    const part = g.parts.find((p) => p.pair === pair);
    if (!part) return `${peer} not run`;
    return `${ratio(g.ratios[pair], 1)} ${peer}'s ${ms(g.p50Ms[peer])} ms (goal <= ${atMost.toFixed(1)}x: ${verdictText(part.met, false, { met: 'met', notMet: 'NOT met' })})`;
  });
  return `latency goal at 1 client, ${g.generator} generator: ring p50 ${ms(g.p50Ms.ring)} ms = ${parts.join(', ')}` +
    (g.parts.length < goalBounds.length && g.met !== null ? ' (not all peers ran: the goal is not shown met)' : '');
}

export function buildEchoResults(o: EchoBenchOptions, run: EchoBenchRun): EchoBenchResults {
  const byGenerator: EchoBenchResults['byGenerator'] = {};
  for (const s of run.samples) {
    const cells = (byGenerator[s.generator] ??= {});
    const row = (cells[String(s.clients)] ??= {});
    if (row[s.contender]) continue;
    const mine = run.samples.filter((x) => x.generator === s.generator && x.clients === s.clients && x.contender === s.contender);
    // a median of us/req only where every round has one
    const medianOf = (f: (x: EchoSample) => number | undefined) => {
      const v = mine.map(f);
      return v.every((x) => x !== undefined) ? median(v as number[]) : undefined;
    };
    const server = medianOf((x) => x.serverUsPerReq);
    const generator = medianOf((x) => x.generatorUsPerReq);
    const p50 = medianOf((x) => x.p50Ms);
    const p99 = medianOf((x) => x.p99Ms);
    row[s.contender] = { ...(server !== undefined ? { serverUsPerReq: server } : {}),
      ...(generator !== undefined ? { generatorUsPerReq: generator } : {}), reqPerSec: median(mine.map((x) => x.reqPerSec)),
      ...(p50 !== undefined ? { p50Ms: p50 } : {}), ...(p99 !== undefined ? { p99Ms: p99 } : {}) };
  }
  const usPerReqRatios: EchoBenchResults['usPerReqRatios'] = {};
  const reqPerSecRatios: EchoBenchResults['reqPerSecRatios'] = {};
  const p50Ratios: EchoBenchResults['p50Ratios'] = {};
  const latencyGoals: LatencyGoal[] = [];
  const cutShort = run.interruptedBy !== undefined || run.samples.some((s) => s.partial);
  for (const [g, cells] of Object.entries(byGenerator)) {
    usPerReqRatios[g] = pairRatios(cells, (c) => c.serverUsPerReq);
    reqPerSecRatios[g] = pairRatios(cells, (c) => c.reqPerSec);
    p50Ratios[g] = pairRatios(cells, (c) => c.p50Ms);
    const goal = latencyGoal(g, cells['1'], p50Ratios[g]['1'] ?? {}, cutShort);
    if (goal) latencyGoals.push(goal);
  }
  const first = byGenerator[o.generators[0]] ?? {};
  const medians: EchoBenchResults['medians'] = {};
  for (const [clients, m] of Object.entries(first)) {
    medians[clients] = Object.fromEntries(Object.entries(m).map(([e, c]) => [e, c.reqPerSec]));
  }
  const ratios: EchoBenchResults['ratios'] = structuredClone(reqPerSecRatios[o.generators[0]] ?? {});
  for (const [clients, m] of Object.entries(byGenerator.epoll ?? {})) {
    const other = byGenerator.threads?.[clients]?.epoll;
    if (m.epoll && other?.reqPerSec) (ratios[clients] ??= {})['generator/thread-per-conn'] = m.epoll.reqPerSec / other.reqPerSec;
  }
  return {
    length: o.length, duration: o.durationSec, rounds: o.rounds, servers: o.servers, generators: o.generators, netns: o.netns,
    ...(run.link ? { link: run.link } : {}),
    samples: run.samples, byGenerator, usPerReqRatios, reqPerSecRatios, p50Ratios, latencyGoals, medians, ratios,
    errors: run.samples.reduce((n, s) => n + s.errors, 0),
    interrupted: run.interruptedBy !== undefined, ...(run.interruptedBy ? { signal: run.interruptedBy } : {}),
  };
}

export function formatEchoResults(r: EchoBenchResults): string {
  const where = r.link
    ? `two network namespaces over a veth pair (mtu ${r.link.mtu}${r.link.netem ? `, netem ${Object.entries(r.link.netem).map(([k, v]) => `${k} ${v}`).join(' ')}` : ''})`
    : 'loopback';
  const lines = [`echo servers, ${r.length} B messages, ${r.duration} s per run, median of ${r.rounds} round(s), ${where}`, ''];
  const rows: string[][] = [];
  for (const [generator, cells] of Object.entries(r.byGenerator)) {
    for (const [clients, m] of Object.entries(cells)) {
      for (const [server, c] of Object.entries(m)) {
        const mine = r.samples.filter((s) => s.generator === generator && String(s.clients) === clients && s.contender === server);
        const partial = mine.some((s) => s.partial);
        rows.push([`${server}${partial ? ' (partial)' : ''}`, clients, generator, us(c.serverUsPerReq), us(c.generatorUsPerReq),
          String(Math.round(c.reqPerSec)), ms(c.p50Ms), ms(c.p99Ms), mine.map((s) => `${us(s.serverUsPerReq)}${s.partial ? '*' : ''}`).join(' ')]);
      }
    }
  }
  lines.push(table(['server', 'clients', 'generator', 'server us/req', 'generator us/req', 'req/s', 'p50 ms', 'p99 ms', 'rounds (server us/req)'], rows).trimEnd());
  lines.push('(us/req: CPU time over the measured window / the responses counted in it, median of the rounds; server: the server');
  lines.push(' process, generator: the load generator\'s threads; lower is better. req/s: responses per second of the window.');
  lines.push(' p50, p99: latency per message, send to full echo, each the median of the rounds\' own)');
  lines.push('');
  // the ratios only where two servers were compared (one server has none)
  const ratioLines: string[] = [];
  for (const [generator, byClients] of Object.entries(r.usPerReqRatios)) {
    for (const [clients, pairs] of Object.entries(byClients)) {
      if (Object.keys(pairs).length === 0) continue;
      ratioLines.push(`${generator} generator, ${clients} client${clients === '1' ? '' : 's'}: ` + Object.entries(pairs).map(([k, v]) => `${k} ${ratio(v, 1)}`).join(', '));
    }
  }
  if (ratioLines.length > 0) {
    lines.push('server us/req ratios (lower is better: 0.50x = the first spends half the CPU per request of the second):', ...ratioLines);
  }
  for (const g of r.latencyGoals) lines.push(goalLine(g));
  if (r.errors) lines.push(`errors: ${r.errors} (see --json)`);
  if (r.interrupted) {
    // the * only when the table has one: a signal between two runs cut none short
    const cut = r.samples.some((s) => s.partial) ? ' — * marks a run cut short (its figures over the time it ran)' : '';
    lines.push(`interrupted (${r.signal}): partial${cut}; runs after it did not start`);
  }
  return lines.join('\n') + '\n';
}

interface CommandOptions {
  clients: number[];
  duration: number;
  rounds: number;
  length: number;
  servers: string;
  generators: string;
  netns?: boolean;
  netem?: string;
  output?: string;
  json?: boolean;
}

function optionsFrom(opts: CommandOptions): EchoBenchOptions {
  const servers = knownNames(opts.servers, echoServerNames, serverAliases, 'server');
  if (opts.netem !== undefined && !opts.netns) throw new UserError('--netem needs --netns (it shapes the veth link between the namespaces)');
  const netem = opts.netem !== undefined ? parseNetem(opts.netem) : undefined;
  if (opts.netns) checkNetnsAllowed();
  const generators: GeneratorMode[] = knownNames(opts.generators, generatorModes, generatorAliases, 'generator');
  // before any server starts: they inherit the raised limit
  raiseOpenFileLimitFor(Math.max(...opts.clients), '--clients');
  return {
    clients: opts.clients, durationSec: opts.duration / 1000, rounds: opts.rounds, length: opts.length, servers, generators,
    netns: opts.netns ?? false, ...(netem ? { netem } : {}),
  };
}

export function benchEchoCommand(): Command {
  const cmd = new Command('echo')
    .description('echo servers under the load generators: CPU per request (server and generator), req/s and p50/p99 latency per server, medians and ratios (io_uring/epoll, io_uring/node, epoll/node, ring/node)')
    .option('--clients <list>', 'client counts to run, each up to 1000000 (the open-file limit is raised to fit, within the hard limit)', numberListOption({ min: 1, max: 1_000_000 }), [1, 10, 100, 1000, 5000])
    .addOption(new Option('--duration <time>', 'time per run: 5, 500ms, 2m (a bare number is seconds), whole milliseconds, up to 1000000s')
      .argParser(durationOption({ wholeMs: true, max: { ms: 1e9, why: '11.5 days' } })).default(5000, '5s'))
    .option('--rounds <n>', 'rounds (servers alternate within each)', numberOption({ min: 1 }), 3)
    .option('--length <bytes>', 'message length', numberOption({ min: 1, max: 64 << 20, size: true }), 512)
    .option('--servers <list>', `echo servers, comma-separated (${echoServerNames.join(',')})`, echoServerNames.join(','))
    .option('--generators <list>', 'load generators every server runs under, comma-separated: epoll (event-driven), threads (a thread per connection), io_uring', 'epoll,threads')
    .option('--netns', 'root: the server and the generator in two network namespaces joined by a veth pair (two hosts on one machine), removed again on every exit')
    .option('--netem <settings>', 'with --netns: tc netem on both ends of the veth, e.g. delay=200us,rate=10gbit (keys: delay, jitter, rate, loss)')
    .option('--json', 'print the results as JSON instead of the table')
    .addOption(resultsOption('also write the results as JSON to this file (npm run bench:echo: bench-results/echo.json)'))
    .option('--force', 'replace an existing --output file (or a symlink itself, never its target)')
    .action(async (opts: CommandOptions) => {
      const options = optionsFrom(opts);
      const run = await runEchoBench(options, (line) => { if (!opts.json) process.stderr.write(`${line}\n`); });
      const results = buildEchoResults(options, run);
      const json = { ...results, machine: machineInfo(), command: commandLine(), date: new Date().toISOString() };
      emitResults(opts, json, formatEchoResults(results));
      if (run.interruptedBy) markInterrupted();
      else if (results.errors) process.exitCode = 1;
    });
  return oneLineErrors(optionAlias(cmd, '--engines <list>', '--servers'));
}
