// Runs one iolab command under bpftrace. The command starts stopped (a shell that stops
// itself, then execs it under the same pid), bpftrace attaches with that pid as its filter,
// and only then does the command go on. When the command ends, bpftrace is told to print its
// maps and exit. Nothing stays attached on any path: bpftrace's probes are tied to its fds, it
// is always stopped (SIGTERM, then SIGKILL), and its program exits by itself when this process
// does, however that happens.
import { spawn, type ChildProcess } from 'node:child_process';
import { constants } from 'node:os';
import { UserError } from '../cli-util.js';
import { interruptedBy, interruption } from '../interrupt.js';
import { procStatFields } from '../procfs.js';
import { iolabArgv } from '../spawn-iolab.js';
import { childEnv } from '../parent-death.js';
import { traceProgram } from './bpf-program.js';
import { bpftraceError, checkTracingPossible } from './preflight.js';
import { bpftraceEnv, findProbes } from './probes.js';
import { collectMaps, summarize, type TraceSummary } from './summary.js';

export interface TraceOutcome {
  summary: TraceSummary;
  /** The command's exit status (128 + signal number when a signal ended it). */
  exitCode: number;
  /** The run was interrupted (Ctrl-C or SIGTERM): the figures cover what ran until then. */
  partial: boolean;
  pid: number;
}

const exited = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null;

function exitStatus(child: ChildProcess): number {
  if (child.signalCode) return 128 + (constants.signals[child.signalCode] ?? 0);
  return child.exitCode ?? 1;
}

function waitExit(child: ChildProcess): Promise<void> {
  return exited(child) ? Promise.resolve() : new Promise((resolve) => child.once('exit', () => resolve()));
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch { /* already gone */ }
}

/** Signals the command's process group, then SIGKILL if it has not exited after graceMs. */
async function stopGroup(child: ChildProcess, signal: NodeJS.Signals, graceMs: number): Promise<void> {
  if (exited(child)) return;
  signalGroup(child, signal);
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([waitExit(child), new Promise((r) => (timer = setTimeout(r, graceMs)))]);
  clearTimeout(timer);
  if (!exited(child)) {
    signalGroup(child, 'SIGKILL');
    await waitExit(child);
  }
}

/** Waits until pid is stopped (state T in /proc/pid/stat). */
async function waitStopped(pid: number, child: ChildProcess): Promise<void> {
  for (let i = 0; i < 2500; i++) {
    if (exited(child)) throw new UserError('the command exited before it could be traced');
    const state = procStatFields(pid)?.[0] ?? ''; // not there yet: ''
    if (state === 'T' || state === 't') return;
    await new Promise((r) => setTimeout(r, 2));
  }
  throw new UserError('the command did not reach its start point within 5 s');
}

/** bpftrace says this on stderr once every probe is attached (its "Attaching N probes" comes
 * before it attaches them). */
const attachedNotice = '__BPFTRACE_NOTIFY_PROBES_ATTACHED';

/** bpftrace's JSON lines as they come; `attached` resolves once every probe is attached. */
function watchBpftrace(bpftrace: ChildProcess) {
  let stdout = '';
  let stderr = '';
  let onAttach: (() => void) | undefined;
  const attached = new Promise<void>((resolve) => (onAttach = resolve));
  bpftrace.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  bpftrace.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    if (stderr.includes(attachedNotice)) onAttach?.();
  });
  return { lines: () => stdout.split('\n'), stderr: () => stderr.replace(`${attachedNotice}\n`, ''), attached };
}

/**
 * Ends bpftrace so that it prints its maps: SIGTERM, repeated, because bpftrace 0.17 only
 * notices the signal when it lands in its epoll_wait (SIGINT would be taken by the default
 * handler while the maps print). SIGKILL after timeoutMs; returns false then.
 */
export async function finishBpftrace(bpftrace: ChildProcess, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!exited(bpftrace) && Date.now() < deadline) {
    bpftrace.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([waitExit(bpftrace), new Promise((r) => (timer = setTimeout(r, 250)))]);
    clearTimeout(timer);
  }
  if (exited(bpftrace)) return true;
  bpftrace.kill('SIGKILL');
  await waitExit(bpftrace);
  return false;
}

/** stdoutToStderr: the command's stdout goes to this process's stderr (--json keeps stdout
 * for the JSON alone). */
export async function runTraced(args: string[], options: { stdoutToStderr?: boolean; bpftracePath?: string } = {}): Promise<TraceOutcome> {
  const bpftracePath = options.bpftracePath ?? await checkTracingPossible();
  const probes = await findProbes(bpftracePath).catch((err: { stderr?: string; message?: string }) => {
    // e.g. bpftrace 0.17 as a non-root user with CAP_BPF and CAP_PERFMON: it runs only as root
    throw new UserError(`bpftrace could not list the probes: ${bpftraceError(String(err.stderr || err.message))}`);
  });
  const signal = interruption();
  const [file, argv] = iolabArgv(args);
  // Own session and process group, so one forwarded signal reaches it exactly once. It dies with
  // this process however that ends (SIGKILL runs no cleanup): the iolab it execs asks for
  // PR_SET_PDEATHSIG first thing (childEnv), and its own children die with it in turn.
  const command = spawn('/bin/sh', ['-c', 'kill -STOP $$ && exec "$@"', 'iolab-trace', file, ...argv],
    { stdio: ['inherit', options.stdoutToStderr ? process.stderr.fd : 'inherit', 'inherit'], detached: true, env: childEnv() });
  let bpftrace: ChildProcess | undefined;
  const killAll = () => {
    if (!exited(command)) signalGroup(command, 'SIGKILL');
    if (bpftrace && !exited(bpftrace)) bpftrace.kill('SIGKILL');
  };
  process.on('exit', killAll);
  try {
    await new Promise<void>((resolve, reject) => {
      command.once('spawn', resolve);
      command.once('error', reject);
    });
    const pid = command.pid!;
    await waitStopped(pid, command);
    const program = traceProgram({ pid, tracerPid: process.pid }, probes);
    bpftrace = spawn(bpftracePath, ['-f', 'json', '-e', program], {
      stdio: ['ignore', 'pipe', 'pipe'], detached: true,
      env: bpftraceEnv({ BPFTRACE_MAP_KEYS_MAX: '65536', [attachedNotice]: '1' }),
    });
    const watch = watchBpftrace(bpftrace);
    const bpftraceDone = waitExit(bpftrace);
    const aborted = new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    await Promise.race([watch.attached, bpftraceDone, aborted]);
    if (exited(bpftrace) || signal.aborted) {
      signalGroup(command, 'SIGKILL');
      await waitExit(command);
      await finishBpftrace(bpftrace, 5000);
      if (signal.aborted) throw new UserError(`interrupted by ${interruptedBy() ?? 'a signal'} before tracing began`, 130);
      throw new UserError(`bpftrace could not attach its probes: ${bpftraceError(watch.stderr())}`);
    }
    signalGroup(command, 'SIGCONT');

    const commandDone = waitExit(command);
    let partial = false;
    const forward = () => {
      partial = true;
      signalGroup(command, interruptedBy() ?? 'SIGINT');
    };
    signal.addEventListener('abort', forward, { once: true });
    await Promise.race([commandDone, bpftraceDone]);
    signal.removeEventListener('abort', forward);
    if (!exited(command)) {
      // bpftrace ended first: the trace would be incomplete, so the command stops too.
      await stopGroup(command, 'SIGTERM', 5000);
      throw new UserError(`bpftrace stopped while tracing (${bpftrace.signalCode ?? `exit ${bpftrace.exitCode}`}): ${bpftraceError(watch.stderr())}; the command was stopped`);
    }
    if (!(await finishBpftrace(bpftrace, 10_000))) {
      throw new UserError('bpftrace did not print its maps within 10 s of being told to stop (killed; nothing is left attached)');
    }
    if (process.env.IOLAB_DEBUG) process.stderr.write(`${program}\n${watch.stderr()}\n${watch.lines().join('\n')}\n`);
    const summary = summarize(collectMaps(watch.lines()));
    return { summary, exitCode: exitStatus(command), partial: partial || signal.aborted, pid };
  } finally {
    killAll();
    process.off('exit', killAll);
  }
}
