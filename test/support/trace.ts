// Helpers for the trace tests: what a process's children are, and whether anything bpftrace
// attached is still there.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { bpftraceBinary } from '../../src/trace/probes.js';
import { procStatFields } from '../../src/procfs.js';

/** Why the trace tests cannot run here, or undefined when they can. */
export function traceUnavailable(): string | undefined {
  if (process.geteuid?.() !== 0) return 'tracing needs root';
  if (!bpftraceBinary()) return 'bpftrace is not installed';
  return undefined;
}

/** The direct children of pid (all its threads' children). */
export function childrenOf(pid: number): number[] {
  const out: number[] = [];
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const text = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim();
      if (text) out.push(...text.split(/\s+/).map(Number));
    }
  } catch { /* gone */ }
  return out;
}

export function commandName(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}

/** The process state letter (R, S, T, Z...), '' when it is gone. */
export function processState(pid: number): string {
  return procStatFields(pid)?.[0] ?? '';
}

export function alive(pid: number): boolean {
  const s = processState(pid);
  return s !== '' && s !== 'Z';
}

/** Polls until check() is true (or throws after timeoutMs). */
export async function until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Lines of the dynamic probe files that name the addon or bpftrace: none once tracing ended
 * (bpftrace attaches through perf events tied to its fds; a legacy attach would show here). */
export function leftoverDynamicProbes(): string[] {
  const files = ['/sys/kernel/tracing/uprobe_events', '/sys/kernel/tracing/kprobe_events'];
  return files.filter((f) => existsSync(f)).flatMap((f) => readFileSync(f, 'utf8').split('\n'))
    .filter((l) => /iolab|bpftrace|bcc/i.test(l));
}

/** bpftrace processes that are children of pid (iolab trace's own). */
export function bpftraceChildren(pid: number): number[] {
  return childrenOf(pid).filter((c) => commandName(c) === 'bpftrace');
}
