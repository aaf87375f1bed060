// Runs the native load generator and prints what rust_echo_bench prints, plus latency and errors.
import { getSystemErrorMap } from 'node:util';
import { native, type EchoLoadResult } from '../native.js';
import { UserError } from '../cli-util.js';

/** The load generators, by `iolab echo bench --client`'s names: event-driven on epoll (the
 * default), a thread per connection, event-driven on io_uring (old spelling: src/aliases.ts). */
export const generatorModes = ['epoll', 'threads', 'io_uring'] as const;
export type GeneratorMode = (typeof generatorModes)[number];

export interface LoadOptions {
  host: string;
  port: number;
  clients: number;
  length: number;
  durationSec: number;
  threads?: number;
  mode?: GeneratorMode;
  /** The server's pid, when its CPU over the window is wanted (result.serverCpuNs). */
  cpuPid?: number;
}

/** fds the generator (or a server) needs besides one per client (epoll sets, the process's own). */
const FD_RESERVE = 64;

/** Raises the soft open-file limit to the hard one and refuses, before connecting, a client count
 * it still cannot hold. */
export function checkOpenFileLimit(clients: number): void {
  const { soft } = native.echoOpenFileLimit(true);
  if (clients + FD_RESERVE > soft) {
    throw new UserError(
      `--number ${clients} is above what the open-file limit allows (RLIMIT_NOFILE ${soft}, ` +
        `minus ${FD_RESERVE} reserved); use at most ${Math.max(0, soft - FD_RESERVE)} or raise it with ulimit -n`,
    );
  }
}

/** bench echo, before it starts a server: the soft limit raised to the hard one (the servers it
 * starts inherit it; each of them, and the generator, holds one fd per client), or one line when
 * even the hard limit cannot hold `clients`. */
export function raiseOpenFileLimitFor(clients: number, option: string): void {
  const { soft, hard } = native.echoOpenFileLimit(true);
  const need = clients + FD_RESERVE;
  if (need <= soft) return;
  const limit = hard < need ? `the hard open-file limit (RLIMIT_NOFILE ${hard})` : `the open-file limit (RLIMIT_NOFILE ${soft}, hard ${hard})`;
  throw new UserError(
    `${option} ${clients} needs ${need} open files in the server and in the generator, above ${limit}; ` +
      `raise it (as root: ulimit -Hn ${need}, or nofile in /etc/security/limits.conf) or run at most ${Math.max(0, soft - FD_RESERVE)} clients`,
    2, // the run cannot be made here
  );
}

export function totalErrors(r: EchoLoadResult): number {
  const e = r.errors;
  return e.connect + e.reset + e.shortEcho + e.mismatch + e.timeout;
}

/** Runs the generator; `stop` firing ends the run early, and what ran is still reported. */
export async function runLoad(o: LoadOptions, stop?: AbortSignal): Promise<EchoLoadResult> {
  const handle = native.echoRunLoad({
    host: o.host,
    port: o.port,
    clients: o.clients,
    length: o.length,
    durationMs: o.durationSec * 1000,
    threads: o.threads ?? 4,
    mode: o.mode === 'io_uring' ? 'uring' : o.mode ?? 'epoll', // the addon's name for it
    ...(o.cpuPid !== undefined ? { cpuPid: o.cpuPid } : {}),
  });
  const onStop = () => handle.stop();
  if (stop?.aborted) onStop();
  stop?.addEventListener('abort', onStop);
  try {
    return await handle.done;
  } finally {
    stop?.removeEventListener('abort', onStop);
  }
}

/** Not one client could connect: the one line that says so, and why ("ECONNREFUSED: connection refused"). */
export function noConnection(address: string, r: EchoLoadResult): UserError | undefined {
  if (r.connected > 0 || r.errors.connect === 0) return undefined;
  const [code, message] = getSystemErrorMap().get(-r.connectErrno) ?? [`E${r.connectErrno}`, 'unknown error'];
  return new UserError(`no connection could be made to ${address} (${code}: ${message})`);
}

/** The run ended before its duration with no stop asked for: each generator thread stops when
 * it has no connection left, so every connection was lost (the server went away or dropped them). */
export function lostEveryConnection(o: LoadOptions, r: EchoLoadResult): boolean {
  return !r.stoppedEarly && r.connected > 0 && r.elapsedNs < o.durationSec * 1e9;
}

/** Requests (or responses) per second of the time the run measured. */
export function perSecond(count: number, r: EchoLoadResult): number {
  return r.elapsedNs > 0 ? count / (r.elapsedNs / 1e9) : 0;
}

function ms(ns: number): string {
  return (ns / 1e6).toFixed(3);
}

/** rust_echo_bench's lines (speed = count / the measured time, whole numbers), then latency and
 * errors; a run cut short by `interrupted` (a signal's name) or by losing every connection says
 * so on a last line. */
export function formatLoad(address: string, o: LoadOptions, r: EchoLoadResult, interrupted?: string): string {
  const e = r.errors;
  const errors = totalErrors(r);
  const lines = [
    `Benchmarking: ${address}`,
    `${o.clients} clients, running ${o.length} bytes, ${o.durationSec} sec.`,
    '',
    `Speed: ${Math.floor(perSecond(r.requests, r))} request/sec, ${Math.floor(perSecond(r.responses, r))} response/sec`,
    `Requests: ${r.requests}`,
    `Responses: ${r.responses}`,
    `Latency: p50 ${ms(r.latencyNs.p50)} ms, p99 ${ms(r.latencyNs.p99)} ms, p99.9 ${ms(r.latencyNs.p999)} ms`,
    errors === 0
      ? 'Errors: 0'
      : `Errors: ${errors} (connect ${e.connect}, reset ${e.reset}, short echo ${e.shortEcho}, mismatch ${e.mismatch}, timeout ${e.timeout})`,
  ];
  const ran = `${(r.elapsedNs / 1e9).toFixed(2)} of ${o.durationSec} sec`;
  if (interrupted) lines.push(`Interrupted (${interrupted}) after ${ran}: partial, the speed is over the time it ran`);
  else if (lostEveryConnection(o, r)) lines.push(`Stopped early after ${ran}: every connection was lost; partial, the speed is over the time it ran`);
  return lines.join('\n') + '\n';
}
