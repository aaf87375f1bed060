// The runs of bench echo: each server in its own process under each load generator
// asked for (the event-driven one, the thread-per-connection one), servers rotating within each
// round. On loopback the generator runs in this process; with
// --netns the server and the generator are children in two namespaces. Ctrl-C (SIGINT/SIGTERM)
// stops the run in progress (its sample is kept, marked partial), kills and reaps the server,
// and starts nothing more. The children run in process groups of their own: the terminal's
// Ctrl-C reaches only this process, which stops them in order, so a server never dies under
// its clients (counted as their errors) nor before it listens (a run lost to a signal).
import { spawn, type ChildProcess } from 'node:child_process';
import { UserError } from '../cli-util.js';
import type { EchoLoadResult } from '../native.js';
import { interruptedBy, interruption } from '../interrupt.js';
import { childEnv } from '../parent-death.js';
import { iolabArgv } from '../spawn-iolab.js';
import { perSecond, runLoad, totalErrors, type GeneratorMode } from '../echo/load.js';
import type { EchoServerName } from '../echo/servers.js';
import { createNetns, type Netem, type NetnsLink } from './netns.js';


export interface EchoBenchOptions {
  clients: number[];
  durationSec: number;
  rounds: number;
  length: number;
  servers: EchoServerName[];
  /** The load generators every server runs under, each in turn (echo bench's --client modes). */
  generators: GeneratorMode[];
  /** Server and generator in two network namespaces joined by a veth pair. */
  netns: boolean;
  netem?: Netem;
}

export interface EchoSample {
  clients: number;
  round: number;
  /** The server. */
  contender: string;
  /** The load generator it ran under. Older reports had none (the epoll one) and the
   * contenders 'generator' and 'thread-per-conn' for the two generators on the epoll server. */
  generator: GeneratorMode;
  /** Responses per second of the measured time. */
  reqPerSec: number;
  requests: number;
  responses: number;
  elapsedNs: number;
  errors: number;
  errorKinds?: EchoLoadResult['errors'];
  /** Latency per message, send to full echo, from the generator's histogram (ms); absent for a
   * run that answered nothing. */
  p50Ms?: number;
  p99Ms?: number;
  /** CPU seconds per second of the run: the server process, and the client's threads. */
  serverCpu?: number;
  clientCpu: number;
  /** CPU time per response, in microseconds: the server process's, and the generator's threads'
   * (CPU over the window / the responses counted in the same window). */
  serverUsPerReq?: number;
  generatorUsPerReq?: number;
  /** The server had to be killed: it did not stop on SIGTERM. */
  stuck?: boolean;
  /** Ctrl-C ended this run early: its figures cover the time it ran. */
  partial?: boolean;
}

export interface EchoBenchRun {
  samples: EchoSample[];
  link?: NetnsLink;
  interruptedBy?: string;
}

/** Where the two ends run: the server's argv and address, and how a load is generated. */
interface Hosts {
  serverArgv(args: string[]): [string, string[]];
  serverHost: string;
  /** undefined: interrupted before anything was measured. serverPid: the server whose CPU over
   * the window comes back as serverCpuNs. */
  generate(port: number, clients: number, mode: GeneratorMode, signal: AbortSignal, serverPid?: number): Promise<EchoLoadResult | undefined>;
  link?: NetnsLink;
  remove(): void;
}

interface ServerProcess {
  child: ChildProcess;
  port: number;
  exited: Promise<void>;
}

/** Options of every child of a run: it dies with this process, and a Ctrl-C at the terminal
 * (sent to the foreground process group) is not its to see. */
const childOptions = () => ({ stdio: ['ignore', 'pipe', 'pipe'] as ('ignore' | 'pipe')[], env: childEnv(), detached: true });

/** "exited with status 1", "was killed by SIGKILL": how a child ended, in words. */
function howItEnded(code: number | null, signal: NodeJS.Signals | null): string {
  return code !== null ? `exited with status ${code}` : `was killed by ${signal ?? 'a signal'}`;
}

/** Starts `iolab echo server --server X --port 0 --json` and waits for its listening line;
 * undefined when the run was interrupted before it listened. A child is in this process's group
 * from fork until it makes its own (setsid, before exec): a Ctrl-C in that moment reaches it too,
 * and its death by SIGINT is the run's interruption, not a failure of the server. */
function spawnServer(hosts: Hosts, server: EchoServerName, signal: AbortSignal): Promise<ServerProcess | undefined> {
  const [file, argv] = hosts.serverArgv(['echo', 'server', '--server', server, '--host', hosts.serverHost, '--port', '0', '--json']);
  const child = spawn(file, argv, childOptions());
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const line = out.split('\n').find((l) => l.includes('"listening"'));
      if (line) resolve({ child, port: JSON.parse(line).port, exited });
    });
    child.once('error', (e) => reject(new UserError(`cannot start the echo server (${server}): ${e.message}`)));
    const failed = (code: number | null, killedBy: NodeJS.Signals | null) => new UserError(`echo server (${server}) ` +
      `${howItEnded(code, killedBy)} before listening${err.trim() ? `: ${err.trim().split('\n').pop()}` : ' (it printed no error)'}`);
    child.once('exit', (code, killedBy) => {
      if (signal.aborted) return resolve(undefined);
      // the same Ctrl-C reaches this process as well; its handler may run a moment after
      if (killedBy === 'SIGINT') setTimeout(() => (signal.aborted ? resolve(undefined) : reject(failed(code, killedBy))), 100);
      else reject(failed(code, killedBy));
    });
  });
}

/** SIGTERM, and SIGKILL if it has not exited within 5 s; reaped either way. False: it had to be killed. */
async function stopServer(s: ServerProcess): Promise<boolean> {
  if (s.child.exitCode !== null || s.child.signalCode !== null) return true;
  s.child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const clean = await Promise.race([s.exited.then(() => true), new Promise<boolean>((r) => (timer = setTimeout(() => r(false), 5000)))]);
  clearTimeout(timer);
  if (!clean) {
    s.child.kill('SIGKILL');
    await s.exited;
  }
  return clean;
}

function loopback(o: EchoBenchOptions): Hosts {
  return {
    serverArgv: iolabArgv,
    serverHost: '127.0.0.1',
    generate: (port, clients, mode, signal, cpuPid) =>
      runLoad({ host: '127.0.0.1', port, clients, length: o.length, durationSec: o.durationSec, mode, cpuPid }, signal),
    remove: () => {},
  };
}

/** The generator as `iolab echo bench --json` in the client's namespace; SIGINT on abort. */
function namespaces(o: EchoBenchOptions): Hosts {
  const ns = createNetns(o.netem);
  return {
    serverArgv: ns.serverArgv,
    serverHost: ns.link.serverAddress,
    link: ns.link,
    remove: ns.remove,
    generate: (port, clients, mode, signal, cpuPid) => new Promise((resolve, reject) => {
      // one pid namespace: the generator reads the server's CPU by its pid
      const [file, argv] = ns.clientArgv(['echo', 'bench', '-a', `${ns.link.serverAddress}:${port}`, '-c', String(clients),
        '-t', `${Math.round(o.durationSec * 1000)}ms`, '-l', String(o.length), '--client', mode, '--json', ...(cpuPid ? ['--cpu-pid', String(cpuPid)] : [])]);
      const child = spawn(file, argv, childOptions());
      let out = '';
      let err = '';
      child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
      const onAbort = () => child.kill('SIGINT');
      signal.addEventListener('abort', onAbort);
      child.once('error', reject);
      child.once('close', () => {
        signal.removeEventListener('abort', onAbort);
        const line = out.trim().split('\n').pop();
        if (line?.startsWith('{')) return resolve(JSON.parse(line) as EchoLoadResult);
        if (signal.aborted) return resolve(undefined); // stopped before it could report
        if (/no connection could be made/.test(err)) return resolve(noConnectionResult(clients));
        reject(new UserError(`the load generator in ${ns.link.clientNamespace} failed: ${err.trim().split('\n').pop() ?? 'no output'}`));
      });
    }),
  };
}

function noConnectionResult(clients: number): EchoLoadResult {
  return {
    requests: 0, responses: 0, bytes: 0, connected: 0, connectErrno: 0, stoppedEarly: false, elapsedNs: 0, cpuNs: 0,
    errors: { connect: clients, reset: 0, shortEcho: 0, mismatch: 0, timeout: 0 },
    latencyNs: { p50: 0, p99: 0, p999: 0, max: 0 },
  };
}

function rotate<T>(xs: readonly T[], by: number): T[] {
  return xs.map((_, i) => xs[(i + by) % xs.length]);
}

/** CPU figures are the window's, the one the responses are counted in: the generator reads its
 * threads' and the server's CPU time as the window opens and as its last thread's window ends
 * (before any connection closes), so connecting and teardown are left out. */
export function sampleOf(clients: number, round: number, contender: string, generator: GeneratorMode, r: EchoLoadResult): EchoSample {
  const seconds = r.elapsedNs / 1e9;
  const serverCpuSec = r.serverCpuNs !== undefined ? r.serverCpuNs / 1e9 : undefined;
  // No response, no figure: a run that answered nothing has no cost per request (not 0).
  const perReq = (ns: number | undefined) => (ns !== undefined && r.responses > 0 ? ns / 1e3 / r.responses : undefined);
  const serverPerReq = perReq(r.serverCpuNs);
  const generatorPerReq = perReq(r.cpuNs);
  return {
    clients, round, contender, generator, reqPerSec: perSecond(r.responses, r), requests: r.requests, responses: r.responses,
    elapsedNs: r.elapsedNs, errors: totalErrors(r), errorKinds: r.errors,
    ...(r.responses > 0 ? { p50Ms: r.latencyNs.p50 / 1e6, p99Ms: r.latencyNs.p99 / 1e6 } : {}),
    ...(serverCpuSec !== undefined ? { serverCpu: seconds > 0 ? serverCpuSec / seconds : 0 } : {}),
    clientCpu: seconds > 0 ? r.cpuNs / 1e9 / seconds : 0,
    ...(serverPerReq !== undefined ? { serverUsPerReq: serverPerReq } : {}),
    ...(generatorPerReq !== undefined ? { generatorUsPerReq: generatorPerReq } : {}),
    ...(r.stoppedEarly ? { partial: true } : {}),
  };
}

/** A us/req figure for the table and the progress lines: '-' where none was measured. */
export const us = (v: number | undefined) => (v === undefined ? '-' : v.toFixed(2));
/** A latency in ms, to the microsecond: '-' where none was measured. */
export const ms = (v: number | undefined) => (v === undefined ? '-' : v.toFixed(3));

export async function runEchoBench(o: EchoBenchOptions, log: (line: string) => void): Promise<EchoBenchRun> {
  const signal = interruption();
  const hosts = o.netns ? namespaces(o) : loopback(o);
  const run: EchoBenchRun = { samples: [], ...(hosts.link ? { link: hosts.link } : {}) };
  const running = new Set<ServerProcess>();
  const start = async (name: EchoServerName) => {
    const s = await spawnServer(hosts, name, signal);
    if (s) running.add(s);
    return s;
  };
  const stop = async (s: ServerProcess) => {
    running.delete(s);
    return stopServer(s);
  };
  try {
    rounds: for (let round = 1; round <= o.rounds; round++) {
      for (const clients of o.clients) {
        for (const generator of rotate(o.generators, round - 1)) {
          for (const name of rotate(o.servers, round - 1)) {
            if (signal.aborted) break rounds;
            const server = await start(name);
            if (!server) break rounds;
            const r = signal.aborted ? undefined : await hosts.generate(server.port, clients, generator, signal, server.child.pid);
            if (!r) {
              await stop(server);
              break rounds;
            }
            const sample = sampleOf(clients, round, name, generator, r);
            run.samples.push(sample);
            const what = `round ${round} ${clients} clients ${name} (${generator} generator)`;
            log(`${what}: server ${us(sample.serverUsPerReq)} us/req, generator ${us(sample.generatorUsPerReq)} us/req, ` +
              `${Math.round(sample.reqPerSec)} req/s, p50 ${ms(sample.p50Ms)} ms, p99 ${ms(sample.p99Ms)} ms${sample.partial ? ' (partial)' : ''}${sample.errors ? `, errors ${JSON.stringify(r.errors)}` : ''}`);
            if (!(await stop(server))) {
              sample.stuck = true;
              sample.errors++;
              log(`${what}: the server did not exit on SIGTERM within 5 s (killed)`);
            }
          }
        }
      }
    }
  } finally {
    await Promise.all([...running].map(stopServer));
    hosts.remove();
  }
  if (signal.aborted) run.interruptedBy = interruptedBy() ?? 'a signal';
  return run;
}
