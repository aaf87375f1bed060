// What a leak check in a child process compares: this process's fds and what each one is.
import fs from 'node:fs';

/** This process's open fds and what each is (the readdir's own fd left out). */
export function openFds(): Map<string, string> {
  const out = new Map<string, string>();
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    try {
      out.set(fd, fs.readlinkSync(`/proc/self/fd/${fd}`));
    } catch {
      // the readdir's own fd, gone by now
    }
  }
  return out;
}

function isFolder(path: string): boolean {
  try {
    return fs.statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** The fds open now that were not open (as the same thing) in `before`: "fd -> what".
 * Fds that went are not counted, nor folders and tsx's cache files: the runtime (tsx's loader
 * on its own thread) opens and closes those whenever it likes, so on Node 24 a count of fds
 * went down or up by one or two while the code under test did nothing. A wrong close of one
 * of the test's own fds shows as that fd's next use failing. */
export function fdsLeftOpen(before: Map<string, string>): string[] {
  const runtime = (what: string) => isFolder(what) || what.startsWith('/tmp/tsx-');
  return [...openFds()].filter(([fd, what]) => before.get(fd) !== what && !runtime(what)).map(([fd, what]) => `${fd} -> ${what}`);
}
