// `iolab shm write|read|unlink <name>`: one POSIX shared-memory object (shm_open) shared by two
// processes. The object holds the text as plain bytes from offset 0, zero-filled to its size,
// as any C program reads it. Both sides use pwrite/pread rather than a mapping: any process
// that may open the object can shrink it, and a mapped page past the new end is a SIGBUS for
// whoever touches it (fdpass --memfd shows the safe way to map: a memfd sealed against that).
import { constants, fstatSync, lstatSync } from 'node:fs';
import { Command } from 'commander';
import { isErrnoException, native } from '../native.js';
import { oneLineErrors, printJson, UserError } from '../cli-util.js';
import { numberOption, plural } from '../numbers.js';
import { shmName, writeAllVectored } from './common.js';
import { showBytes } from '../show-bytes.js';
import { plainIo, ioUringOption, keepOldUringFlag, withDemoIo, type DemoIo } from './io.js';
import { checkObjectSize, describeFd, readText, type TextRead } from './memory-objects.js';
import { notRegularFile } from '../write-target.js';

const { O_CREAT, O_EXCL, O_RDWR, O_RDONLY, O_NONBLOCK } = constants;
const pageSize = native.constants.PAGE_SIZE;

export interface ShmWriteResult { name: string; bytes: number; size: number; created: boolean }
export interface ShmReadResult { name: string; size: number; read: TextRead }

/** Who owns the object `name` (it exists), for the refusal message. */
function ownerNote(name: string): string {
  const uid = lstatSync(`/dev/shm${name}`, { throwIfNoEntry: false })?.uid;
  if (uid === undefined || uid === process.getuid?.()) return '';
  return ` and belongs to uid ${uid}`;
}

/** Stores `text` in the object `name`: a new one (mode 0600), or with force an existing one. */
export async function shmWrite(rawName: string, text: string, options: { size?: number; force?: boolean } = {},
  io: DemoIo = plainIo): Promise<ShmWriteResult> {
  const name = shmName(rawName);
  const bytes = new TextEncoder().encode(text);
  const size = options.size ?? Math.max(1, Math.ceil(bytes.byteLength / pageSize)) * pageSize;
  if (size < bytes.byteLength) {
    throw new UserError(`the text is ${plural(bytes.byteLength, 'byte')} but --size is ${size}`);
  }
  checkObjectSize('--size', size, 'shm');
  let created = true;
  let fd: number;
  try {
    fd = shmOpen(name, O_CREAT | O_EXCL | O_RDWR, 0o600);
  } catch (err) {
    if (!isErrnoException(err) || err.code !== 'EEXIST') throw err;
    if (!options.force) {
      throw new UserError(`shared-memory object ${showName(name)} exists${ownerNote(name)}; left untouched (use --force to overwrite it)`);
    }
    created = false;
    fd = openRegular(name, O_RDWR);
  }
  let done = false;
  try {
    // Cut to nothing first, so that every byte past the text reads as zero.
    if (!created) native.ftruncate(fd, 0);
    native.ftruncate(fd, size);
    await writeAllVectored(io.writev, fd, [bytes], 0);
    done = true;
    return { name, bytes: bytes.byteLength, size, created };
  } finally {
    native.close(fd);
    // A failed first write leaves nothing behind.
    if (created && !done) native.shmUnlink(name);
  }
}

/** The text at the start of `name`: up to its first NUL, at most `length` bytes. */
export async function shmRead(rawName: string, options: { length?: number } = {}, io: DemoIo = plainIo): Promise<ShmReadResult> {
  const name = shmName(rawName);
  const fd = openRegular(name, O_RDONLY, 'a shared-memory object is a regular file');
  try {
    const about = describeFd(fd);
    const read = await readText(fd, io, options.length ?? Number.MAX_SAFE_INTEGER, about);
    return { name, size: about.size, read };
  } finally {
    native.close(fd);
  }
}

export function formatShmWrite(r: ShmWriteResult): string[] {
  return [`wrote ${plural(r.bytes, 'byte')} of text to ${showName(r.name)} (${r.created ? 'new' : 'existing'} ${r.size}-byte shared-memory object)`];
}

/** A name as one safe line (a name may hold a newline or escape sequences). */
function showName(name: string): string {
  return showBytes(new TextEncoder().encode(name));
}

/** Runs a call on `name`; its errno error names the object escaped, as every line here does. */
function withShownName<T>(name: string, call: () => T): T {
  try {
    return call();
  } catch (err) {
    if (isErrnoException(err) && err.path === name) err.message = err.message.replace(`'${name}'`, `'${showName(name)}'`);
    throw err;
  }
}

function shmOpen(name: string, flags: number, mode?: number): number {
  return withShownName(name, () => native.shmOpen(name, flags, mode));
}

/**
 * Opens an existing object that must be a regular file. O_NONBLOCK: a FIFO someone made in
 * /dev/shm cannot make the open wait for a peer; it is refused, as is any other non-file.
 */
function openRegular(name: string, flags: number, why?: string): number {
  const fd = shmOpen(name, flags | O_NONBLOCK);
  try {
    const refusal = notRegularFile(`/dev/shm${name}`, fstatSync(fd), why);
    if (refusal) throw refusal;
    native.setNonBlocking(fd, false);
    return fd;
  } catch (err) {
    native.close(fd);
    throw err;
  }
}

export function shmCommand(): Command {
  const shm = new Command('shm')
    .description('share a text between processes through a POSIX shared-memory object (shm_open)')
    .addHelpText('after', `
Names look like /demo (a leading '/' is added when missing; no other '/').
The object holds the text from offset 0, zero-filled to its size; it stays in /dev/shm
until "shm unlink". Both sides use pwrite/pread, not a mapping: another process that
shrinks the object would make a reader touching a mapped page past the end die of SIGBUS.

Example (two processes):
  $ iolab shm write /demo 'hello from one process'
  wrote 22 bytes of text to /demo (new 4096-byte shared-memory object)
  $ iolab shm read /demo
  hello from one process
  $ iolab shm unlink /demo
  unlinked /demo`);

  shm.command('write')
    .description('store a text in a new shared-memory object (mode 0600), zero-filled to its size')
    .argument('<name>', 'object name, e.g. /demo')
    .argument('<text>', 'text to store')
    .option('--size <bytes>', 'object size (default: the text rounded up to 4 KiB)', numberOption({ min: 1, size: true }))
    .option('--force', 'overwrite an object that exists already (whoever made it)')
    .option('--json', 'print the result as one JSON object')
    .addOption(ioUringOption('write (IORING_OP_WRITEV)'))
    .action(async (name: string, text: string, opts: { size?: number; force?: boolean; json?: boolean; ioUring?: boolean }) => {
      const result = await withDemoIo(opts.ioUring, (io) => shmWrite(name, text, opts, io));
      if (opts.json) printJson(result);
      else process.stdout.write(formatShmWrite(result).join('\n') + '\n');
    });

  shm.command('read')
    .description('print the text at the start of a shared-memory object (up to its first NUL), read with pread')
    .argument('<name>', 'object name, e.g. /demo')
    .option('--length <bytes>', 'read at most this many bytes (default: up to the first NUL or the end)', numberOption({ min: 1, size: true }))
    .option('--json', 'print the result as one JSON object')
    .addOption(ioUringOption('reads (IORING_OP_READV)'))
    .addHelpText('after', `
The text is shown as readv shows bytes: printable text as is, \\n \\t \\r \\0 and \\\\
escaped, any other byte as \\xHH. --json adds the exact bytes in base64.`)
    .action(async (name: string, opts: { length?: number; json?: boolean; ioUring?: boolean }) => {
      const { name: shown, size, read } = await withDemoIo(opts.ioUring, (io) => shmRead(name, opts, io));
      if (opts.json) {
        printJson({ name: shown, size, read: read.bytes, end: read.end, bytes: read.text.byteLength, text: showBytes(read.text),
          base64: Buffer.from(read.text).toString('base64') });
      } else {
        process.stdout.write(`${showBytes(read.text)}\n`);
      }
    });

  shm.command('unlink')
    .description('remove a shared-memory object\'s name (shm_unlink)')
    .argument('<name>', 'object name, e.g. /demo')
    .option('--json', 'print the result as one JSON object')
    .action((rawName: string, opts: { json?: boolean }) => {
      const name = shmName(rawName);
      withShownName(name, () => native.shmUnlink(name));
      if (opts.json) printJson({ name, unlinked: true });
      else process.stdout.write(`unlinked ${showName(name)}\n`);
    });

  return oneLineErrors(keepOldUringFlag(shm));
}
