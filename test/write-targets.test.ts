// The writing commands against paths that are not regular files: a device node or a FIFO is
// refused with one line, with and without --force/--append, and is the same node afterwards.
// The devices are mknod copies of /dev/null in the temp folder (this needs root); the real
// /dev/null is only ever named without --force or --append, where the refusal is checked.
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { native } from '../src/native.js';
import { runCliText } from './support/cli.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';

const tmp = shortTempDir('iolab-wtg-');
checkLeaksAfterAll(tmp);
let unique = 0;
const at = (name: string) => join(tmp.path, `${name}-${unique++}`);
// A command that hangs is stopped after this long, so the test fails on its exit status.
const cli = (args: string[]) => runCliText(args, { timeout: 20_000 });

const nullRdev = statSync('/dev/null').rdev;

function deviceCopy(): string {
  const path = at('null');
  execFileSync('mknod', [path, 'c', '1', '3']);
  return path;
}

function fifo(): string {
  const path = at('fifo');
  execFileSync('mkfifo', [path]);
  return path;
}

const stillDevice = (path: string) => {
  const st = lstatSync(path);
  return st.isCharacterDevice() && st.rdev === nullRdev;
};
const stillFifo = (path: string) => lstatSync(path).isFIFO();

/** One iolab line that says what the path is, with no hint that --force would do. */
function expectRefused(r: { exitCode?: number; stdout: string; stderr: string }, path: string, kind: string): void {
  expect(r.stdout).toBe('');
  expect(r.stderr).toBe(`iolab: ${path} is ${kind}, not a regular file; left untouched (iolab writes only regular files)`);
  expect(r.exitCode).toBe(1);
}

describe.runIf(process.getuid?.() === 0)('a device node is never replaced or written', () => {
  it.each([[[]], [['--append']], [['--force']]])('writev %j on a copy of /dev/null', async (flags) => {
    const dev = deviceCopy();
    expectRefused(await cli(['writev', dev, 'a', ...flags]), dev, 'a character device');
    expect(stillDevice(dev)).toBe(true);
  });

  it.each([[[]], [['--force']]])('gen %j on a copy of /dev/null', async (flags) => {
    const dev = deviceCopy();
    expectRefused(await cli(['gen', dev, '--size', '4k', ...flags]), dev, 'a character device');
    expect(stillDevice(dev)).toBe(true);
  });

  it.each([[['writev', '/dev/null', 'a']], [['gen', '/dev/null', '--size', '4k']]])('the real /dev/null, %j: refused without a hint to use --force', async (args) => {
    expectRefused(await cli(args), '/dev/null', 'a character device');
    expect(stillDevice('/dev/null')).toBe(true);
  });
});

describe('a FIFO is refused at once, never opened to wait for a reader, never replaced', () => {
  it.each([[[]], [['--append']], [['--force']]])('writev %j', async (flags) => {
    const path = fifo();
    expectRefused(await cli(['writev', path, 'a', ...flags]), path, 'a FIFO (named pipe)');
    expect(stillFifo(path)).toBe(true);
  });

  it.each([[[]], [['--force']]])('gen %j', async (flags) => {
    const path = fifo();
    expectRefused(await cli(['gen', path, '--size', '4k', ...flags]), path, 'a FIFO (named pipe)');
    expect(stillFifo(path)).toBe(true);
  });
});

describe('shm: an object name that is a FIFO in /dev/shm', () => {
  it.each([
    [['write', '--force'], 'a FIFO (named pipe), not a regular file; left untouched (iolab writes only regular files)'],
    [['read'], 'a FIFO (named pipe), not a regular file; left untouched (a shared-memory object is a regular file)'],
  ])('shm %j: refused at once, the FIFO stays', async (how, words) => {
    const name = `iolab-test-wtg-${process.pid}-${unique++}`;
    const path = `/dev/shm/${name}`;
    execFileSync('mkfifo', [path]);
    try {
      const args = how[0] === 'write' ? ['shm', 'write', name, 'text', ...how.slice(1)] : ['shm', 'read', name];
      const r = await cli(args);
      expect(r.stderr).toBe(`iolab: ${path} is ${words}`);
      expect(r.exitCode).toBe(1);
      expect(stillFifo(path)).toBe(true);
    } finally {
      rmSync(path, { force: true });
    }
  });
});

describe('renameNoReplace: the last step of every results file', () => {
  it('puts the file at a free name; onto a name that exists it fails with EEXIST and changes neither; a name with a NUL is refused before any rename', () => {
    const [from, to, other] = ['finished.tmp', 'results.json', 'kept.json'].map((n) => join(tmp.path, n));
    writeFileSync(from, 'new');
    writeFileSync(other, 'old');
    expect(() => native.renameNoReplace(from, other)).toThrow(expect.objectContaining({ code: 'EEXIST', syscall: 'rename' }));
    expect([readFileSync(from, 'utf8'), readFileSync(other, 'utf8')]).toEqual(['new', 'old']);
    // a NUL would cut the name short in C, naming another file: `to` cut there is a free name
    // (the message names the argument and shows the value given, as Node's ERR_INVALID_ARG_VALUE)
    expect(() => native.renameNoReplace(from, `${to}\0.x`)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE',
      message: expect.stringMatching(/^The argument 'to' must be a path without null bytes\. Received type string \('\//) }));
    expect(() => native.renameNoReplace(`${from}\0.x`, to)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE',
      message: expect.stringMatching(/^The argument 'from' must be a path without null bytes\. Received type string \('\//) }));
    expect([existsSync(from), existsSync(to)]).toEqual([true, false]);
    native.renameNoReplace(from, to);
    expect([existsSync(from), readFileSync(to, 'utf8')]).toEqual([false, 'new']);
  });
});
