// `iolab bench echo`: every server engine in its own process, the native generator against
// it, engines alternating within each round; medians and ratios. Then the generator against
// the thread-per-connection reference client, on the same (epoll) server.
import { Command } from 'commander';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { oneLineErrors, printJson, UserError } from '../cli-util.js';
import { type EchoLoadResult } from '../native.js';
import { checkOpenFileLimit, runLoad, totalErrors } from '../echo/load.js';
import { echoEngines, type EchoEngine } from '../echo/servers.js';
import { numberOption, numberListOption } from '../numbers.js';
import { median } from '../format.js';
import { iolabArgv } from '../spawn-iolab.js';

interface ServerProcess {
  child: ChildProcess;
  port: number;
}

/** Starts `iolab echo server --engine X --port 0 --json` and waits for its listening line. */
async function spawnServer(engine: EchoEngine): Promise<ServerProcess> {
  const [file, args] = iolabArgv(['echo', 'server', '--engine', engine, '--port', '0', '--json']);
  const child = spawn(file, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const line = out.split('\n').find((l) => l.includes('"listening"'));
      if (line) resolve({ child, port: JSON.parse(line).port });
    });
    child.once('exit', (code) => reject(new UserError(`echo server (${engine}) exited (${code}) before listening: ${err.trim()}`)));
  });
}

/** SIGTERM, and SIGKILL if it has not exited within 5 s. Returns false when it had to be killed. */
async function stopServer(s: ServerProcess): Promise<boolean> {
  if (s.child.exitCode !== null || s.child.signalCode !== null) return true;
  const exited = new Promise((r) => s.child.once('exit', r));
  s.child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const clean = await Promise.race([exited.then(() => true), new Promise<boolean>((r) => (timer = setTimeout(() => r(false), 5000)))]);
  clearTimeout(timer);
  if (!clean) {
    s.child.kill('SIGKILL');
    await exited;
  }
  return clean;
}

/** CPU seconds (user + system) a process has used, from /proc/<pid>/stat. */
function processCpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in USER_HZ (100)
}

interface Sample {
  clients: number;
  round: number;
  contender: string;
  reqPerSec: number;
  errors: number;
  p99Ms: number;
  /** CPU seconds per second of the run: the server process, and the client's threads. */
  serverCpu?: number;
  clientCpu: number;
  errorKinds?: EchoLoadResult['errors'];
  /** The server had to be killed: it did not stop on SIGTERM. */
  stuck?: boolean;
}

async function measure(port: number, clients: number, durationSec: number, length: number, mode: 'epoll' | 'threads'): Promise<EchoLoadResult> {
  return runLoad({ host: '127.0.0.1', port, clients, length, durationSec, mode });
}

function rotate<T>(xs: readonly T[], by: number): T[] {
  return xs.map((_, i) => xs[(i + by) % xs.length]);
}

export function benchEchoCommand(): Command {
  return oneLineErrors(new Command('echo')
    .description('echo servers under the load generator: req/s per engine, medians and ratios (uring/epoll, uring/node, ring/node)')
    .option('--clients <list>', 'client counts to run', numberListOption({ min: 1 }), [100, 1000])
    .option('--duration <sec>', 'seconds per run', numberOption({ min: 1 }), 10)
    .option('--rounds <n>', 'rounds (engines alternate within each)', numberOption({ min: 1 }), 3)
    .option('--length <bytes>', 'message length', numberOption({ min: 1, size: true }), 512)
    .option('--engines <list>', `engines, comma-separated (${echoEngines.join(',')})`, echoEngines.join(','))
    .option('--reference-clients <list>', 'client counts at which to compare the generator with a thread-per-connection client (0: skip)', numberListOption({ min: 0 }), [100])
    .option('--output <file>', 'also write the JSON here')
    .option('--json', 'print JSON instead of the table')
    .action(async (opts: { clients: number[]; duration: number; rounds: number; length: number; engines: string; referenceClients: number[]; output?: string; json?: boolean }) => {
      const engines = opts.engines.split(',').map((s) => s.trim()) as EchoEngine[];
      for (const e of engines) {
        if (!(echoEngines as readonly string[]).includes(e)) throw new UserError(`unknown engine '${e}' (known: ${echoEngines.join(', ')})`);
      }
      for (const c of [...opts.clients, ...opts.referenceClients]) checkOpenFileLimit(c);
      const reference = opts.referenceClients.filter((c) => c > 0);
      const samples: Sample[] = [];
      const log = (s: string) => { if (!opts.json) process.stderr.write(s); };
      for (let round = 1; round <= opts.rounds; round++) {
        for (const clients of opts.clients) {
          for (const engine of rotate(engines, round - 1)) {
            const server = await spawnServer(engine);
            try {
              const cpu0 = processCpuSeconds(server.child.pid!);
              const r = await measure(server.port, clients, opts.duration, opts.length, 'epoll');
              const serverCpu = (processCpuSeconds(server.child.pid!) - cpu0) / opts.duration;
              const sample: Sample = { clients, round, contender: engine, reqPerSec: r.responses / opts.duration, errors: totalErrors(r), errorKinds: r.errors, p99Ms: r.latencyNs.p99 / 1e6, serverCpu, clientCpu: r.cpuNs / 1e9 / opts.duration };
              samples.push(sample);
              log(`round ${round} ${clients} clients ${engine}: ${Math.round(r.responses / opts.duration)} req/s${totalErrors(r) ? `, errors ${JSON.stringify(r.errors)}` : ''}\n`);
              if (!(await stopServer(server))) {
                sample.stuck = true;
                sample.errors++;
                log(`round ${round} ${clients} clients ${engine}: the server did not exit on SIGTERM within 5 s (killed)\n`);
              }
            } finally {
              await stopServer(server);
            }
          }
        }
        for (const clients of reference) {
          const server = await spawnServer('epoll');
          try {
            for (const mode of rotate(['epoll', 'threads'] as const, round - 1)) {
              const r = await measure(server.port, clients, opts.duration, opts.length, mode);
              const contender = mode === 'epoll' ? 'generator' : 'thread-per-conn';
              samples.push({ clients, round, contender, reqPerSec: r.responses / opts.duration, errors: totalErrors(r), p99Ms: r.latencyNs.p99 / 1e6, clientCpu: r.cpuNs / 1e9 / opts.duration });
              log(`round ${round} ${clients} clients ${contender} vs epoll server: ${Math.round(r.responses / opts.duration)} req/s\n`);
            }
          } finally {
            await stopServer(server);
          }
        }
      }
      const medians: Record<string, Record<string, number>> = {};
      for (const s of samples) {
        const key = String(s.clients);
        medians[key] ??= {};
        medians[key][s.contender] = median(samples.filter((x) => x.clients === s.clients && x.contender === s.contender).map((x) => x.reqPerSec));
      }
      const ratioPairs: [string, string][] = [['uring', 'epoll'], ['uring', 'node'], ['epoll', 'node'], ['ring', 'node'], ['generator', 'thread-per-conn']];
      const ratios: Record<string, Record<string, number>> = {};
      for (const [clients, m] of Object.entries(medians)) {
        for (const [a, b] of ratioPairs) {
          if (m[a] !== undefined && m[b]) (ratios[clients] ??= {})[`${a}/${b}`] = m[a] / m[b];
        }
      }
      const errors = samples.reduce((n, s) => n + s.errors, 0);
      const report = { length: opts.length, duration: opts.duration, rounds: opts.rounds, engines, samples, medians, ratios, errors };
      if (opts.output) {
        mkdirSync(dirname(opts.output), { recursive: true });
        writeFileSync(opts.output, JSON.stringify(report, null, 2) + '\n');
      }
      if (opts.json) {
        printJson(report);
      } else {
        const lines = [`echo servers, ${opts.length} B messages, ${opts.duration} s per run, median of ${opts.rounds} round(s)`, ''];
        lines.push(`${'clients'.padStart(7)}  ${'contender'.padEnd(16)} ${'req/s'.padStart(10)}  ${'server cpu'.padStart(10)}  ${'client cpu'.padStart(10)}   rounds (req/s)`);
        for (const [clients, m] of Object.entries(medians)) {
          for (const [contender, v] of Object.entries(m)) {
            const mine = samples.filter((s) => String(s.clients) === clients && s.contender === contender);
            const rounds = mine.map((s) => Math.round(s.reqPerSec)).join(' ');
            const serverCpu = mine.every((s) => s.serverCpu !== undefined) ? median(mine.map((s) => s.serverCpu!)).toFixed(2) : '-';
            const clientCpu = median(mine.map((s) => s.clientCpu)).toFixed(2);
            lines.push(`${clients.padStart(7)}  ${contender.padEnd(16)} ${String(Math.round(v)).padStart(10)}  ${serverCpu.padStart(10)}  ${clientCpu.padStart(10)}   ${rounds}`);
          }
        }
        lines.push('(cpu: CPU seconds per second of run, median; the server process and the client\'s threads)');
        lines.push('');
        for (const [clients, r] of Object.entries(ratios)) {
          lines.push(`${clients} clients: ` + Object.entries(r).map(([k, v]) => `${k} ${v.toFixed(2)}x`).join(', '));
        }
        if (errors) lines.push(`errors: ${errors} (see --json)`);
        if (opts.output) lines.push(`written: ${opts.output}`);
        process.stdout.write(lines.join('\n') + '\n');
      }
      if (errors) process.exitCode = 1;
    }));
}
