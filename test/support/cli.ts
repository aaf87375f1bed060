// Runs the iolab CLI as a user does: a separate process, never throwing on a non-zero exit.
// The command is the package's: dist/cli.js, compiled from src/ by the global setup before the
// run (test/global-setup.ts). It starts in half the time src/ takes through tsx, and the
// suite starts iolab several hundred times. test/cli-checkout.test.ts runs the checkout's tsx
// launcher.
import { execa, type Options, type ResultPromise } from 'execa';
import { join } from 'node:path';
import { projectRoot } from '../../src/native.js';

export const cliPath = join(projectRoot, 'dist', 'cli.js');

/** [file, argv] for spawn()/execa(): `iolab ...args` as a child of this Node, from dist/. */
export function iolabArgv(args: readonly string[]): [string, string[]] {
  return [process.execPath, [cliPath, ...args]];
}

/** Runs `iolab ...args` as a separate process; never throws on a non-zero exit. */
export function runCli(args: string[], options: Options = {}) {
  const [file, argv] = iolabArgv(args);
  return execa(file, argv, { reject: false, cwd: projectRoot, ...options });
}

/** runCli with stdout and stderr as strings (execa's wide types narrowed once, here). */
export async function runCliText(args: string[], options: Options = {}): Promise<{ exitCode?: number; stdout: string; stderr: string }> {
  const r = await runCli(args, options);
  return { exitCode: r.exitCode, stdout: String(r.stdout ?? ''), stderr: String(r.stderr ?? '') };
}

/** Starts `iolab ...args` and resolves once a stdout line matches `ready` (e.g. "listening on"). */
export async function startCli(args: string[], ready: RegExp, options: Options = {}): Promise<{ child: ResultPromise; firstLine: string }> {
  const [file, argv] = iolabArgv(args);
  const child = execa(file, argv, { reject: false, cwd: projectRoot, buffer: true, ...options });
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
