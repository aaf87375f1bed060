// Runs the iolab CLI as a user does: a separate process, never throwing on a non-zero exit.
import { execa, type Options, type ResultPromise } from 'execa';
import { projectRoot } from '../../src/native.js';
import { iolabArgv, iolabEntry } from '../../src/spawn-iolab.js';

export const cliPath = iolabEntry;

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
