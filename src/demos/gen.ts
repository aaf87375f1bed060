// `iolab gen <file>`: the seed's dictionary generator: random printable ASCII in lines, as input
// for `iolab bench latency --infile`. Never overwrites an existing file without --force.
import { Command } from 'commander';
import { randomBytes } from 'node:crypto';
import { closeSync, openSync, writeSync } from 'node:fs';
import { UserError } from '../cli-util.js';
import { numberOption } from '../numbers.js';

const CHUNK = 1 << 20;
const LINE = 80;

/** Fills buf with printable characters (0x20..0x7e) and a newline ending every LINE bytes of the file. */
function printable(buf: Buffer, fileOffset: number): void {
  const random = randomBytes(buf.length);
  for (let i = 0; i < buf.length; i++) {
    buf[i] = (fileOffset + i + 1) % LINE === 0 ? 0x0a : 0x20 + (random[i] % 95);
  }
}

export function genCommand(): Command {
  return new Command('gen')
    .description('write random printable text (lines of 80) to <file>: input for `iolab bench latency --infile`')
    .argument('<file>', 'file to create')
    .option('--size <size>', 'bytes to write, e.g. 128M', numberOption({ min: 1, size: true }), 128 * 2 ** 20)
    .option('--force', 'overwrite the file when it exists')
    .action((file: string, opts: { size: number; force?: boolean }) => {
      let fd: number;
      try {
        fd = openSync(file, opts.force ? 'w' : 'wx', 0o644);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EEXIST') {
          throw new UserError(`refusing to overwrite '${file}': it exists (use --force)`);
        }
        throw err;
      }
      try {
        const buf = Buffer.alloc(Math.min(CHUNK, opts.size));
        for (let off = 0; off < opts.size; off += buf.length) {
          const len = Math.min(buf.length, opts.size - off);
          printable(buf, off);
          writeSync(fd, buf, 0, len, off);
        }
      } finally {
        closeSync(fd);
      }
      process.stdout.write(`wrote ${opts.size} bytes of random printable text to ${file}\n`);
    });
}
