// `iolab shm write|read|unlink <name>`: one POSIX shared-memory object (shm_open + mmap) shared
// by two processes. The writer stores the text with its length (see the record in common.ts),
// so the reader prints exactly the text.
import { constants, fstatSync } from 'node:fs';
import { Command } from 'commander';
import { isErrnoException, native } from '../native.js';
import { oneLineErrors, printJson, UserError } from '../cli-util.js';
import { hasRecord, readRecord, recordBytes, recordHeaderBytes, shmName, writeRecord } from './common.js';
import { numberOption } from '../numbers.js';

const { O_CREAT, O_EXCL, O_RDWR, O_RDONLY } = constants;
const pageSize = native.constants.PAGE_SIZE;

export interface ShmWriteResult { name: string; bytes: number; size: number; created: boolean }
export interface ShmReadResult { name: string; size: number; mapped: number; text: Uint8Array }

/** Maps [0, length) of fd, runs `use`, always unmaps. A uring variant may swap the access. */
export function withMapping<T>(fd: number, length: number, write: boolean, use: (mapping: ArrayBuffer) => T): T {
  const mapping = native.mmap(fd, length, { write });
  try {
    return use(mapping);
  } finally {
    native.munmap(mapping);
  }
}

/** Stores `text` in the object `name`: creates it (mode 0600), or rewrites one iolab wrote before. */
export function shmWrite(rawName: string, text: string, options: { size?: number; force?: boolean } = {}): ShmWriteResult {
  const name = shmName(rawName);
  const bytes = new TextEncoder().encode(text);
  const needed = recordBytes(bytes);
  const size = options.size ?? Math.ceil(needed / pageSize) * pageSize;
  if (size < needed) {
    throw new UserError(`the text needs ${needed} bytes (${recordHeaderBytes}-byte header + ${bytes.byteLength} bytes of text) ` +
      `but --size is ${size}`);
  }
  let created = true;
  let fd: number;
  try {
    fd = native.shmOpen(name, O_CREAT | O_EXCL | O_RDWR, 0o600);
  } catch (err) {
    if (!isErrnoException(err) || err.code !== 'EEXIST') throw err;
    created = false;
    fd = native.shmOpen(name, O_RDWR);
  }
  let done = false;
  try {
    if (!created && !options.force) {
      const oldSize = fstatSync(fd).size;
      const ours = oldSize >= recordHeaderBytes && withMapping(fd, recordHeaderBytes, false, hasRecord);
      if (!ours) {
        throw new UserError(`shared-memory object ${name} exists and was not written by iolab; left untouched ` +
          '(use --force to overwrite it)');
      }
    }
    native.ftruncate(fd, size);
    withMapping(fd, needed, true, (mapping) => writeRecord(mapping, bytes));
    done = true;
    return { name, bytes: bytes.byteLength, size, created };
  } finally {
    native.close(fd);
    // A failed first write leaves nothing behind.
    if (created && !done) native.shmUnlink(name);
  }
}

/** Maps `length` bytes of `name` (default: all of it) read-only and returns its record's text. */
export function shmRead(rawName: string, options: { length?: number } = {}): ShmReadResult {
  const name = shmName(rawName);
  const fd = native.shmOpen(name, O_RDONLY);
  try {
    const size = fstatSync(fd).size;
    const length = options.length ?? size;
    if (options.length === undefined && size === 0) throw new UserError(`shared-memory object ${name} is empty (0 bytes)`);
    const text = withMapping(fd, length, false, (mapping) => readRecord(mapping, `shared-memory object ${name}`));
    return { name, size, mapped: length, text };
  } finally {
    native.close(fd);
  }
}

export function formatShmWrite(r: ShmWriteResult): string[] {
  return [`wrote ${r.bytes} bytes of text to ${r.name} (${r.created ? 'new' : 'existing'} ${r.size}-byte shared-memory object)`];
}

export function shmCommand(): Command {
  const shm = new Command('shm')
    .description('share a text between processes through a POSIX shared-memory object (shm_open + mmap)')
    .addHelpText('after', `
Names look like /demo (a leading '/' is added when missing; no other '/').
The object stays in /dev/shm until "shm unlink".

Example (two processes):
  $ iolab shm write /demo 'hello from one process'
  wrote 22 bytes of text to /demo (new 4096-byte shared-memory object)
  $ iolab shm read /demo
  hello from one process
  $ iolab shm unlink /demo
  unlinked /demo`);

  shm.command('write')
    .description('store a text in a shared-memory object (created with mode 0600 if missing)')
    .argument('<name>', 'object name, e.g. /demo')
    .argument('<text>', 'text to store')
    .option('--size <bytes>', 'object size (default: the text rounded up to 4 KiB)', numberOption({ min: 1, size: true }))
    .option('--force', 'overwrite an existing object iolab did not write')
    .option('--json', 'print the result as one JSON object')
    .action((name: string, text: string, opts: { size?: number; force?: boolean; json?: boolean }) => {
      const result = shmWrite(name, text, opts);
      if (opts.json) printJson(result);
      else process.stdout.write(formatShmWrite(result).join('\n') + '\n');
    });

  shm.command('read')
    .description('map a shared-memory object read-only and print the text stored in it')
    .argument('<name>', 'object name, e.g. /demo')
    .option('--length <bytes>', 'map only this many bytes (default: the whole object)', numberOption({ min: 1, size: true }))
    .option('--json', 'print the result as one JSON object')
    .action((name: string, opts: { length?: number; json?: boolean }) => {
      const result = shmRead(name, opts);
      if (opts.json) {
        printJson({ name: result.name, size: result.size, mapped: result.mapped, bytes: result.text.byteLength,
          text: new TextDecoder().decode(result.text) });
      } else {
        process.stdout.write(Buffer.concat([result.text, Buffer.from('\n')]));
      }
    });

  shm.command('unlink')
    .description('remove a shared-memory object\'s name (shm_unlink)')
    .argument('<name>', 'object name, e.g. /demo')
    .option('--json', 'print the result as one JSON object')
    .action((rawName: string, opts: { json?: boolean }) => {
      const name = shmName(rawName);
      native.shmUnlink(name);
      if (opts.json) printJson({ name, unlinked: true });
      else process.stdout.write(`unlinked ${name}\n`);
    });

  return oneLineErrors(shm);
}
