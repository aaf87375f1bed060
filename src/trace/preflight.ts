// What tracing needs before anything runs: bpftrace, root (or CAP_BPF and CAP_PERFMON),
// tracefs mounted, and a locked-memory limit bpftrace accepts. Each missing piece is one
// UserError line that says which and how to fix it.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { release } from 'node:os';
import { promisify } from 'node:util';
import { UserError } from '../cli-util.js';
import { showText } from '../show-bytes.js';
import { bpftraceBinary } from './probes.js';

export const tracefsPath = '/sys/kernel/tracing';
const CAP_PERFMON = 38n;
const CAP_BPF = 39n;

function effectiveCaps(): bigint {
  const m = /^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync('/proc/self/status', 'utf8'));
  return m ? BigInt(`0x${m[1]}`) : 0n;
}

function hasCap(caps: bigint, cap: bigint): boolean {
  return ((caps >> cap) & 1n) === 1n;
}

function tracefsMounted(): boolean {
  return existsSync(`${tracefsPath}/events`) && readdirSync(`${tracefsPath}/events`).length > 0;
}

/** The soft RLIMIT_MEMLOCK in bytes (Infinity for unlimited), from /proc/self/limits. */
export function memlockLimit(): { soft: number; hard: number } {
  const m = /^Max locked memory\s+(\S+)\s+(\S+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
  const value = (s: string | undefined) => (s === undefined || s === 'unlimited' ? Infinity : Number(s));
  return { soft: value(m?.[1]), hard: value(m?.[2]) };
}

/** Kernels since 5.11 charge BPF memory to the cgroup, not to RLIMIT_MEMLOCK. */
function kernelChargesMemlock(): boolean {
  const [major, minor] = release().split('.').map((n) => parseInt(n, 10));
  return major < 5 || (major === 5 && minor < 11);
}

/** bpftrace's own advice when it cannot raise the limit: 8 MiB. */
const MEMLOCK_NEEDED = 8 << 20;

/** Checks everything tracing needs and returns the bpftrace binary to run. */
export async function checkTracingPossible(): Promise<string> {
  const bpftrace = bpftraceBinary();
  if (process.env.IOLAB_BPFTRACE && !existsSync(process.env.IOLAB_BPFTRACE)) {
    throw new UserError(`IOLAB_BPFTRACE names '${showText(process.env.IOLAB_BPFTRACE)}', which does not exist: name the bpftrace program, or unset it to use the one on PATH`);
  }
  if (!bpftrace || !existsSync(bpftrace)) {
    throw new UserError('tracing needs bpftrace, which is not installed: apt-get install bpftrace');
  }
  const root = process.geteuid?.() === 0;
  const caps = effectiveCaps();
  if (!root && !(hasCap(caps, CAP_BPF) && hasCap(caps, CAP_PERFMON))) {
    throw new UserError('tracing needs root (or CAP_BPF and CAP_PERFMON): run iolab trace as root, e.g. with sudo');
  }
  if (!tracefsMounted()) {
    if (!root) {
      throw new UserError(`tracing needs tracefs, which is not mounted at ${tracefsPath}: as root, mount -t tracefs tracefs ${tracefsPath}`);
    }
    try {
      await promisify(execFile)('mount', ['-t', 'tracefs', 'tracefs', tracefsPath], { timeout: 10_000 });
    } catch (err) {
      const why = String((err as { stderr?: string }).stderr ?? (err as Error).message).trim().split('\n')[0];
      throw new UserError(`tracing needs tracefs, which is not mounted at ${tracefsPath}, and mounting it failed (${why}): mount -t tracefs tracefs ${tracefsPath}`);
    }
    if (!tracefsMounted()) throw new UserError(`tracefs was mounted at ${tracefsPath} but shows no events: is this kernel built with tracing?`);
    process.stderr.write(`trace: mounted tracefs at ${tracefsPath}\n`);
  }
  if (kernelChargesMemlock()) {
    const { soft, hard } = memlockLimit();
    const canRaise = root || hard >= MEMLOCK_NEEDED;
    if (soft < MEMLOCK_NEEDED && !canRaise) {
      throw new UserError(`the locked-memory limit is ${Math.round(soft / 1024)} KiB, too low for BPF maps on kernel ${release()}: raise it with ulimit -l 8192 (or LimitMEMLOCK= for a service)`);
    }
  }
  return bpftrace;
}

/** One line for a bpftrace failure, from its stderr (the RLIMIT_MEMLOCK warning left out). */
export function bpftraceError(stderr: string): string {
  const lines = stderr.split('\n').map((l) => l.trim()).filter((l) => l !== '' && !/RLIMIT_MEMLOCK/.test(l));
  const error = lines.find((l) => /^ERROR:/.test(l)) ?? lines[0] ?? 'no message';
  const text = error.replace(/^ERROR:\s*/, '');
  if (/Operation not permitted|EPERM/i.test(text)) return `${text} (the locked-memory limit or missing privileges: try ulimit -l 8192, as root)`;
  return text;
}
