// The one way to run iolab as a child process (tests, tour, bench echo's servers, bench ipc's
// peer): the same Node binary and the checkout's bin/iolab.js, whatever the cwd.
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

export const iolabEntry = join(dirname(fileURLToPath(import.meta.url)), '..', 'bin', 'iolab.js');

/** [file, argv] for spawn()/execa(): `iolab ...args` as a child of this Node. */
export function iolabArgv(args: readonly string[]): [string, string[]] {
  return [process.execPath, [iolabEntry, ...args]];
}
