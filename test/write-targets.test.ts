// The writing commands against paths that are not regular files: a device node or a FIFO is
// refused with one line, with and without --force/--append, and is the same node afterwards.
// The devices are mknod copies of /dev/null in the temp folder (this needs root); the real
// /dev/null is only ever named without --force or --append, where the refusal is checked.
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { native } from '../src/native.js';
import { placeNewFile, writeOutputFile } from '../src/write-target.js';
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

describe.runIf(process.getuid?.() === 0)('a block device node is never written either', () => {
  it.each([[['writev']], [['gen']]])('%j on a block device node made here (a loop device\'s numbers)', async ([command]) => {
    const dev = at('disk');
    execFileSync('mknod', [dev, 'b', '7', '250']);
    const args = command === 'writev' ? ['writev', dev, 'a'] : ['gen', dev, '--size', '4k'];
    for (const force of [[], ['--force']]) expectRefused(await cli([...args, ...force]), dev, 'a block device');
    expect(lstatSync(dev).isBlockDevice()).toBe(true);
  });
});

describe('placeNewFile: a file put at a free name, whatever the file system can do', () => {
  const errno = (code: string) => Object.assign(new Error(code), { code });
  const appeared = () => new Error('appeared');
  const setUp = () => {
    const [temp, path] = [at('finished.tmp'), at('results.json')];
    writeFileSync(temp, 'new');
    return { temp, path };
  };
  it('where renameat2 cannot (EINVAL, ENOSYS), or without it: link(2), then the temp name dropped', () => {
    for (const rename of [() => { throw errno('EINVAL'); }, () => { throw errno('ENOSYS'); }, undefined]) {
      const { temp, path } = setUp();
      placeNewFile(temp, path, appeared, rename);
      expect([existsSync(temp), readFileSync(path, 'utf8')]).toEqual([false, 'new']);
    }
  });
  it('where there are no hard links (EPERM, ENOTSUP, EOPNOTSUPP): a rename; another failure is thrown and changes nothing', () => {
    for (const code of ['EPERM', 'ENOTSUP', 'EOPNOTSUPP']) {
      const { temp, path } = setUp();
      placeNewFile(temp, path, appeared, undefined, () => { throw errno(code); });
      expect([existsSync(temp), readFileSync(path, 'utf8')], code).toEqual([false, 'new']);
    }
    const { temp, path } = setUp();
    expect(() => placeNewFile(temp, path, appeared, () => { throw errno('EXDEV'); })).toThrow(expect.objectContaining({ code: 'EXDEV' }));
    expect(() => placeNewFile(temp, path, appeared, undefined, () => { throw errno('EIO'); })).toThrow(expect.objectContaining({ code: 'EIO' }));
    expect([existsSync(temp), existsSync(path)]).toEqual([true, false]);
  });
  it('a name taken meanwhile is the caller\'s error, by rename or by link, and is left as it was', () => {
    for (const rename of [undefined, native.renameNoReplace]) {
      const { temp, path } = setUp();
      writeFileSync(path, 'old');
      expect(() => placeNewFile(temp, path, appeared, rename)).toThrow('appeared');
      expect(readFileSync(path, 'utf8')).toBe('old');
    }
  });
});

describe('writeOutputFile: a results file that appeared while the run went on', () => {
  it('is left untouched, in one line that names the option and says --force replaces it; no temp file stays', () => {
    const path = at('appeared.json');
    writeFileSync(path, 'someone else\'s');
    expect(() => writeOutputFile(path, '{}', '--output')).toThrow(
      `--output: '${path}' appeared while the run went on; left untouched (--force replaces it)`);
    expect(readFileSync(path, 'utf8')).toBe('someone else\'s');
    expect(readdirSync(tmp.path).filter((n) => n.includes('appeared.json') && n !== basename(path))).toEqual([]);
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

describe('the names of the standard streams and of the kernel folders', () => {
  it("a results path that names stdout or stderr, as other tools take it; no other fd", async () => {
    const { standardStream } = await import('../src/write-target.js');
    const names = ['/dev/stdout', '/dev/fd/1', '/proc/self/fd/1', '/dev/stderr', '/dev/fd/2', '/proc/self/fd/2', '/dev/fd/3', '/dev/stdout2', 'dev/stdout'];
    expect(names.map(standardStream)).toEqual(['stdout', 'stdout', 'stdout', 'stderr', 'stderr', 'stderr', undefined, undefined, undefined]);
  });

  it('a file in /proc is refused as a results file with --force too (iolab replaces nothing there)', async () => {
    const { checkOutputPath } = await import('../src/write-target.js');
    for (const force of [false, true]) {
      expect(() => checkOutputPath('/proc/self/status', '--output', { force, createFolders: false }), String(force))
        .toThrow("--output: cannot write '/proc/self/status': it is in /proc (proc), where iolab replaces nothing, --force or not");
    }
  });
});
