// What iolab may write at a path a user named, and how. Two rules, each checked before any work:
// - a writing command's file (writev, gen; shm checks the object it opened): nothing there, or a
//   regular file (touched only as the command's flags allow), or a symlink (refused; --force
//   replaces the link itself, never its target);
// - the results of a run (every --output, report -o): `-` is stdout (so are /dev/stdout and
//   /dev/fd/1; /dev/stderr is stderr), an empty name is refused,
//   an existing file or a symlink only with --force (then replaced whole, keeping its mode).
// Under both, anything else at the path (a device node, a FIFO, a socket, a folder) is refused
// whatever the flags: replacing one is never what a user meant (/dev/null), and opening a FIFO
// to write waits for a reader. Nothing under /dev, /proc or /sys is created, written or replaced,
// --force or not (src/mounts.ts): `--force -o /dev/stdout` replaced the system's link. New
// contents go to a temp name beside the file (src/temp-files.ts) and are renamed into place.
import { accessSync, closeSync, constants, linkSync, lstatSync, mkdirSync, openSync, readlinkSync, renameSync,
  rmSync, statSync, writeFileSync, type Stats } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { errnoText, UserError } from './user-error.js';
import { kernelFolderOf } from './mounts.js';
import { showText } from './show-bytes.js';
import { removeStaleTempFiles, tempNameFor } from './temp-files.js';

/** What the command was told it may do to an existing file. */
export interface WriteFlags {
  /** --force: replace an existing file, or a symlink itself. */
  replace?: boolean;
  /** --append: add to an existing file. */
  append?: boolean;
  /** The refusal for an existing regular file the flags do not allow touching. */
  existsMessage: string;
}

/** The stream a results path names as other tools take it: /dev/stdout, /dev/fd/1 and
 * /proc/self/fd/1 are this process's stdout (as `-` is), /dev/stderr and fd 2 its stderr. Their
 * names are links under /dev and /proc, which iolab never replaces: it writes to the stream. */
export function standardStream(path: string): 'stdout' | 'stderr' | undefined {
  const m = /^(?:\/dev\/(std(?:out|err))|\/dev\/fd\/([12])|\/proc\/self\/fd\/([12]))$/.exec(path);
  if (!m) return undefined;
  return m[1] === 'stdout' || m[2] === '1' || m[3] === '1' ? 'stdout' : 'stderr';
}

/** Where an entry that is there lives when that is one of the kernel's file systems (its folder's
 * mount: /dev's links, /proc's files), never replaced or written whatever the flags. */
function kernelFolderHolding(path: string): string | undefined {
  return kernelFolderOf(dirname(resolve(path)));
}

/** Whether a path that is not there yet can only name a folder (`out/`, `out/.`): a file is
 * never made there, and the kernel would say so only when the file is renamed into place. */
export function namesFolder(path: string): boolean {
  return /\/\.{0,2}$/.test(path) || path === '.' || path === '..';
}

/** What kind of thing `st` is, as a user calls it ("a character device"); undefined for a
 * regular file or a symlink. */
export function otherKind(st: Stats): string | undefined {
  if (st.isFile() || st.isSymbolicLink()) return undefined;
  if (st.isDirectory()) return 'a directory';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isSocket()) return 'a Unix socket';
  return 'not a file';
}

/** The refusal of anything that is not a regular file (no flag makes iolab write it); `why`
 * for a command that reads one. */
export function notRegularFile(path: string, st: Stats, why = 'iolab writes only regular files'): UserError | undefined {
  const kind = otherKind(st);
  if (kind === undefined) return undefined;
  if (st.isDirectory()) return new UserError(`${showText(path)} is a directory, not a file`);
  return new UserError(`${showText(path)} is ${kind}, not a regular file; left untouched (${why})`);
}

/** The same words for a symlink in every writing command (bench iops says them too). */
export function symlinkRefused(path: string): UserError {
  let target = '?';
  try { target = readlinkSync(path); } catch { /* replaced again meanwhile */ }
  return new UserError(`refusing to write through symlink '${showText(path)}' -> '${showText(target)}' ` +
    '(use --force to replace the link with a new file; its target is never written)');
}

/** The refusal of a new file on one of the kernel's file systems (`option: ` before it; `hint`
 * after it). */
export function refuseKernelFolder(path: string, option = '', hint = ''): void {
  const where = kernelFolderOf(path);
  if (where === undefined) return;
  throw new UserError(`${option}'${showText(path)}' does not exist, and iolab creates no file in ${where}${hint}`);
}

/**
 * Checks what is at `path` before a command writes it. Returns its lstat (undefined when
 * nothing is there) or throws the one-line refusal. A command that then opens an existing path
 * checks the opened fd again with notRegularFile (the path may change in between).
 */
export function checkWriteTarget(path: string, flags: WriteFlags): Stats | undefined {
  let st: Stats;
  try {
    st = lstatSync(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOTDIR') throw new UserError(`cannot write '${showText(path)}': a folder on its way is a file`);
    if (code !== 'ENOENT') throw err;
    refuseKernelFolder(path);
    if (namesFolder(path)) throw new UserError(`cannot write '${showText(path)}': a name ending in / is a folder's; name a file`);
    return undefined;
  }
  const refusal = notRegularFile(path, st);
  if (refusal) throw refusal;
  const kernel = kernelFolderHolding(path);
  if (kernel) throw new UserError(`'${showText(path)}' is in ${kernel}: iolab writes and replaces nothing there, --force or not`);
  if (st.isSymbolicLink()) {
    if (flags.replace) return st;
    throw symlinkRefused(path);
  }
  if (!flags.replace && !flags.append) throw new UserError(flags.existsMessage);
  return st;
}

/** What writing a results file needs of the addon, loaded by prepareOutputs before the run,
 * since a command that writes nothing (`iolab --version`) starts without the addon: the one-step
 * rename, and what a file replaced with --force keeps (src/keep-attributes.ts). */
let renameNoReplace: ((from: string, to: string) => void) | undefined;
let keepAttributes: ((path: string, fd: number) => void) | undefined;

/** Loads what writing the run's checked results files needs; the program awaits it before an
 * action (src/program.ts), and a run that checks more files later (fio's logs) before its work,
 * so writeOutputFile can stay synchronous. */
export async function prepareOutputs(): Promise<void> {
  if (checkedOutputs.size === 0) return;
  try {
    renameNoReplace ??= (await import('./native.js')).native.renameNoReplace;
  } catch {
    // no addon where this runs (report needs none): the two-step link and unlink below
  }
  if (replacingOutputs()) keepAttributes ??= (await import('./keep-attributes.js')).keepAttributes;
}

/** Whether a results file of this run may replace one that is there (--force was given). */
export function replacingOutputs(): boolean {
  return [...checkedOutputs.values()].some((o) => o.replace);
}

/** Results files that passed checkOutputPath in this run, by absolute path: whether each may
 * replace what is there (--force) and whether its missing folders are made. */
const checkedOutputs = new Map<string, { replace: boolean; createFolders: boolean }>();

/**
 * Checks, before any work, that a run's results can be written where the user named them, so a
 * long run is not thrown away at its end and nothing of the user's is lost: not a folder nor a device or FIFO, an existing file or a symlink only with force (the link itself
 * is replaced, never written through), nothing new under /dev, /proc or /sys, and its folder
 * (or with createFolders the nearest existing one above it) one this process may write in.
 * Every refusal is one UserError naming the user's path after the option
 * (`--output: cannot write 'x': it is a folder; name a file`). `-` (stdout) passes.
 */
export function checkOutputPath(path: string, option: string, opts: { force: boolean; createFolders: boolean }): void {
  if (path === '-' || standardStream(path)) return;
  const refuse = (why: string) => new UserError(`${option}: cannot write '${showText(path)}': ${why}`);
  let existing: Stats | undefined;
  try {
    existing = lstatSync(path);
  } catch (err) {
    // nothing there yet is fine (a file on the way is found below); ENAMETOOLONG, ELOOP are not
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'ENOTDIR') throw refuse(errnoText(err));
  }
  if (existing?.isDirectory()) throw refuse('it is a folder; name a file');
  if (!existing && namesFolder(path)) throw refuse('a name ending in / is a folder\'s; name a file');
  const kind = existing && otherKind(existing);
  if (kind) throw refuse(`it is ${kind}, not a regular file; left untouched`);
  const kernel = existing && kernelFolderHolding(path);
  if (kernel) throw refuse(`it is in ${kernel}, where iolab replaces nothing, --force or not`);
  if (existing?.isSymbolicLink() && !opts.force) {
    throw refuse(`it is a symlink to '${showText(readlinkSync(path))}' (--force replaces the link itself, never its target)`);
  }
  if (existing?.isFile() && !opts.force) throw refuse('it exists (--force replaces it)');
  if (!existing && kernelFolderOf(path)) throw refuse(`iolab creates no file in ${kernelFolderOf(path)}`);
  let folder = dirname(resolve(path));
  let found = statOrUndefined(folder);
  if (!found && !opts.createFolders) throw refuse(`no folder '${showText(folder)}'`);
  while (!found) {
    folder = dirname(folder);
    found = statOrUndefined(folder);
  }
  if (!found.isDirectory()) throw refuse(`'${showText(folder)}' is not a folder`);
  try {
    accessSync(folder, constants.W_OK | constants.X_OK);
  } catch (err) {
    throw refuse(`cannot write in '${showText(folder)}' (${errnoText(err)})`);
  }
  checkedOutputs.set(resolve(path), { replace: opts.force, createFolders: opts.createFolders });
}

/** stat, or undefined when it fails: checkOutputPath then walks up to what it can stat. */
function statOrUndefined(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}

/**
 * Writes a run's results to path whole or not at all, as checkOutputPath allowed: `-` to
 * stdout; else under a temp name beside it, renamed into place (a symlink at path is replaced,
 * never written through). A file it replaces keeps its mode (a 0444 file stays 0444); without
 * --force a file that appeared meanwhile is left alone. A failure names path as the user gave
 * it, not the temp name, and leaves no temp file.
 */
export function writeOutputFile(path: string, data: string, option: string): void {
  const stream = path === '-' ? 'stdout' : standardStream(path);
  if (stream) {
    process[stream].write(data);
    return;
  }
  const allowed = checkedOutputs.get(resolve(path)) ?? { replace: false, createFolders: false };
  const temp = tempNameFor(path);
  const failed = (err: unknown) => new UserError(`${option}: could not write '${showText(path)}' (${errnoText(err)})`);
  try {
    if (allowed.createFolders) mkdirSync(dirname(resolve(path)), { recursive: true });
    removeStaleTempFiles(path);
    const fd = openSync(temp, 'wx', 0o666);
    try {
      // a file it replaces keeps its owner, mode and extended attributes (a symlink replaced is
      // not its target: nothing of the target is kept)
      if (allowed.replace) {
        if (!keepAttributes) throw new Error('internal: prepareOutputs() was not awaited before this run');
        keepAttributes(path, fd);
      }
      writeFileSync(fd, data);  // every byte (a short write is carried on; EFBIG is an error)
    } finally {
      closeSync(fd);
    }
    if (allowed.replace) renameSync(temp, path);
    else placeNewFile(temp, path, () => new UserError(`${option}: '${showText(path)}' appeared while the run went on; left untouched (--force replaces it)`));
  } catch (err) {
    rmSync(temp, { force: true });
    if (err instanceof UserError) throw err;
    throw failed(err);
  }
}

/** Puts temp at path only if nothing is there, in one step (renameat2 RENAME_NOREPLACE: a kill
 * at any point leaves either the temp name or the output, never both); `appeared` is the error
 * when something is there. Where the file system cannot, or without the addon, link(2) (never
 * replaces) and then drop the temp name; without hard links, a rename. A command that has the
 * addon loaded passes its renameNoReplace; `link` is link(2) but where a test stands in a file
 * system that has no hard links. */
export function placeNewFile(temp: string, path: string, appeared: () => Error,
  rename: ((from: string, to: string) => void) | undefined = renameNoReplace, link: (from: string, to: string) => void = linkSync): void {
  if (rename) {
    try {
      rename(temp, path);
      return;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') throw appeared();
      if (code !== 'EINVAL' && code !== 'ENOSYS') throw err;
    }
  }
  try {
    link(temp, path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') throw appeared();
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP') throw err;
    renameSync(temp, path);
    return;
  }
  rmSync(temp, { force: true });
}
