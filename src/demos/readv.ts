// `iolab readv <file>`: scatter-read the start of a file into a few buffers with ONE readv(2)
// (preadv(2) with --offset) and show what landed in each buffer, and nothing beyond it.
import { closeSync, fstatSync, openSync } from 'node:fs';
import { Command } from 'commander';
import { oneLineErrors, printJson, UserError } from '../cli-util.js';
import { iovMax, showBytes } from './common.js';
import { plainIo, uringOption, withDemoIo, type DemoIo } from './io.js';
import { numberOption, numberListOption } from '../numbers.js';

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
    throw new UserError(`--sizes add up to ${total} bytes; this demo reads at most ${maxTotalBytes} bytes`);
  }
}

/** Opens `file` read-only and reads it into buffers of `sizes` with one call. */
export async function runReadv(file: string, sizes: number[], offset: number | undefined,
  io: DemoIo = plainIo): Promise<ReadvResult> {
  checkSizes(sizes);
  const fd = openSync(file, 'r');
  try {
    if (fstatSync(fd).isDirectory()) throw new UserError(`${file} is a directory, not a file`);
    const buffers = sizes.map((size) => new Uint8Array(size));
    const bytes = await io.readv(fd, buffers, offset);
    return { bytes, buffers: splitRead(buffers, bytes) };
  } finally {
    closeSync(fd);
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
  return [`Read ${result.bytes} bytes:`, ...result.buffers.map((b, i) => `buf${i + 1}: ${showBytes(b.data)}`)];
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
  return oneLineErrors(new Command('readv')
    .description('scatter-read the start of a file into several buffers with one readv(2) call')
    .argument('<file>', 'file to read (e.g. readv.c)')
    .option('--sizes <list>', 'buffer sizes in bytes, comma-separated (4k suffixes allowed)', numberListOption({ min: 1, size: true }), defaultSizes)
    .option('--offset <bytes>', 'read from this file offset with preadv(2) instead of the current position',
      numberOption({ min: 0, size: true }))
    .option('--json', 'print the result as one JSON object')
    .addOption(uringOption('read (IORING_OP_READV)'))
    .addHelpText('after', `
Prints "Read N bytes:" and one line per buffer with only the bytes that landed in it.
Bytes are shown safely: printable text as is, \\n \\t \\r \\0 and \\\\ escaped, any other
byte as \\xHH. --json adds each buffer's exact bytes in base64.

Example:
  $ iolab readv readv.c --sizes 8,16
  Read 24 bytes:
  buf1: /* readv
  buf2: .c: scatter-read`)
    .action(async (file: string, opts: { sizes: number[]; offset?: number; json?: boolean; uring?: boolean }) => {
      const result = await withDemoIo(opts.uring, (io) => runReadv(file, opts.sizes, opts.offset, io));
      if (opts.json) printJson(readvJson(result));
      else process.stdout.write(formatReadv(result).join('\n') + '\n');
    }));
}
