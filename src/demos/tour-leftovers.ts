// What a tour that was killed (SIGKILL runs no cleanup) leaves: its temp folder
// (/tmp/iolab-tour-PID-XXXXXX) and the shared-memory objects of its shm demo
// (/dev/shm/iolab-tour-PID, ...-io_uring). Each name carries the tour's pid, so the next tour
// tells a dead one's leftovers from a live one's, and removes only those: this user's, of a pid
// that no longer runs. Each removal is said in one `note:` line on stderr.
import { lstatSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { processIsAlive } from '../procfs.js';
import { showText } from '../show-bytes.js';
import { errnoText } from '../user-error.js';

/** The prefix of this tour's temp folder (mkdtemp adds six characters). */
export function tourFolderPrefix(): string {
  return join(tmpdir(), `iolab-tour-${process.pid}-`);
}

/** The name of this tour's shared-memory object (`-io_uring` for the variant). */
export function tourShmName(ioUring: boolean): string {
  return `/iolab-tour-${process.pid}${ioUring ? '-io_uring' : ''}`;
}

/** Removes what tours now dead left in the temp folder and /dev/shm; the names removed. */
export function removeDeadToursLeftovers(): string[] {
  const removed: string[] = [];
  const uid = process.getuid?.();
  const sweep = (folder: string, pattern: RegExp, what: string) => {
    let names: string[];
    try {
      names = readdirSync(folder);
    } catch {
      return;
    }
    for (const name of names) {
      const pid = Number(pattern.exec(name)?.[1]);
      if (!pid || pid === process.pid || processIsAlive(pid)) continue;
      const path = join(folder, name);
      const st = lstatSync(path, { throwIfNoEntry: false });
      if (!st || st.isSymbolicLink() || (uid !== undefined && st.uid !== uid)) continue;
      try {
        // the dead tour's demo processes die with it, but not at once: one may still add a file
        // (ENOTEMPTY) for a moment; rm retries, and a folder that stays is said, not fatal
        rmSync(path, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
      } catch (err) {
        process.stderr.write(`note: could not remove ${what} '${showText(path)}', left by a tour that was killed (pid ${pid}): ${errnoText(err)}\n`);
        continue;
      }
      removed.push(path);
      process.stderr.write(`note: removed ${what} '${showText(path)}', left by a tour that was killed (pid ${pid})\n`);
    }
  };
  sweep(tmpdir(), /^iolab-tour-(\d+)-[A-Za-z0-9]{6}$/, 'the temp folder');
  sweep('/dev/shm', /^iolab-tour-(\d+)(?:-io_uring)?$/, 'the shared-memory object');
  return removed;
}
