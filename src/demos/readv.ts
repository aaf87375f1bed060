// `iolab readv <file>`: scatter-read the start of a file into a few buffers with ONE readv(2)
// (preadv(2) with --offset) and show what landed in each buffer, and nothing beyond it.
import { closeSync, constants, fstatSync, openSync, statSync } from 'node:fs';
import { isErrnoException, native } from '../native.js';
import { Command } from 'commander';
import { oneLineErrors, printJson, UserError } from '../cli-util.js';
import { iovMax } from './common.js';
import { showBytes } from '../show-bytes.js';
import { plainIo, ioUringOption, keepOldUringFlag, withDemoIo, type DemoIo } from './io.js';
import { numberOption, numberListOption, plural } from '../numbers.js';
import { pathArgument } from '../path-options.js';

export const defaultSizes = [32, 64, 128];
/** Sum of the buffer sizes one readv may ask for (a demo, not a copy tool). */
export const maxTotalBytes = 64 * 1024 * 1024;

export interface ReadvResult {
  bytes: number;
  /** Each buffer with only the bytes that landed in it. */
  buffers: { size: number; data: Uint8Array }[];
}

/** Checks the sizes a user gave (commander already rejected non-numbers, zero and negatives). */
export function checkSizes(sizes: number[]): void {
  if (sizes.length > iovMax) throw new UserError(`--sizes lists ${sizes.length} buffers; readv takes at most ${iovMax}`);
  const total = sizes.reduce((a, b) => a + b, 0);
  if (total > maxTotalBytes) {
    throw new UserError(`--sizes add up to ${plural(total, 'byte')}; this demo reads at most ${plural(maxTotalBytes, 'byte')}`);
  }
}

/**
 * Opens `file` read-only and reads it into buffers of `sizes` with one call. The open is
 * O_NONBLOCK, so a FIFO cannot make it wait for a writer; a FIFO is then refused (a read would
 * wait for data, maybe forever), a regular file or block device read as usual (O_NONBLOCK
 * cleared), and a character device read without waiting (EAGAIN: nothing to read now).
 */
export async function runReadv(file: string, sizes: number[], offset: number | undefined,
  io: DemoIo = plainIo): Promise<ReadvResult> {
  checkSizes(sizes);
  const fd = openForReading(file);
  try {
    const st = fstatSync(fd);
    if (st.isDirectory()) throw new UserError(`${file} is a directory, not a file`);
    if (st.isFIFO()) {
      throw new UserError(`${file} is a FIFO (named pipe), not a regular file: a read would wait for a writer, maybe forever; ` +
        'readv reads regular files and devices');
    }
    if (!st.isCharacterDevice()) native.setNonBlocking(fd, false);
    const buffers = sizes.map((size) => new Uint8Array(size));
    let bytes: number;
    try {
      bytes = await io.readv(fd, buffers, offset);
    } catch (err) {
      if (isErrnoException(err) && err.code === 'EAGAIN') {
        throw new UserError(`${file} has nothing to read now (a character device; readv does not wait for input)`);
      }
      throw err;
    }
    return { bytes, buffers: splitRead(buffers, bytes) };
  } finally {
    closeSync(fd);
  }
}

function openForReading(file: string): number {
  try {
    return openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    // open(2) of a Unix socket's path fails with ENXIO.
    if (isErrnoException(err) && err.code === 'ENXIO' && statSync(file, { throwIfNoEntry: false })?.isSocket()) {
      throw new UserError(`${file} is a Unix socket, not a file; readv reads regular files and devices`);
    }
    throw err;
  }
}

/** The part of each buffer a read of `bytes` filled (buffers fill in order). */
export function splitRead(buffers: Uint8Array[], bytes: number): ReadvResult['buffers'] {
  let left = bytes;
  return buffers.map((buf) => {
    const used = Math.min(left, buf.byteLength);
    left -= used;
    return { size: buf.byteLength, data: buf.subarray(0, used) };
  });
}

export function formatReadv(result: ReadvResult): string[] {
  return [`Read ${plural(result.bytes, 'byte')}:`, ...result.buffers.map((b, i) => `buf${i + 1}: ${showBytes(b.data)}`)];
}

export function readvJson(result: ReadvResult) {
  return {
    bytes: result.bytes,
    buffers: result.buffers.map((b) => ({
      size: b.size,
      bytes: b.data.byteLength,
      text: showBytes(b.data),
      base64: Buffer.from(b.data.buffer, b.data.byteOffset, b.data.byteLength).toString('base64'),
    })),
  };
}

export function readvCommand(): Command {
  return oneLineErrors(keepOldUringFlag(new Command('readv')
    .description('scatter-read the start of a file into several buffers with one readv(2) call')
    .addArgument(pathArgument('<file>', 'file to read (e.g. readv.c)', { output: false, called: 'file' }))
    .option('--sizes <list>', 'buffer sizes in bytes, comma-separated (4k suffixes allowed)', numberListOption({ min: 1, size: true }), defaultSizes)
    .option('--offset <bytes>', 'read from this file offset with preadv(2) instead of the current position',
      numberOption({ min: 0, size: true }))
    .option('--json', 'print the result as one JSON object')
    .addOption(ioUringOption('read (IORING_OP_READV)'))
    .addHelpText('after', `
Prints "Read N bytes:" and one line per buffer with only the bytes that landed in it.
Bytes are shown safely: printable text as is, \\n \\t \\r \\0 and \\\\ escaped, any other
byte as \\xHH. --json adds each buffer's exact bytes in base64.

Example:
  $ iolab readv readv.c --sizes 8,16
  Read 24 bytes:
  buf1: /* readv
  buf2: .c: scatter-read`)
    .action(async (file: string, opts: { sizes: number[]; offset?: number; json?: boolean; ioUring?: boolean }) => {
      const result = await withDemoIo(opts.ioUring, (io) => runReadv(file, opts.sizes, opts.offset, io));
      if (opts.json) printJson(readvJson(result));
      else process.stdout.write(formatReadv(result).join('\n') + '\n');
    })));
}
