// `iolab writev <file> <text...>`: gather-write several pieces of text with one writev(2).
// A new file is created with O_EXCL (mode 0644); an existing file is touched only with
// --append (O_APPEND) or --force (written to a temp file beside it, then renamed over it, so
// a failure never leaves a half-written file under the user's name). It never writes through
// a symbolic link: one is refused, or with --force replaced itself. Anything else that is not a
// regular file (a device, a FIFO) is refused whatever the flags (src/write-target.ts).
import { closeSync, constants, fstatSync, fsyncSync, lstatSync, openSync, renameSync, unlinkSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { Command, Option } from 'commander';
import { oneLineErrors, printJson, UserError } from '../cli-util.js';
import { errnoText } from '../user-error.js';
import { dirname, resolve } from 'node:path';
import { iovMax, writeAllVectored } from './common.js';
import { showText } from '../show-bytes.js';
import { native } from '../native.js';
import { keepAttributes } from '../keep-attributes.js';
import { checkWriteTarget, notRegularFile, symlinkRefused } from '../write-target.js';
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
  if (mode === 'replace') return replaceFile(file, pieces, io);

  let fd: number;
  try {
    // O_NOFOLLOW: a link put in place after the check is refused too, never written through.
    // O_NONBLOCK: a FIFO put in place meanwhile fails at once (ENXIO) instead of waiting for a reader.
    fd = mode === 'append'
      ? openSync(file, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK, 0o644)
      : openSync(file, O_WRONLY | O_CREAT | O_EXCL, 0o644);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const now = lstatSync(file, { throwIfNoEntry: false });
    if (code === 'ELOOP' || (code === 'EEXIST' && now?.isSymbolicLink())) throw symlinkRefused(file);
    if ((code === 'EEXIST' || code === 'ENXIO') && now) throw notRegularFile(file, now) ?? new UserError(existsMessage);
    throw err;
  }
  try {
    const refusal = notRegularFile(file, fstatSync(fd));
    if (refusal) throw refusal;
    // Off again: through io_uring a write to a file with O_NONBLOCK set may fail with EAGAIN.
    native.setNonBlocking(fd, false);
    const { bytes, calls } = await writeAllVectored(io.writev, fd, pieces);
    return { file, mode, bytes, pieces: pieces.length, calls };
  } finally {
    closeSync(fd);
  }
}

/** Writes a temp file in the same folder (same filesystem), fsyncs it, renames it over `file`. */
async function replaceFile(file: string, pieces: Uint8Array[], io: DemoIo): Promise<WritevResult> {
  removeStaleTempFiles(file);
  const temp = tempNameFor(file, randomBytes(4).toString('hex'));
  let fd: number;
  try {
    fd = openSync(temp, O_WRONLY | O_CREAT | O_EXCL, 0o644);
  } catch (err) {
    // the temp name is iolab's, not the user's: the folder is what could not be written
    throw new UserError(`cannot replace '${showText(file)}': cannot create a file in ${showText(dirname(resolve(file)))} (${errnoText(err)})`);
  }
  let renamed = false;
  try {
    const { bytes, calls } = await writeAllVectored(io.writev, fd, pieces);
    // The file being replaced keeps its owner, mode and extended attributes (the new one would
    // otherwise be 0644 and ours); a symlink replaced is not its target and passes nothing on.
    keepAttributes(file, fd);
    fsyncSync(fd);
    closeSync(fd);
    renameSync(temp, file);
    renamed = true;
    return { file, mode: 'replace', bytes, pieces: pieces.length, calls };
  } finally {
    if (!renamed) {
      try { closeSync(fd); } catch { /* already closed */ }
      try { unlinkSync(temp); } catch { /* never created or already gone */ }
    }
  }
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
