// The files of one run: every path the command was given (options and arguments marked in
// src/path-options.ts), checked by the program before the command's action, and those the run
// learns of later (a job file's filename=). A file the run writes is never a file it reads or
// writes under another option, --force or not: the same file is the same device and inode (a
// hard link, the same file by another path, a symlink's target) or, for a file not there yet,
// the same absolute path. So `--output` cannot replace the very file being benchmarked.
import { lstatSync, realpathSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import type { Command } from 'commander';
import { givenPaths, type GivenPath, type OptionsGivenElsewhere, type PathMark } from './path-options.js';
import { UserError } from './user-error.js';
import { showText } from './show-bytes.js';
import { checkOutputPath, standardStream } from './write-target.js';
import { refuseNonUtf8Arguments } from './argv-text.js';

interface RunFile {
  option: string;
  path: string;
  output: boolean;
  /** The run's results (--output): named first in a refusal. */
  results?: boolean;
  /** dev:ino of the name itself and, for a symlink, of its target. */
  ids: string[];
  /** The absolute path, through the real path of its folder. */
  absolute: string;
}

const files: RunFile[] = [];

function identify(path: string): Pick<RunFile, 'ids' | 'absolute'> {
  const ids: string[] = [];
  for (const st of [statSafe(path, lstatSync), statSafe(path, statSync)]) {
    if (st && !ids.includes(`${st.dev}:${st.ino}`)) ids.push(`${st.dev}:${st.ino}`);
  }
  let absolute = resolve(path);
  try {
    absolute = join(realpathSync(dirname(absolute)), basename(absolute));
  } catch {
    // no folder yet: the path as given, made absolute
  }
  return { ids, absolute };
}

/** lstat or stat, undefined when it fails (nothing there yet, a dangling link, a name too long:
 * the command's own checks say why). */
function statSafe(path: string, stat: typeof statSync) {
  try {
    return stat(path);
  } catch {
    return undefined;
  }
}

/**
 * Adds a file to the run. Throws the one-line refusal when it is a file the run already has
 * under another option (or another path) and either of the two is written. The same option
 * naming the same path again (one file, several jobs) is the same file.
 */
export function noteRunFile(path: string, option: string, output: boolean, results = false): void {
  if (path === '' || path === '-' || (results && standardStream(path))) return;
  const file: RunFile = { option, path, output, results, ...identify(path) };
  for (const other of files) {
    if (other.option === option && other.absolute === file.absolute) return;
    if (!other.output && !output) continue;
    const same = other.absolute === file.absolute || other.ids.some((id) => file.ids.includes(id));
    if (!same) continue;
    const [written, then] = other.results || (other.output && !output) ? [other, file] : [file, other];
    throw new UserError(`${written.option}: '${showText(written.path)}' is the same file as ${then.option} ` +
      `'${showText(then.path)}' of this run; name another file (--force does not change this)`);
  }
  files.push(file);
}

/** Whether the flags that let the command change an existing file were given. */
function changeAllowed(cmd: Command, mark: PathMark): boolean {
  const values = cmd.opts();
  const elsewhere = (cmd as Command & Partial<OptionsGivenElsewhere>).givenElsewhere;
  return (mark.changedBy ?? ['--force']).some((flag) => {
    const option = cmd.options.find((o) => o.long === flag);
    if (option === undefined) return false;
    return values[option.attributeName()] === true ||
      (elsewhere?.call(cmd, option) ?? []).some((v) => v === undefined || !['0', 'false'].includes(v.trim()));
  });
}

/**
 * The program's check of every path a command was given, before its action runs (a hook): an
 * argument that is not UTF-8 first (src/argv-text.ts), then the
 * files it reads, then those it writes, then its results, each against the others; the results
 * also by the rule of src/write-target.ts (checkOutputPath). `--output -` (or /dev/stdout) of a
 * command that has --json is --json. A new run starts with no files.
 */
export function checkGivenPaths(cmd: Command): void {
  files.length = 0;
  const given = givenPaths(cmd);
  refuseNonUtf8Arguments(given);
  for (const g of given) {
    if (g.path === '') throw new UserError(`${g.option}: the name is empty; name a file${g.mark.results ? ', or - for stdout' : ''}`);
  }
  // what the run reads, then what it writes, then its results: a refusal names the results file
  const order = (g: GivenPath) => (!g.mark.output ? 0 : g.mark.results ? 2 : 1);
  for (const g of [...given].sort((a, b) => order(a) - order(b))) {
    if (!g.mark.output) {
      noteRunFile(g.path, g.option, false);
      continue;
    }
    if (g.mark.results && (g.path === '-' || standardStream(g.path) === 'stdout') && g.key !== undefined && cmd.options.some((o) => o.long === '--json')) {
      cmd.setOptionValue('json', true);
      cmd.setOptionValue(g.key, undefined);
      continue;
    }
    noteRunFile(g.path, g.option, true, g.mark.results !== undefined);
    if (g.mark.results) checkOutputPath(g.path, g.option, { force: changeAllowed(cmd, g.mark), createFolders: g.mark.results.createFolders });
  }
}
