// Node reads each command-line argument as UTF-8 text and puts U+FFFD where the bytes are not
// UTF-8, so a file named in another encoding (`--filename $'caf\xe9.dat'`, Latin-1) reached
// iolab as 'caf\uFFFD.dat': another name, and iolab laid out, wrote or failed to find a file the
// user never named. The bytes the process was started with are in /proc/self/cmdline; an
// argument whose bytes are not UTF-8 is refused in one line before anything runs, so no
// command ever touches a file other than the one named (nor writes text other than the given).
import { readFileSync } from 'node:fs';
import { showBytes } from './show-bytes.js';
import { UserError } from './user-error.js';

const strict = new TextDecoder('utf-8', { fatal: true });

function isUtf8(bytes: Uint8Array): boolean {
  try {
    strict.decode(bytes);
    return true;
  } catch {
    return false;
  }
}

/** The bytes of this process's last `count` arguments, or undefined when they cannot be told
 * (no /proc, or the command line was changed since: process.title). */
function rawArguments(count: number): Buffer[] | undefined {
  let cmdline: Buffer;
  try {
    cmdline = readFileSync('/proc/self/cmdline');
  } catch {
    return undefined;
  }
  const parts: Buffer[] = [];
  let start = 0;
  for (let i = 0; i < cmdline.length; i++) {
    if (cmdline[i] !== 0) continue;
    parts.push(cmdline.subarray(start, i));
    start = i + 1;
  }
  return parts.length >= count ? parts.slice(parts.length - count) : undefined;
}

/** The arguments of this process that are not UTF-8: their text as Node made it, their bytes. */
let undecodable: { text: string; bytes: Buffer }[] = [];

/** Notes which of this process's arguments (process.argv without node and the script) are not
 * UTF-8, for refuseNonUtf8Arguments; called before the command line is parsed. */
export function noteRawArguments(args: readonly string[]): void {
  undecodable = [];
  const raw = rawArguments(args.length);
  if (raw === undefined) return;
  // the same arguments, by their count and every UTF-8 one's text; otherwise nothing to tell
  if (raw.some((bytes, i) => isUtf8(bytes) && bytes.toString('utf8') !== args[i])) return;
  raw.forEach((bytes, i) => {
    if (!isUtf8(bytes)) undecodable.push({ text: args[i], bytes });
  });
}

/**
 * Throws the one-line refusal of an argument that is not UTF-8 (noted by noteRawArguments):
 * named by its option when it is a path the command was given (`givenPaths`), else by its bytes.
 */
export function refuseNonUtf8Arguments(given: readonly { option: string; path: string }[]): void {
  if (undecodable.length === 0) return;
  const why = 'is not UTF-8 text, and iolab reads the command line as UTF-8';
  for (const g of given) {
    for (const { text, bytes } of undecodable) {
      // the whole argument, or the value of --option=value
      const inline = text.endsWith(`=${g.path}`) && /^--?[A-Za-z][\w-]*=/.test(text) ? text.indexOf('=') + 1 : -1;
      if (text !== g.path && inline < 0) continue;
      throw new UserError(`${g.option}: '${showBytes(inline < 0 ? bytes : bytes.subarray(Buffer.byteLength(text.slice(0, inline))))}' ${why}: ` +
        'it would name another file; rename the file, or name it through a link whose name is UTF-8');
    }
  }
  throw new UserError(`'${showBytes(undecodable[0].bytes)}' ${why}: it would be taken for other bytes; give it as UTF-8`);
}
