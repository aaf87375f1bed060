// Finding the processes a test started, however deep: each run gets a unique tag in its
// environment (children inherit it), and /proc tells which live processes carry it.
import { readdirSync, readFileSync } from 'node:fs';
import { procStatFields } from '../../src/procfs.js';
import { randomUUID } from 'node:crypto';

export const processTagVariable = 'IOLAB_TEST_TAG';

/** A fresh tag for one run: pass `{ env: { [processTagVariable]: tag } }` to the child. */
export function newProcessTag(): string {
  return randomUUID();
}

/** Live processes whose environment holds the tag (zombies have none, so they do not count),
 * with their command lines. */
export function processesTagged(tag: string): { pid: number; cmdline: string }[] {
  const found: { pid: number; cmdline: string }[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const env = readFileSync(`/proc/${name}/environ`, 'utf8');
      if (!env.split('\0').includes(`${processTagVariable}=${tag}`)) continue;
      const cmdline = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').join(' ').trim();
      found.push({ pid: Number(name), cmdline });
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return found;
}

/** Polls until the predicate holds (or throws after timeoutMs). */
export async function waitFor<T>(what: string, probe: () => T | undefined | false, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Live (not zombie) child processes of pid. */
export function childrenOf(pid: number): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const [state, ppid] = procStatFields(name) ?? []; // none: gone meanwhile
    if (state !== undefined && Number(ppid) === pid && state !== 'Z') found.push(Number(name));
  }
  return found;
}
