// Shared test helpers: run the CLI as a user does, count this process's fds, temp folders,
// and wait for the addon's live-object counters to settle.
import { afterAll, beforeAll, expect } from 'vitest';
import { execa, type Options, type ResultPromise } from 'execa';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { native, projectRoot, type LiveObjects } from '../src/native.js';

export const cliPath = join(projectRoot, 'bin/iolab.js');

/** Runs `iolab ...args` as a separate process; never throws on a non-zero exit. */
export function runCli(args: string[], options: Options = {}) {
  return execa(process.execPath, [cliPath, ...args], { reject: false, cwd: projectRoot, ...options });
}

/** Starts `iolab ...args` and resolves once a stdout line matches `ready` (e.g. "listening on"). */
export async function startCli(args: string[], ready: RegExp, options: Options = {}): Promise<{ child: ResultPromise; firstLine: string }> {
  const child = execa(process.execPath, [cliPath, ...args], { reject: false, cwd: projectRoot, buffer: true, ...options });
  const firstLine = await new Promise<string>((resolve, reject) => {
    let seen = '';
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      const line = seen.split('\n').find((l) => ready.test(l));
      if (line !== undefined) {
        child.stdout?.off('data', onData);
        resolve(line);
      }
    };
    child.stdout?.on('data', onData);
    child.then((r) => reject(new Error(`exited (${r.exitCode}) before ready: ${r.stderr}`)), reject);
  });
  return { child, firstLine };
}

/** Number of open fds of this process. */
export function openFdCount(): number {
  return readdirSync('/proc/self/fd').length - 1; // minus the fd readdir itself used
}

/** A short temp folder (Unix socket paths must fit 107 bytes). */
export function shortTempDir(prefix = 'iolab-'): { path: string; cleanup: () => void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, cleanup: () => rmSync(path, { recursive: true, force: true }) };
}

/** Runs GC (vitest runs with --expose-gc) a few times so finalizers get their turn. */
export async function collectGarbage(): Promise<void> {
  for (let i = 0; i < 3; i++) {
    globalThis.gc?.();
    await new Promise((r) => setImmediate(r));
  }
}

/** Live-object counters after GC; tests assert they are back at zero. */
export async function settledLiveObjects(): Promise<LiveObjects> {
  await collectGarbage();
  return native.liveObjects();
}

export const zeroLiveObjects: LiveObjects = {
  rings: 0, ringOps: 0, heldBuffers: 0, mappings: 0, ownedFds: 0, nativeJobs: 0, nativeServers: 0,
};

/** Compiles test/fixtures/seccomp-refuse-io-uring.c into dir and returns the program's path:
 * `<path> EPERM|ENOSYS command args...` runs the command with io_uring_setup refused. */
export function buildSeccompRefuser(dir: string): string {
  const program = join(dir, 'seccomp-refuse-io-uring');
  execFileSync('gcc', ['-O2', '-Wall', '-o', program, join(projectRoot, 'test/fixtures/seccomp-refuse-io-uring.c')]);
  return program;
}

/** Registers the leak check a native test file ends with: after setup (optional), note this
 * process's fd count; after all tests, expect the same count and every live-object counter back
 * at zero, then remove the temp folder whatever the outcome. */
export function checkLeaksAfterAll(tmp: { cleanup: () => void }, setup?: () => void): void {
  let fdsBefore = 0;
  beforeAll(() => {
    setup?.();
    fdsBefore = openFdCount();
  });
  afterAll(async () => {
    try {
      expect(openFdCount()).toBe(fdsBefore);
      expect(await settledLiveObjects()).toEqual(zeroLiveObjects);
    } finally {
      tmp.cleanup();
    }
  });
}
