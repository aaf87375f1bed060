// The CLI's surface of paths, read from the commander program itself (src/program.ts): every
// command that runs, and each of its options and arguments that takes a path with the mark it
// was defined with (src/path-options.ts). And what a test compares of the files around a run:
// each entry's kind, bytes, size, mode and inode, and the regular files on /dev's own file
// system (devtmpfs holds device nodes, never a file).
import { Argument, Option, type Command } from 'commander';
import { createHash } from 'node:crypto';
import { lstatSync, readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { buildProgram } from '../../src/program.js';
import { pathMarkOf, type PathMark } from '../../src/path-options.js';

export interface PathItem {
  /** How a user names it: `--filename`, `-o` (report's short spelling first), `<jobfile>`. */
  key: string;
  mark: PathMark;
  /** An argument, or an option (a value after its flag). */
  argument: boolean;
}

export interface CommandSurface {
  /** `bench iops`, `fdpass recv`. */
  name: string;
  paths: PathItem[];
  /** The long flags the command has (--force, --append, --json...). */
  flags: string[];
}

/** An option or argument whose name, value or help names a file, a folder, a path or a socket. */
const pathWords = new Set(['file', 'files', 'filename', 'infile', 'outfile', 'output', 'jobfile', 'dir', 'directory', 'folder', 'path', 'socket']);
const namesPath = (text: string) => text.toLowerCase().split(/[^a-z]+/).some((w) => pathWords.has(w));

/** Whether an option or argument looks as if it took a path: then it must carry a mark. A flag
 * takes no value; a value read by a number or duration parser or one of fixed choices is no path
 * whatever its help says. */
export function suggestsPath(item: Option | Argument): boolean {
  if (item instanceof Argument) return namesPath(item.name()) || namesPath(item.description);
  if (!item.required && !item.optional) return false;
  const placeholder = /[<[]([^>\]]+)[>\]]/.exec(item.flags)?.[1] ?? '';
  if (namesPath(item.long ?? '') || namesPath(placeholder)) return true;
  const parsed = (item.parseArg as { rule?: unknown } | undefined)?.rule !== undefined || item.argChoices !== undefined;
  return !parsed && namesPath(item.description);
}

/** Every command that runs (has an action), with its path items; and every item that looks
 * like a path but has no mark. */
export async function pathSurface(): Promise<{ commands: CommandSurface[]; unmarked: string[] }> {
  const program = await buildProgram([]);
  const commands: CommandSurface[] = [];
  const unmarked: string[] = [];
  const walk = (cmd: Command, names: string[]) => {
    const name = names.join(' ');
    const items: [Option | Argument, string, boolean][] = [
      ...cmd.options.map((o): [Option, string, boolean] => [o, o.short ?? o.long ?? o.flags, false]),
      ...cmd.registeredArguments.map((a): [Argument, string, boolean] => [a, `<${a.name()}>`, true]),
    ];
    const paths: PathItem[] = [];
    for (const [item, key, argument] of items) {
      const mark = pathMarkOf(item);
      if (mark === undefined && suggestsPath(item)) unmarked.push(`${name} ${key}`);
      if (mark !== undefined && mark !== 'not a path') paths.push({ key, mark, argument });
    }
    if ((cmd as unknown as { _actionHandler?: unknown })._actionHandler) {
      commands.push({ name, paths, flags: cmd.options.map((o) => o.long ?? '').filter(Boolean) });
    }
    for (const sub of cmd.commands) walk(sub, [...names, sub.name()]);
  };
  for (const sub of program.commands) walk(sub, [sub.name()]);
  return { commands, unmarked };
}

/** What a test compares of one entry: its kind, and for a file its bytes, size, mode and inode;
 * a folder's names; a link's target. */
export interface EntryState { kind: string; ino: number; mode: number; size?: number; sha?: string; names?: string[]; target?: string }

export function entryState(path: string): EntryState | undefined {
  const st = lstatSync(path, { throwIfNoEntry: false });
  if (!st) return undefined;
  const base = { ino: st.ino, mode: st.mode };
  if (st.isFile()) return { kind: 'file', ...base, size: st.size, sha: createHash('sha256').update(readFileSync(path)).digest('hex') };
  if (st.isSymbolicLink()) return { kind: 'symlink', ...base, target: readlinkSync(path) };
  if (st.isDirectory()) return { kind: 'folder', ...base, names: readdirSync(path).sort() };
  return { kind: st.isFIFO() ? 'fifo' : st.isCharacterDevice() ? 'char device' : st.isSocket() ? 'socket' : 'other', ...base };
}

/** Every entry of a folder (one level) with its state. */
export function folderState(dir: string): Map<string, EntryState> {
  const state = new Map<string, EntryState>();
  for (const name of readdirSync(dir)) state.set(name, entryState(join(dir, name))!);
  return state;
}

/** The regular files on /dev's own file system, however deep. */
export function regularFilesInDev(dir = '/dev', dev = statSync('/dev').dev): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isFile()) found.push(path);
    else if (entry.isDirectory() && lstatSync(path).dev === dev) found.push(...regularFilesInDev(path, dev));
  }
  return found.sort();
}
