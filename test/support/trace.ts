// Helpers for the trace tests: what a process's children are, whether anything bpftrace
// attached is still there, and a bpftrace script run around a step of a test.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { execa } from 'execa';
import { addonPath } from '../../src/native.js';
import { bpftraceBinary, bpftraceEnv } from '../../src/trace/probes.js';
import { finishBpftrace } from '../../src/trace/run.js';
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

/** The addon's USDT probes of one provider whose names start with `prefix`, from its
 * .note.stapsdt entries: [name, argument count], sorted. */
export async function usdtProbes(provider: string, prefix: string): Promise<[string, number][]> {
  // (bpftrace's environment: without the sanitizer runtime the ASan suite preloads)
  const notes = String((await execa('readelf', ['-n', addonPath()], { env: bpftraceEnv(), extendEnv: false })).stdout);
  return [...notes.matchAll(/Provider: (\S+)\s+Name: (\S+)\s+Location: \S+, Base: \S+, Semaphore: \S+\s+Arguments: (.*)/g)]
    .filter((m) => m[1] === provider && m[2].startsWith(prefix))
    .map((m): [string, number] => [m[2], m[3].trim().split(/\s+/).length])
    .sort((a, b) => a[0].localeCompare(b[0]));
}

/** Rejects with "<what> did not finish within N s" when p has not settled by then: a step that
 * hangs names itself instead of running into the test's timeout. */
export async function within<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms / 1000} s`)), ms);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Starts `bpftrace -e script` and resolves once its BEGIN probe printed "attached" (BEGIN runs
 * once every probe is attached). `finish()` ends it the way `iolab trace` does (SIGTERM,
 * repeated: bpftrace 0.17 loses a signal that lands outside its epoll_wait, and a lone SIGINT
 * left it waiting for good under load) and resolves with everything it printed.
 */
export async function startBpftrace(script: string): Promise<{ finish(): Promise<string> }> {
  const tracer = execa('bpftrace', ['-e', `BEGIN { printf("attached\\n"); } ${script}`],
    { reject: false, all: true, buffer: true, env: bpftraceEnv(), extendEnv: false });
  let seen = '';
  const attached = new Promise<void>((resolve, reject) => {
    tracer.all?.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.includes('attached\n')) resolve();
    });
    tracer.then(() => reject(new Error(`bpftrace ended before it attached: ${seen}`)), reject);
  });
  try {
    await within(60_000, 'bpftrace attaching its probes', attached);
  } catch (err) {
    tracer.kill('SIGKILL');
    await tracer;
    throw err;
  }
  return {
    async finish() {
      if (!(await finishBpftrace(tracer, 15_000))) throw new Error(`bpftrace did not exit within 15 s of SIGTERM: ${seen}`);
      return String((await tracer).all);
    },
  };
}
