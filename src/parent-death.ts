// Children that must not outlive iolab (echo servers, the load generator in its namespace,
// bench ipc's receiver, fio for --vs-fio) die with the process that started them, even when
// that one is SIGKILLed. An iolab child is started with childEnv() and calls
// dieWithParentIfAsked() as it starts, which sets PR_SET_PDEATHSIG (native/parent_death.cc):
// Node has no spawn option for it, and a child polling its parent would leave it serving for a
// while. A foreign program is started by runDyingWithParent, which sets it between fork and exec.
import { Socket } from 'node:net';
import { native } from './native.js';

export const parentPidVariable = 'IOLAB_PARENT_PID';

/** The environment for a child that must end with this process. */
export function childEnv(base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return { ...base, [parentPidVariable]: String(process.pid) };
}

/** In a child started with childEnv(): die with the parent from now on (at once when it has
 * already gone). The variable is removed, so this process's own children are not told a
 * parent that is not theirs. */
export function dieWithParentIfAsked(): void {
  const value = process.env[parentPidVariable];
  if (value === undefined) return;
  delete process.env[parentPidVariable];
  const parent = Number(value);
  if (Number.isInteger(parent) && parent > 0) native.dieWithParent(parent);
}

/** What a foreign program run by runDyingWithParent did. */
export interface ForeignRun {
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  /** Its CPU time, user + system, every thread of it (wait4). */
  cpuSec: number;
}

async function readAll(fd: number): Promise<string> {
  const stream = new Socket({ fd, readable: true, writable: false });
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Runs a program iolab did not write (fio) to its end, with no shell between: it dies with this
 * process (PR_SET_PDEATHSIG, set in the child between fork and exec), and `stop` sends it SIGINT
 * (fio then ends its jobs and prints what they did). `watch` is given its pid once it runs and
 * its returned function is called as it has ended (fio's CPU by thread, read while it runs).
 */
export async function runDyingWithParent(file: string, args: string[], stop?: AbortSignal,
  watch?: (pid: number) => () => void): Promise<ForeignRun> {
  const child = native.spawnDyingWithParent(file, args);
  const unwatch = watch?.(child.pid);
  const onStop = () => {
    try {
      process.kill(child.pid, 'SIGINT');
    } catch {
      // it has exited already
    }
  };
  stop?.addEventListener('abort', onStop);
  if (stop?.aborted) onStop();
  try {
    const [stdout, stderr, status] = await Promise.all([readAll(child.stdout), readAll(child.stderr), native.waitChild(child.pid)]);
    return { exitCode: status.exitCode, signal: status.signal, stdout, stderr, cpuSec: status.usrSec + status.sysSec };
  } finally {
    unwatch?.();
    stop?.removeEventListener('abort', onStop);
  }
}
