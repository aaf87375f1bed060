// Runs the native load generator and prints what rust_echo_bench prints, plus latency and errors.
import { native, type EchoLoadResult } from '../native.js';
import { UserError } from '../cli-util.js';

export interface LoadOptions {
  host: string;
  port: number;
  clients: number;
  length: number;
  durationSec: number;
  threads?: number;
  mode?: 'epoll' | 'uring' | 'threads';
}

/** fds the generator needs besides one per client (epoll sets, the process's own). */
const FD_RESERVE = 64;

/** Refuses, before connecting, a client count the open-file limit cannot hold. */
export function checkOpenFileLimit(clients: number): void {
  const { soft } = native.echoOpenFileLimit();
  if (clients + FD_RESERVE > soft) {
    throw new UserError(
      `--number ${clients} is above what the open-file limit allows (RLIMIT_NOFILE ${soft}, ` +
        `minus ${FD_RESERVE} reserved); use at most ${Math.max(0, soft - FD_RESERVE)} or raise it with ulimit -n`,
    );
  }
}

export function totalErrors(r: EchoLoadResult): number {
  const e = r.errors;
  return e.connect + e.reset + e.shortEcho + e.mismatch + e.timeout;
}

/** Runs the generator; SIGINT/SIGTERM end the run early and still report. */
export async function runLoad(o: LoadOptions): Promise<EchoLoadResult> {
  const handle = native.echoRunLoad({
    host: o.host,
    port: o.port,
    clients: o.clients,
    length: o.length,
    durationMs: o.durationSec * 1000,
    threads: o.threads ?? 4,
    mode: o.mode ?? 'epoll',
  });
  const stop = () => handle.stop();
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  try {
    return await handle.done;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}

function ms(ns: number): string {
  return (ns / 1e6).toFixed(3);
}

/** rust_echo_bench's lines (speed = count / duration, whole numbers), then latency and errors. */
export function formatLoad(address: string, o: LoadOptions, r: EchoLoadResult): string {
  const e = r.errors;
  const errors = totalErrors(r);
  const lines = [
    `Benchmarking: ${address}`,
    `${o.clients} clients, running ${o.length} bytes, ${o.durationSec} sec.`,
    '',
    `Speed: ${Math.floor(r.requests / o.durationSec)} request/sec, ${Math.floor(r.responses / o.durationSec)} response/sec`,
    `Requests: ${r.requests}`,
    `Responses: ${r.responses}`,
    `Latency: p50 ${ms(r.latencyNs.p50)} ms, p99 ${ms(r.latencyNs.p99)} ms, p99.9 ${ms(r.latencyNs.p999)} ms`,
    errors === 0
      ? 'Errors: 0'
      : `Errors: ${errors} (connect ${e.connect}, reset ${e.reset}, short echo ${e.shortEcho}, mismatch ${e.mismatch}, timeout ${e.timeout})`,
  ];
  return lines.join('\n') + '\n';
}
