// `iolab gen <file>`: testIOLatency's dictionary generator (the ebpf-io_uring benchmark): random
// printable ASCII in lines of 80, as input for `iolab bench latency --infile`. Written as every
// writing command writes: under a temp name in the same folder, renamed into place at the end
// (a killed run leaves no partial file under the user's name); an existing file or a symlink
// only with --force, and then the link itself is replaced, never its target; a device or FIFO
// never (src/write-target.ts).
import { Command } from 'commander';
import { randomBytes } from 'node:crypto';
import { renameSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { UserError } from '../cli-util.js';
import { errnoText } from '../user-error.js';
import { checkFreeSpace } from '../free-space.js';
import { showText } from '../show-bytes.js';
import { keepAttributes } from '../keep-attributes.js';
import { formatBytes } from '../format.js';
import { interruption, markInterrupted } from '../interrupt.js';
import { numberOption } from '../numbers.js';
import { pathArgument } from '../path-options.js';
import { checkWriteTarget } from '../write-target.js';
import { removeStaleTempFiles, tempNameFor } from '../temp-files.js';

const CHUNK = 1 << 20;
const LINE = 80;

/** Fills buf with printable characters (0x20..0x7e) and a newline ending every LINE bytes of the file. */
function printable(buf: Buffer, fileOffset: number): void {
  const random = randomBytes(buf.length);
  for (let i = 0; i < buf.length; i++) {
    buf[i] = (fileOffset + i + 1) % LINE === 0 ? 0x0a : 0x20 + (random[i] % 95);
  }
}

async function generate(file: string, size: number, force: boolean): Promise<void> {
  const shown = showText(file);
  const existing = checkWriteTarget(file, { replace: force, existsMessage: `refusing to overwrite '${shown}': it exists (use --force)` });
  const dir = dirname(resolve(file));
  checkFreeSpace(`'${shown}'`, dir, size);
  removeStaleTempFiles(file);
  const temp = tempNameFor(file);
  const signal = interruption();
  const bar = process.stderr.isTTY === true;
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(temp, 'wx', 0o644);
  } catch (err) {
    // the temp name is iolab's, not the user's: the folder is what could not be written
    throw new UserError(`cannot write '${shown}': cannot create a file in ${showText(dir)} (${errnoText(err)})`);
  }
  let done = false;
  try {
    // a file it replaces keeps its owner, mode and extended attributes (a link replaced is not
    // the file it pointed to)
    if (existing?.isFile()) keepAttributes(file, handle.fd);
    const buf = Buffer.alloc(Math.min(CHUNK, size));
    let lastDraw = 0;
    for (let off = 0; off < size; off += buf.length) {
      if (signal.aborted) break;
      const len = Math.min(buf.length, size - off);
      printable(buf, off);
      await handle.write(buf, 0, len, off);
      if (bar && Date.now() - lastDraw > 200) {
        lastDraw = Date.now();
        process.stderr.write(`\r\x1b[Kgen ${shown}: ${formatBytes(off + len)} of ${formatBytes(size)} ` +
          `(${Math.floor(((off + len) * 100) / size)}%)`);
      }
    }
    if (!signal.aborted) {
      await handle.sync();
      done = true;
    }
  } finally {
    await handle.close();
    if (bar) process.stderr.write('\r\x1b[K');
    if (!done) rmSync(temp, { force: true });
  }
  if (!done) {
    process.stderr.write(`iolab: gen interrupted: nothing written to '${shown}' (the partial temp file is removed)\n`);
    markInterrupted();
    return;
  }
  try {
    renameSync(temp, file);  // over a symlink (with --force) this replaces the link, not its target
  } catch (err) {
    rmSync(temp, { force: true });
    throw new UserError(`could not write '${shown}' (${errnoText(err)}); nothing is left of the run`);
  }
  process.stdout.write(`wrote ${size} bytes of random printable text to ${shown}\n`);
}

export function genCommand(): Command {
  return new Command('gen')
    .description('write random printable text (lines of 80) to <file>: input for `iolab bench latency --infile`')
    .addArgument(pathArgument('<file>', 'file to create', { output: true, called: 'file' }))
    .option('--size <size>', 'bytes to write, e.g. 128M', numberOption({ min: 1, size: true }), 128 * 2 ** 20)
    .option('--force', 'replace the file (or the symlink itself) when it exists')
    .action((file: string, opts: { size: number; force?: boolean }) => generate(file, opts.size, opts.force === true));
}
