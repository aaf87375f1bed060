// Helpers for the demo tests (test/demo-*.test.ts).
import { execa } from 'execa';
import { readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { projectRoot } from '../../src/native.js';
import { cliPath, runCli } from './cli.js';

/** The inverse of showBytes (src/demos/common.ts): the exact bytes a shown line stands for. */
export function unshowBytes(shown: string): Buffer {
  const out: Buffer[] = [];
  const simple: Record<string, number> = { '\\': 0x5c, '0': 0, t: 9, n: 10, r: 13 };
  let i = 0;
  while (i < shown.length) {
    if (shown[i] === '\\') {
      const c = shown[i + 1];
      if (c === 'x') {
        out.push(Buffer.from([parseInt(shown.slice(i + 2, i + 4), 16)]));
        i += 4;
      } else if (c in simple) {
        out.push(Buffer.from([simple[c]]));
        i += 2;
      } else {
        throw new Error(`bad escape at ${i} in ${JSON.stringify(shown)}`);
      }
    } else {
      const ch = String.fromCodePoint(shown.codePointAt(i)!);
      out.push(Buffer.from(ch, 'utf8'));
      i += ch.length;
    }
  }
  return Buffer.concat(out);
}

/** Objects in /dev/shm whose names start with prefix (no leading '/'). */
export function shmObjects(prefix: string): string[] {
  return readdirSync('/dev/shm').filter((f) => f.startsWith(prefix));
}

/** A name unique to this test process, for shm objects. */
let counter = 0;
export function uniqueShmName(tag: string): string {
  return `/iolab-test-${tag}-${process.pid}-${counter++}`;
}

export interface CliResult { stdout: string; stderr: string; exitCode: number | undefined }

/** timeoutMs: SIGTERM the command after this long (a command that hangs then fails the test
 * with its exit status instead of timing the whole test out). */
type CliOptions = { uid?: number; gid?: number; cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number };

/** runCli, also as another uid: directly when that uid can read the checkout, else through
 * test/fixtures/iolab-as-uid.ts (loads as root, then drops to the uid before running). */
export function runCliAs(args: string[], options: CliOptions = {}) {
  const { timeoutMs, ...rest } = options;
  if (options.uid === undefined || nobodyCanRunCli) return runCli(args, { ...rest, timeout: timeoutMs });
  const asUid = join(projectRoot, 'test/fixtures/iolab-as-uid.ts');
  return execa(process.execPath, ['--import', 'tsx', asUid, String(options.uid), String(options.gid ?? options.uid), ...args],
    { reject: false, cwd: options.cwd ?? projectRoot, env: options.env, timeout: timeoutMs });
}

/** runCliAs with string outputs (the typed shape the demo tests assert on). */
export async function cli(args: string[], options: CliOptions = {}): Promise<CliResult> {
  const r = await runCliAs(args, options);
  return { stdout: String(r.stdout), stderr: String(r.stderr), exitCode: r.exitCode };
}

/**
 * True when uid 65534 can run this checkout's CLI (the uid-refusal tests run a sender as that
 * user). A clone under a private folder (e.g. /root, mode 0700) cannot: runCliAs then loads the
 * command as root and drops to the uid before running it (test/fixtures/iolab-as-uid.ts).
 */
export const nobodyCanRunCli: boolean = (() => {
  if (process.getuid?.() !== 0) return false;
  const files = [cliPath, join(projectRoot, 'dist/program.js'), join(projectRoot, 'node_modules/commander/package.json')];
  const r = spawnSync(process.execPath, ['-e', `for (const f of ${JSON.stringify(files)}) require('fs').accessSync(f, 4)`],
    { uid: 65534, gid: 65534, cwd: '/' });
  return r.status === 0;
})();
