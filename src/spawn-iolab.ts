// The one way to run iolab as a child process (tests, tour, bench echo's servers, bench ipc's
// peer): the same Node binary and the same iolab as the parent, whatever the cwd. Compiled
// (dist/spawn-iolab.js, in the package) that is dist/cli.js beside this file; from the
// checkout's sources, the launcher that runs them through tsx.
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const here = fileURLToPath(import.meta.url);
export const iolabEntry = here.endsWith('.ts')
  ? join(dirname(here), '..', 'scripts', 'iolab-ts.mjs')
  : join(dirname(here), 'cli.js');

/** [file, argv] for spawn()/execa(): `iolab ...args` as a child of this Node. */
export function iolabArgv(args: readonly string[]): [string, string[]] {
  return [process.execPath, [iolabEntry, ...args]];
}
