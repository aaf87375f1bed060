// Servers in processes of their own for the tests of onRing across processes: a child whose
// stdout says, one JSON object a line, when it listens (and what else it did), and requests on
// fresh connections that tell which process answered (the fixtures answer with their pid).
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import http from 'node:http';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { projectRoot } from '../../src/native.js';
import { newProcessTag, processTagVariable } from './procs.js';

/** The compiled package's entry, as a child imports it. */
export const indexUrl = pathToFileURL(join(projectRoot, 'dist', 'index.js')).href;
export const fixture = (name: string) => join(projectRoot, 'test', 'fixtures', name);

export interface JsonChild {
  child: ChildProcess;
  /** Resolves with the next JSON line of its stdout that has `key` (and passes `match`). */
  next<T = Record<string, unknown>>(key: string, match?: (line: T) => boolean): Promise<T>;
  /** Its stderr so far. */
  stderr(): string;
  /** SIGTERM (SIGKILL after 10 s) unless it exited, then its exit status. */
  stop(): Promise<number | null>;
}

/** Starts a child whose stdout is JSON lines, tagged for test/support/procs.ts. */
export function startJsonChild(command: string, args: string[], options: SpawnOptions = {}): JsonChild {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...options, env: { ...process.env, [processTagVariable]: newProcessTag(), ...options.env } });
  const lines: Record<string, unknown>[] = [];
  const waiting: { key: string; match?: (line: never) => boolean; resolve: (v: never) => void; reject: (e: Error) => void }[] = [];
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d));
  const deliver = () => {
    for (const w of [...waiting]) {
      const i = lines.findIndex((l) => w.key in l && (w.match === undefined || w.match(l as never)));
      if (i < 0) continue;
      const [line] = lines.splice(i, 1);
      waiting.splice(waiting.indexOf(w), 1);
      w.resolve(line as never);
    }
  };
  child.stdout!.on('data', (d: Buffer) => {
    out += d;
    const parts = out.split('\n');
    out = parts.pop()!;
    for (const p of parts) {
      try {
        lines.push(JSON.parse(p) as Record<string, unknown>);
      } catch { /* not ours */ }
    }
    deliver();
  });
  // lines may come after the child exited, from a process it started that kept its stdout
  let ended = false;
  child.stdout!.once('end', () => {
    ended = true;
    for (const w of waiting.splice(0)) w.reject(new Error(`its stdout ended before it said ${w.key}: ${err.trim()}`));
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    next: <T>(key: string, match?: (line: T) => boolean) => new Promise<T>((resolve, reject) => {
      if (ended) return reject(new Error(`its stdout had ended: ${err.trim()}`));
      waiting.push({ key, match: match as ((line: never) => boolean) | undefined, resolve: resolve as (v: never) => void, reject });
      deliver();
    }),
    stderr: () => err,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/** GET / on a connection of its own; resolves with the body (the fixtures' pid) or the error's code. */
export function answer(port: number, path = '/'): Promise<{ body?: string; error?: string }> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path, agent: false, headers: { connection: 'close' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ body }));
      res.on('error', (e: Error & { code?: string }) => resolve({ error: e.code ?? e.message }));
    });
    req.on('error', (e: Error & { code?: string }) => resolve({ error: e.code ?? e.message }));
  });
}

/** `count` requests on fresh connections, `concurrency` at a time: answers per body, and the errors. */
export async function spread(port: number, count: number, concurrency = 10): Promise<{ byBody: Record<string, number>; errors: string[] }> {
  const byBody: Record<string, number> = {};
  const errors: string[] = [];
  for (let done = 0; done < count; done += concurrency) {
    const batch = await Promise.all(Array.from({ length: Math.min(concurrency, count - done) }, () => answer(port)));
    for (const r of batch) {
      if (r.body !== undefined) byBody[r.body] = (byBody[r.body] ?? 0) + 1;
      else errors.push(r.error!);
    }
  }
  return { byBody, errors };
}

