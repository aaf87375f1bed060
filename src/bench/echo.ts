// `iolab bench echo`: the options, the report (medians, ratios) and its table. The runs
// themselves are in echo-run.ts, the two-namespace setup in netns.ts.
import { Command } from 'commander';
import { commandLine, emitReport, oneLineErrors, UserError } from '../cli-util.js';
import { median, ratio, table } from '../format.js';
import { markInterrupted } from '../interrupt.js';
import { numberListOption, numberOption } from '../numbers.js';
import { checkOpenFileLimit } from '../echo/load.js';
import { echoEngines, type EchoEngine } from '../echo/servers.js';
import { machineInfo } from './machine.js';
import { runEchoBench, type EchoBenchOptions, type EchoBenchRun, type EchoSample } from './echo-run.js';
import { checkNetnsAllowed, parseNetem, type NetnsLink } from './netns.js';

export interface EchoBenchReport {
  length: number;
  duration: number;
  rounds: number;
  engines: EchoEngine[];
  netns: boolean;
  link?: NetnsLink;
  samples: EchoSample[];
  /** clients -> contender -> median req/s */
  medians: Record<string, Record<string, number>>;
  ratios: Record<string, Record<string, number>>;
  errors: number;
  interrupted: boolean;
  signal?: string;
}

const ratioPairs: [string, string][] = [['uring', 'epoll'], ['uring', 'node'], ['epoll', 'node'], ['ring', 'node'], ['generator', 'thread-per-conn']];

export function buildEchoReport(o: EchoBenchOptions, run: EchoBenchRun): EchoBenchReport {
  const medians: Record<string, Record<string, number>> = {};
  for (const s of run.samples) {
    const mine = run.samples.filter((x) => x.clients === s.clients && x.contender === s.contender);
    (medians[String(s.clients)] ??= {})[s.contender] = median(mine.map((x) => x.reqPerSec));
  }
  const ratios: Record<string, Record<string, number>> = {};
  for (const [clients, m] of Object.entries(medians)) {
    for (const [a, b] of ratioPairs) {
      if (m[a] !== undefined && m[b]) (ratios[clients] ??= {})[`${a}/${b}`] = m[a] / m[b];
    }
  }
  return {
    length: o.length, duration: o.durationSec, rounds: o.rounds, engines: o.engines, netns: o.netns,
    ...(run.link ? { link: run.link } : {}),
    samples: run.samples, medians, ratios, errors: run.samples.reduce((n, s) => n + s.errors, 0),
    interrupted: run.interruptedBy !== undefined, ...(run.interruptedBy ? { signal: run.interruptedBy } : {}),
  };
}

export function formatEchoReport(r: EchoBenchReport): string {
  const where = r.link
    ? `two network namespaces over a veth pair (mtu ${r.link.mtu}${r.link.netem ? `, netem ${Object.entries(r.link.netem).map(([k, v]) => `${k} ${v}`).join(' ')}` : ''})`
    : 'loopback';
  const lines = [`echo servers, ${r.length} B messages, ${r.duration} s per run, median of ${r.rounds} round(s), ${where}`, ''];
  const rows: string[][] = [];
  for (const [clients, m] of Object.entries(r.medians)) {
    for (const [contender, v] of Object.entries(m)) {
      const mine = r.samples.filter((s) => String(s.clients) === clients && s.contender === contender);
      const partial = mine.some((s) => s.partial);
      const serverCpu = mine.every((s) => s.serverCpu !== undefined) ? median(mine.map((s) => s.serverCpu!)).toFixed(2) : '-';
      rows.push([`${contender}${partial ? ' (partial)' : ''}`, clients, String(Math.round(v)), serverCpu,
        median(mine.map((s) => s.clientCpu)).toFixed(2), mine.map((s) => `${Math.round(s.reqPerSec)}${s.partial ? '*' : ''}`).join(' ')]);
    }
  }
  lines.push(table(['contender', 'clients', 'req/s', 'server cpu', 'client cpu', 'rounds (req/s)'], rows).trimEnd());
  lines.push('(cpu: CPU seconds per second of run, median; the server process and the client\'s threads)');
  lines.push('');
  for (const [clients, pairs] of Object.entries(r.ratios)) {
    lines.push(`${clients} clients: ` + Object.entries(pairs).map(([k, v]) => `${k} ${ratio(v, 1)}`).join(', '));
  }
  if (r.errors) lines.push(`errors: ${r.errors} (see --json)`);
  if (r.interrupted) {
    lines.push(`interrupted (${r.signal}): partial — * marks a run cut short (req/s over the time it ran); runs after it did not start`);
  }
  return lines.join('\n') + '\n';
}

interface CommandOptions {
  clients: number[];
  duration: number;
  rounds: number;
  length: number;
  engines: string;
  referenceClients: number[];
  netns?: boolean;
  netem?: string;
  output?: string;
  json?: boolean;
}

function optionsFrom(opts: CommandOptions): EchoBenchOptions {
  const engines = opts.engines.split(',').map((s) => s.trim()) as EchoEngine[];
  for (const e of engines) {
    if (!echoEngines.includes(e)) throw new UserError(`unknown engine '${e}' (known: ${echoEngines.join(', ')})`);
  }
  if (opts.netem !== undefined && !opts.netns) throw new UserError('--netem needs --netns (it shapes the veth link between the namespaces)');
  const netem = opts.netem !== undefined ? parseNetem(opts.netem) : undefined;
  if (opts.netns) checkNetnsAllowed();
  for (const c of [...opts.clients, ...opts.referenceClients]) checkOpenFileLimit(c);
  return {
    clients: opts.clients, durationSec: opts.duration, rounds: opts.rounds, length: opts.length, engines,
    referenceClients: opts.referenceClients, netns: opts.netns ?? false, ...(netem ? { netem } : {}),
  };
}

export function benchEchoCommand(): Command {
  return oneLineErrors(new Command('echo')
    .description('echo servers under the load generator: req/s per engine, medians and ratios (uring/epoll, uring/node, ring/node)')
    .option('--clients <list>', 'client counts to run', numberListOption({ min: 1 }), [100, 1000])
    .option('--duration <sec>', 'seconds per run', numberOption({ min: 1 }), 10)
    .option('--rounds <n>', 'rounds (engines alternate within each)', numberOption({ min: 1 }), 3)
    .option('--length <bytes>', 'message length', numberOption({ min: 1, max: 64 << 20, size: true }), 512)
    .option('--engines <list>', `engines, comma-separated (${echoEngines.join(',')})`, echoEngines.join(','))
    .option('--reference-clients <list>', 'client counts at which to compare the generator with a thread-per-connection client (0: skip)', numberListOption({ min: 0 }), [100])
    .option('--netns', 'root: the server and the generator in two network namespaces joined by a veth pair (two hosts on one machine), removed again on every exit')
    .option('--netem <settings>', 'with --netns: tc netem on both ends of the veth, e.g. delay=200us,rate=10gbit (keys: delay, jitter, rate, loss)')
    .option('--json', 'print the report as JSON instead of the table')
    .option('--output <file>', 'also write the report as JSON to this file (npm run bench:echo: bench-results/echo.json)')
    .action(async (opts: CommandOptions) => {
      const options = optionsFrom(opts);
      const run = await runEchoBench(options, (line) => { if (!opts.json) process.stderr.write(`${line}\n`); });
      const report = buildEchoReport(options, run);
      const json = { ...report, machine: machineInfo(), command: commandLine(), date: new Date().toISOString() };
      emitReport(opts, json, formatEchoReport(report));
      if (run.interruptedBy) markInterrupted();
      else if (report.errors) process.exitCode = 1;
    }));
}
