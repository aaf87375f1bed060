// The temp name a file is written under before it is renamed into place (every writing
// command, and the storage benchmark's layout in native/bench/layout.c, which spells the same
// name in C): `.NAME.iolab-PID.tmp` beside it. The pid says whose it is, so a run that was
// killed (SIGKILL runs no cleanup) leaves a temp file the next run for the same NAME can tell
// is stale: its pid is gone. A live pid's temp file is left alone, whoever that pid is now.
import { createHash } from 'node:crypto';
import { lstatSync, readdirSync, rmSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { processIsAlive } from './procfs.js';
import { showText } from './show-bytes.js';

/** A name near the 255-byte limit would not fit with the temp name's dot and suffix. */
function stemOf(name: string): string {
  return Buffer.byteLength(name) <= 200 ? name : `iolab-${createHash('sha256').update(name).digest('hex').slice(0, 16)}`;
}

/** The temp file this process writes `path` under (`extra` tells apart two of one process). */
export function tempNameFor(path: string, extra = ''): string {
  return join(dirname(resolve(path)), `.${stemOf(basename(path))}.iolab-${process.pid}${extra ? `-${extra}` : ''}.tmp`);
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Removes the temp files that runs now dead left for `path` (killed while writing it), each
 * said in one line on stderr. Only regular files, only names this module (or layout.c) gives,
 * only pids that no longer run. Returns the names removed.
 */
export function removeStaleTempFiles(path: string): string[] {
  const folder = dirname(resolve(path));
  const own = new RegExp(`^\\.${escape(stemOf(basename(path)))}\\.iolab-(\\d+)(?:-[0-9a-f]+)?\\.tmp$`);
  let names: string[];
  try {
    names = readdirSync(folder);
  } catch {
    return [];  // no folder yet: nothing left there
  }
  const removed: string[] = [];
  for (const name of names) {
    const pid = Number(own.exec(name)?.[1]);
    if (!pid || pid === process.pid || processIsAlive(pid)) continue;
    const temp = join(folder, name);
    if (!lstatSync(temp, { throwIfNoEntry: false })?.isFile()) continue;
    rmSync(temp, { force: true });
    removed.push(name);
    process.stderr.write(`note: removed '${showText(temp)}', left by an iolab run that was killed (pid ${pid})\n`);
  }
  return removed;
}
