// `iolab writev <file> <text...>`: gather-write several pieces of text with one writev(2).
// A new file, and a file replaced with --force, is written under a temp name beside it and
// renamed into place only once every byte is there (a new file's name is taken in one step,
// never over a file that appeared meanwhile), so a full disk or a kill leaves nothing under the
// user's name. --append (O_APPEND) adds to an existing file: a record that cannot be written
// whole is cut off again, so the file is left as it was. It never writes through a symbolic
// link: one is refused, or with --force replaced itself. Anything else that is not a regular
// file (a device, a FIFO) is refused whatever the flags (src/write-target.ts).
import { closeSync, constants, fstatSync, fsyncSync, ftruncateSync, lstatSync, openSync, renameSync, unlinkSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { Command, Option } from 'commander';
import { oneLineErrors, printJson, UserError } from '../cli-util.js';
import { errnoText } from '../user-error.js';
import { dirname, resolve } from 'node:path';
import { iovMax, writeAllVectored } from './common.js';
import { showText } from '../show-bytes.js';
import { native } from '../native.js';
import { keepAttributes } from '../keep-attributes.js';
import { checkWriteTarget, notRegularFile, placeNewFile, symlinkRefused } from '../write-target.js';
import { removeStaleTempFiles, tempNameFor } from '../temp-files.js';
import { plainIo, ioUringOption, keepOldUringFlag, withDemoIo, type DemoIo } from './io.js';
import { plural } from '../numbers.js';
import { pathArgument } from '../path-options.js';

export type WriteMode = 'create' | 'append' | 'replace';

export interface WritevResult {
  file: string;
  mode: WriteMode;
  bytes: number;
  pieces: number;
  /** writev calls it took: 1 unless the kernel wrote short. */
  calls: number;
}

// libuv adds O_CLOEXEC to every open.
const { O_WRONLY, O_CREAT, O_EXCL, O_APPEND, O_NOFOLLOW, O_NONBLOCK } = constants;

export async function runWritev(file: string, texts: string[], mode: WriteMode,
  io: DemoIo = plainIo): Promise<WritevResult> {
  if (texts.length > iovMax) throw new UserError(`${texts.length} pieces of text; writev takes at most ${iovMax}`);
  const pieces = texts.map((t) => new TextEncoder().encode(t));
  const existsMessage = `${showText(file)} already exists; left untouched (use --append to add to it or --force to replace it)`;
  const existing = checkWriteTarget(file, { replace: mode === 'replace', append: mode === 'append', existsMessage });

  // --force replaces a symbolic link itself with the new file (its target is never written).
  if (mode !== 'append') return writeViaTemp(file, pieces, io, mode, existsMessage);

  let fd: number;
  try {
    // O_NOFOLLOW: a link put in place after the check is refused too, never written through.
    // O_NONBLOCK: a FIFO put in place meanwhile fails at once (ENXIO) instead of waiting for a reader.
    fd = openSync(file, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK, 0o644);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const now = lstatSync(file, { throwIfNoEntry: false });
    if (code === 'ELOOP') throw symlinkRefused(file);
    if (code === 'ENXIO' && now) throw notRegularFile(file, now) ?? new UserError(existsMessage);
    throw err;
  }
  try {
    const st = fstatSync(fd);
    const refusal = notRegularFile(file, st);
    if (refusal) throw refusal;
    // Off again: through io_uring a write to a file with O_NONBLOCK set may fail with EAGAIN.
    native.setNonBlocking(fd, false);
    try {
      const { bytes, calls } = await writeAllVectored(io.writev, fd, pieces);
      return { file, mode, bytes, pieces: pieces.length, calls };
    } catch (err) {
      // a record that could not be written whole (a full disk, a file size limit) is cut off
      // again: the file is left as it was (a file created by this --append is removed)
      ftruncateSync(fd, st.size);
      const made = existing === undefined && st.size === 0;
      if (made) unlinkSync(file);
      throw new UserError(`cannot append to '${showText(file)}' (${errnoText(err)}); ${made ? 'no file was made' : 'the file is left as it was'}`);
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * Writes a temp file in the same folder (same file system), fsyncs it, and gives it the user's
 * name: over the file for --force (keeping its owner, mode and extended attributes), else in
 * one step that never replaces a file (renameat2 RENAME_NOREPLACE; a file that appeared
 * meanwhile is left alone).
 */
async function writeViaTemp(file: string, pieces: Uint8Array[], io: DemoIo, mode: 'create' | 'replace', existsMessage: string): Promise<WritevResult> {
  removeStaleTempFiles(file);
  const temp = tempNameFor(file, randomBytes(4).toString('hex'));
  const failed = (err: unknown) => new UserError(`cannot ${mode === 'create' ? 'write' : 'replace'} '${showText(file)}' (${errnoText(err)}); ` +
    (mode === 'create' ? 'no file was made' : 'the file is left as it was'));
  let fd: number;
  try {
    fd = openSync(temp, O_WRONLY | O_CREAT | O_EXCL, 0o644);
  } catch (err) {
    // the temp name is iolab's, not the user's: the folder is what could not be written
    const folder = showText(dirname(resolve(file)));
    throw new UserError(`cannot ${mode === 'create' ? 'write' : 'replace'} '${showText(file)}': ` +
      ((err as NodeJS.ErrnoException).code === 'ENOENT' ? `no folder '${folder}'` : `cannot create a file in ${folder} (${errnoText(err)})`));
  }
  let renamed = false;
  try {
    let written: { bytes: number; calls: number };
    try {
      written = await writeAllVectored(io.writev, fd, pieces, undefined, 0);
      // The file being replaced keeps its owner, mode and extended attributes (the new one would
      // otherwise be 0644 and ours); a symlink replaced is not its target and passes nothing on.
      if (mode === 'replace') keepAttributes(file, fd);
      fsyncSync(fd);
    } catch (err) {
      if (err instanceof UserError) throw err;
      throw failed(err);
    }
    closeSync(fd);
    if (mode === 'replace') renameSync(temp, file);
    else placeNew(temp, file, existsMessage);
    renamed = true;
    return { file, mode, bytes: written.bytes, pieces: pieces.length, calls: written.calls };
  } finally {
    if (!renamed) {
      try { closeSync(fd); } catch { /* already closed */ }
      try { unlinkSync(temp); } catch { /* never created or already gone */ }
    }
  }
}

/** Gives temp the name file in one step, never over something that appeared there meanwhile. */
function placeNew(temp: string, file: string, existsMessage: string): void {
  placeNewFile(temp, file, () => {
    const now = lstatSync(file, { throwIfNoEntry: false });
    if (now?.isSymbolicLink()) return symlinkRefused(file);
    return (now && notRegularFile(file, now)) ?? new UserError(existsMessage);
  }, native.renameNoReplace);
}

export function formatWritev(result: WritevResult): string[] {
  return [`writev ${plural(result.bytes, 'byte')} to ${showText(result.file)}`];
}

export function writevCommand(): Command {
  return oneLineErrors(keepOldUringFlag(new Command('writev')
    .description('gather-write pieces of text into a file with one writev(2) call')
    .addArgument(pathArgument('<file>', 'file to write (created with mode 0644)', { output: true, changedBy: ['--force', '--append'], called: 'file' }))
    .argument('<text...>', 'pieces of text, written back to back (no separators added)')
    .addOption(new Option('--append', 'add to the end of the file (O_APPEND), creating it if missing').conflicts('force'))
    .option('--force', 'replace an existing file (atomically: temp file, then rename)')
    .option('--newline', 'end with a newline (one more piece, "\\n")')
    .option('--json', 'print the result as one JSON object')
    .addOption(ioUringOption('write (IORING_OP_WRITEV)'))
    .addHelpText('after', `
Without --append or --force an existing file is left untouched and the command fails.
A symbolic link is refused, also with --append; --force replaces the link itself with a
new file (its target is never written).
A device, FIFO or socket is refused whatever the flags: writev writes only regular files.

Example:
  $ iolab writev notes.txt 'hello, ' 'vectored ' 'world' --newline
  writev 22 bytes to notes.txt`)
    .action(async (file: string, texts: string[], opts: { append?: boolean; force?: boolean; newline?: boolean; json?: boolean; ioUring?: boolean }) => {
      const mode: WriteMode = opts.append ? 'append' : opts.force ? 'replace' : 'create';
      const pieces = opts.newline ? [...texts, '\n'] : texts;
      const result = await withDemoIo(opts.ioUring, (io) => runWritev(file, pieces, mode, io));
      if (opts.json) printJson(result);
      else process.stdout.write(formatWritev(result).join('\n') + '\n');
    })));
}
