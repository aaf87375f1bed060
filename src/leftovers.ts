// What a run that could not clean up leaves behind (SIGKILL, or a third signal while it was
// cleaning up: src/interrupt.ts): its temp folders, sockets and shared-memory objects. Each such
// name carries the pid of the run that made it, so a later run tells a dead run's leftovers from
// a live one's and removes only those: this user's, of a pid that no longer runs. Each removal
// is said in one `note:` line on stderr.
import { lstatSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { processIsAlive } from './procfs.js';
import { showText } from './show-bytes.js';
import { errnoText } from './user-error.js';

/** One kind of leftover: the folder it is made in, its name (the pid in the first group). */
export interface LeftoverKind {
  folder: string;
  pattern: RegExp;
  /** As a user calls it: "the temp folder". */
  what: string;
}

/** The prefix of a temp folder of this run (`iolab-bench-api-PID-`; mkdtemp adds six characters). */
export function runFolderPrefix(name: string): string {
  return join(tmpdir(), `${name}-${process.pid}-`);
}

/** A temp folder made with runFolderPrefix(name), as a leftover kind. */
export function runFolderKind(name: string): LeftoverKind {
  return { folder: tmpdir(), pattern: new RegExp(`^${name}-(\\d+)-[A-Za-z0-9]{6}$`), what: 'the temp folder' };
}

/** Removes what runs now dead left (`by`: "a tour", "a bench api run"); the paths removed. */
export function removeDeadRunsLeftovers(kinds: LeftoverKind[], by: string): string[] {
  const removed: string[] = [];
  const uid = process.getuid?.();
  for (const { folder, pattern, what } of kinds) {
    let names: string[];
    try {
      names = readdirSync(folder);
    } catch {
      continue;
    }
    for (const name of names) {
      const pid = Number(pattern.exec(name)?.[1]);
      if (!pid || pid === process.pid || processIsAlive(pid)) continue;
      const path = join(folder, name);
      const st = lstatSync(path, { throwIfNoEntry: false });
      if (!st || st.isSymbolicLink() || (uid !== undefined && st.uid !== uid)) continue;
      try {
        // the dead run's children die with it, but not at once: one may still add a file
        // (ENOTEMPTY) for a moment; rm retries, and a folder that stays is said, not fatal
        rmSync(path, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
      } catch (err) {
        process.stderr.write(`note: could not remove ${what} '${showText(path)}', left by ${by} that was killed (pid ${pid}): ${errnoText(err)}\n`);
        continue;
      }
      removed.push(path);
      process.stderr.write(`note: removed ${what} '${showText(path)}', left by ${by} that was killed (pid ${pid})\n`);
    }
  }
  return removed;
}
