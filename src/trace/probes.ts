// What can be traced here: asks bpftrace which io_uring and syscall tracepoints this kernel has
// (io_uring_submit_req is io_uring_submit_sqe before 6.4, and older kernels lack fields), and
// which USDT probes the addon carries.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import { syscallNumbersHere, type ProbeSet } from './bpf-program.js';
import { usdtBinary, usdtProvider } from './usdt.js';

const run = promisify(execFile);

/** The bpftrace binary: IOLAB_BPFTRACE when set, else the first bpftrace on PATH. */
export function bpftraceBinary(): string | undefined {
  if (process.env.IOLAB_BPFTRACE) return process.env.IOLAB_BPFTRACE;
  for (const dir of (process.env.PATH ?? '/usr/sbin:/usr/bin').split(':')) {
    if (dir && existsSync(`${dir}/bpftrace`)) return `${dir}/bpftrace`;
  }
  return existsSync('/usr/sbin/bpftrace') ? '/usr/sbin/bpftrace' : undefined;
}

/** The environment bpftrace runs in: iolab's, less the sanitizer runtime that the sanitized
 * build preloads into iolab's own processes (bpftrace is not ours to instrument). */
export function bpftraceEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  for (const key of ['LD_PRELOAD', 'ASAN_OPTIONS', 'UBSAN_OPTIONS']) delete env[key];
  return env;
}

/** `bpftrace -l PATTERN` (with -v: the fields too), one probe or field per line. */
export async function listProbes(bpftrace: string, pattern: string, verbose = false): Promise<string[]> {
  const { stdout } = await run(bpftrace, verbose ? ['-lv', pattern] : ['-l', pattern], { maxBuffer: 16 << 20, timeout: 60_000, env: bpftraceEnv() });
  return stdout.split('\n').map((l) => l.trimEnd()).filter((l) => l !== '');
}

/** Field names of each probe in `bpftrace -lv` output: probe -> fields. */
function fieldsByProbe(lines: string[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  let current: string[] | undefined;
  for (const line of lines) {
    if (!/^\s/.test(line)) {
      current = [];
      out.set(line.trim(), current);
    } else {
      const m = /([A-Za-z_][A-Za-z0-9_]*)(\[\d*\])?;?$/.exec(line.trim());
      if (m && current) current.push(m[1]);
    }
  }
  return out;
}

/** The USDT probe names of the addon's provider (empty when it has none). */
export async function addonUsdtNames(bpftrace: string, binary = usdtBinary()): Promise<string[]> {
  const lines = await listProbes(bpftrace, `usdt:${binary}:*`).catch(() => []);
  const prefix = `:${usdtProvider}:`;
  return lines.filter((l) => l.includes(prefix)).map((l) => l.slice(l.lastIndexOf(':') + 1)).sort();
}

export async function findProbes(bpftrace: string): Promise<ProbeSet> {
  const io = fieldsByProbe(await listProbes(bpftrace, 'tracepoint:io_uring:*', true));
  const submit = ['io_uring_submit_req', 'io_uring_submit_sqe'].find((n) => io.has(`tracepoint:io_uring:${n}`));
  const fields = (name: string) => io.get(`tracepoint:io_uring:${name}`) ?? [];
  const raw = new Set(await listProbes(bpftrace, 'tracepoint:raw_syscalls:*'));
  const rawSyscalls = raw.has('tracepoint:raw_syscalls:sys_enter') && raw.has('tracepoint:raw_syscalls:sys_exit') &&
    syscallNumbersHere() !== undefined;
  const binary = usdtBinary();
  const usdtNames = await addonUsdtNames(bpftrace, binary);
  return {
    submitTracepoint: submit && rawSyscalls && io.has('tracepoint:io_uring:io_uring_complete') ? submit : undefined,
    hasRequestPointer: submit !== undefined && fields(submit).includes('req') && fields('io_uring_complete').includes('req') &&
      (!io.has('tracepoint:io_uring:io_uring_queue_async_work') || fields('io_uring_queue_async_work').includes('req')),
    hasOpName: submit !== undefined && fields(submit).includes('op_str'),
    hasAsyncWork: io.has('tracepoint:io_uring:io_uring_queue_async_work'),
    hasOverflow: io.has('tracepoint:io_uring:io_uring_cqe_overflow'),
    rawSyscalls,
    usdtBinary: usdtNames.length > 0 ? binary : undefined,
    usdtNames,
  };
}
