// What the demos say when the input is odd but not wrong in an obvious way: each message names
// what the user typed and the limit or the folder at fault, on one line.
import { describe, expect, it } from 'vitest';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCliText } from './support/cli.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';

const tmp = shortTempDir('iolab-dmsg-');
checkLeaksAfterAll(tmp);
const at = (name: string) => join(tmp.path, name);

describe('readv --offset', () => {
  it('past the largest offset: the message names the limit', async () => {
    const r = await runCliText(['readv', 'readv.c', '--offset', '18446744073709551615']);
    expect(r.stderr).toBe("iolab: option '--offset <bytes>' argument '18446744073709551615' is invalid. " +
      "expected a size from 0 to 9007199254740991 (bytes; k, m, g, t suffixes), got '18446744073709551615'");
    expect(r.exitCode).toBe(1);
  });
});

describe('writev', () => {
  it('a newline in what it prints is shown escaped: the result stays one line', async () => {
    const dir = at('wv');
    mkdirSync(dir);
    const file = join(dir, 'two\nlines.txt');
    const r = await runCliText(['writev', file, 'a\nb', 'c']);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe(`writev 4 bytes to ${dir}/two\\nlines.txt`);
    expect(readFileSync(file, 'utf8')).toBe('a\nbc');
  });
});

describe('fdpass recv --socket in a folder that does not exist', () => {
  it('names the folder the user gave, not a file of its own; nothing is created', async () => {
    const socket = at('nodir/x.sock');
    const r = await runCliText(['fdpass', 'recv', '--socket', socket, '--timeout', '1']);
    expect(r.stderr).toBe(`iolab: ${at('nodir')} does not exist (the folder of --socket ${socket})`);
    expect(r.stdout).toBe('');
    expect(r.exitCode).toBe(1);
    expect(readdirSync(tmp.path)).not.toContain('nodir');
  });
});
