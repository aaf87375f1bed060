// Temp folders and compiled fixtures for tests.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { projectRoot } from '../../src/native.js';

/** A short temp folder (Unix socket paths must fit 107 bytes). */
export function shortTempDir(prefix = 'iolab-'): { path: string; cleanup: () => void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, cleanup: () => rmSync(path, { recursive: true, force: true }) };
}

/** Compiles test/fixtures/seccomp-refuse-io-uring.c into dir and returns the program's path:
 * `<path> EPERM|ENOSYS command args...` runs the command with io_uring_setup refused. */
export function buildSeccompRefuser(dir: string): string {
  const program = join(dir, 'seccomp-refuse-io-uring');
  execFileSync('gcc', ['-O2', '-Wall', '-o', program, join(projectRoot, 'test/fixtures/seccomp-refuse-io-uring.c')]);
  return program;
}

/** Compiles test/fixtures/<name>.c into dir with cc and returns the program's path. */
export function buildFixture(dir: string, name: string, libraries: string[] = []): string {
  const program = join(dir, name);
  execFileSync('cc', ['-O2', '-Wall', '-Wextra', '-Werror', '-o', program, join(projectRoot, `test/fixtures/${name}.c`), ...libraries]);
  return program;
}
