// `iolab readv` and `iolab writev` run as a user does (separate processes): exact stdout,
// stderr and exit codes, and bad input leaving files as they were.
import { afterAll, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { native, projectRoot } from '../src/native.js';
import { shortTempDir } from './support/temp.js';
import { cli, unshowBytes } from './support/demo.js';

const tmp = shortTempDir('iolab-drw-');
chmodSync(tmp.path, 0o755); // the unreadable-file case runs as another user
afterAll(() => tmp.cleanup());
const at = (name: string) => join(tmp.path, name);

/** What `readv` must print for this text file and buffer sizes, computed independently. */
function expectedReadv(content: Buffer, sizes: number[]): string[] {
  expect(content.toString('latin1')).toMatch(/^[\x20-\x7e\n]*$/); // plain text: only \\ and \n to escape
  const total = Math.min(content.length, sizes.reduce((a, b) => a + b, 0));
  const lines = [`Read ${total} bytes:`];
  let start = 0;
  sizes.forEach((size, i) => {
    const part = content.subarray(start, Math.min(start + size, total));
    start += size;
    lines.push(`buf${i + 1}: ${part.toString().replaceAll('\\', '\\\\').replaceAll('\n', '\\n')}`);
  });
  return lines;
}

describe('iolab readv', () => {
  it('readv readv.c prints the first 224 bytes split 32/64/128, the same bytes the C program reads', async () => {
    const content = readFileSync(join(projectRoot, 'readv.c'));
    const r = await cli(['readv', 'readv.c']);
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    expect(r.stdout.split('\n')).toEqual(expectedReadv(content, [32, 64, 128]));

    // readv.c is a real program: built and run, it reads the same bytes into the same buffers.
    const exe = at('readv-c');
    await execa('cc', ['-Wall', '-Wextra', '-Werror', '-o', exe, join(projectRoot, 'readv.c')]);
    const c = await execa(exe, [join(projectRoot, 'readv.c')], { encoding: 'buffer', stripFinalNewline: false });
    const cOut = Buffer.from(c.stdout);
    const header = 'Read 224 bytes:\nbuf1: ';
    expect(cOut.subarray(0, header.length).toString()).toBe(header);
    const shown = r.stdout.split('\n').slice(1).map((l) => unshowBytes(l.replace(/^buf\d: /, '')));
    expect(cOut).toEqual(Buffer.concat([Buffer.from('Read 224 bytes:\n'),
      ...shown.flatMap((b, i) => [Buffer.from(`buf${i + 1}: `), b, Buffer.from('\n')])]));
  });

  it('--sizes, --offset (preadv) and --json; a short file fills only what it has', async () => {
    const file = at('short.bin');
    const content = Buffer.from([...Buffer.from('ab\\c\n'), 0, 0xff, 0x1b, ...Buffer.from('é')]);
    writeFileSync(file, content);
    const r = await cli(['readv', file, '--sizes', '3,4,100']);
    expect(r.stdout).toBe('Read 10 bytes:\nbuf1: ab\\\\\nbuf2: c\\n\\0\\xff\nbuf3: \\x1bé');

    const j = await cli(['readv', file, '--sizes', '2,2', '--offset', '7', '--json']);
    expect(JSON.parse(j.stdout)).toEqual({
      bytes: 3,
      buffers: [
        { size: 2, bytes: 2, text: '\\x1b\\xc3', base64: Buffer.from([0x1b, 0xc3]).toString('base64') },
        { size: 2, bytes: 1, text: '\\xa9', base64: Buffer.from([0xa9]).toString('base64') },
      ],
    });
  });

  it.each([
    [['readv', 'no-such-file'], "iolab: ENOENT: no such file or directory, open 'no-such-file'"],
    [['readv', '.'], 'iolab: . is a directory, not a file'],
    [['readv', 'readv.c', '--sizes', ''], "iolab: option '--sizes <list>' argument '' is invalid. expected a comma-separated list, each a size >= 1 (bytes; k, m, g, t suffixes), got ''"],
    [['readv', 'readv.c', '--sizes', '32,0'], "iolab: option '--sizes <list>' argument '32,0' is invalid. expected a size >= 1 (bytes; k, m, g, t suffixes), got '0'"],
    [['readv', 'readv.c', '--sizes', '-5'], "iolab: option '--sizes <list>' argument '-5' is invalid. expected a size >= 1 (bytes; k, m, g, t suffixes), got '-5'"],
  ])('bad input %j: one line, exit 1', async (args, message) => {
    const r = await cli(args);
    expect({ stdout: r.stdout, stderr: r.stderr, exitCode: r.exitCode }).toEqual({ stdout: '', stderr: message, exitCode: 1 });
  });

  it('a FIFO is refused at once (no writer needed), plain and --io-uring; a socket too; devices are read without waiting', async () => {
    const fifo = at('fifo');
    await execa('mkfifo', [fifo]);
    for (const variant of [[], ['--io-uring']]) {
      const r = await cli(['readv', fifo, ...variant], { timeoutMs: 10_000 });
      expect({ stderr: r.stderr, exitCode: r.exitCode }).toEqual({
        stderr: `iolab: ${fifo} is a FIFO (named pipe), not a regular file: a read would wait for a writer, maybe forever; ` +
          'readv reads regular files and devices',
        exitCode: 1,
      });
    }
    const socket = at('s.sock');
    const bound = native.socket('unix', 'stream');
    try {
      native.bind(bound, socket);
      const r = await cli(['readv', socket]);
      expect(r.stderr).toBe(`iolab: ${socket} is a Unix socket, not a file; readv reads regular files and devices`);
    } finally {
      native.close(bound);
    }
    for (const variant of [[], ['--io-uring']]) {
      expect((await cli(['readv', '/dev/zero', '--sizes', '2', ...variant])).stdout).toBe('Read 2 bytes:\nbuf1: \\0\\0');
      expect((await cli(['readv', '/dev/null', '--sizes', '2', ...variant])).stdout).toBe('Read 0 bytes:\nbuf1: ');
    }
  });

  it.runIf(process.getuid?.() === 0)('a file the user may not read: EACCES, one line', async () => {
    const file = at('secret.txt');
    writeFileSync(file, 'secret');
    chmodSync(file, 0o600);
    const r = await cli(['readv', file], { uid: 65534, gid: 65534 });
    expect(r.stderr).toBe(`iolab: EACCES: permission denied, open '${file}'`);
    expect(r.exitCode).toBe(1);
  });
});

describe('iolab writev', () => {
  it('creates a new file (0644) with the pieces gathered in one call; readv reads them back', async () => {
    const file = at('new.txt');
    const r = await cli(['writev', file, 'hello, ', 'vectored ', 'world', '--newline']);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe(`writev 22 bytes to ${file}`);
    expect(r.exitCode).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe('hello, vectored world\n');
    expect(statSync(file).mode & 0o777).toBe(0o644);
    const back = await cli(['readv', file, '--sizes', '7,9,5,1,4']);
    expect(back.stdout).toBe('Read 22 bytes:\nbuf1: hello, \nbuf2: vectored \nbuf3: world\nbuf4: \\n\nbuf5: ');
  });

  it('refuses an existing file without --append/--force (file untouched); --append adds; --force replaces', async () => {
    const file = at('existing.txt');
    writeFileSync(file, 'precious\n');
    const refused = await cli(['writev', file, 'oops']);
    expect(refused.stderr).toBe(`iolab: ${file} already exists; left untouched (use --append to add to it or --force to replace it)`);
    expect(refused.exitCode).toBe(1);
    expect(readFileSync(file, 'utf8')).toBe('precious\n');

    const a2 = await cli(['writev', file, 'more ', 'lines', '--append', '--json']);
    expect(JSON.parse(a2.stdout)).toEqual({ file, mode: 'append', bytes: 10, pieces: 2, calls: 1 });
    expect(readFileSync(file, 'utf8')).toBe('precious\nmore lines');

    const forced = await cli(['writev', file, 'replaced', '--force']);
    expect(forced.stdout).toBe(`writev 8 bytes to ${file}`);
    expect(readFileSync(file, 'utf8')).toBe('replaced');
    expect(readdirSync(tmp.path).filter((f) => f.includes('.tmp'))).toEqual([]);

    const both = await cli(['writev', file, 'x', '--append', '--force']);
    expect(both.stderr).toBe("iolab: option '--append' cannot be used with option '--force'");
    expect(both.exitCode).toBe(1);
    expect(readFileSync(file, 'utf8')).toBe('replaced');
  });

  it('a symbolic link is refused (create and --append), naming its target; --force replaces the link, never the target', async () => {
    const target = at('target.txt');
    writeFileSync(target, 'the target');
    const link = at('link.txt');
    symlinkSync(target, link);
    const refused = `iolab: refusing to write through symlink '${link}' -> '${target}' ` +
      '(use --force to replace the link with a new file; its target is never written)';
    for (const extra of [[], ['--append'], ['--io-uring', '--append']]) {
      expect(await cli(['writev', link, 'through?', ...extra])).toEqual({ stdout: '', stderr: refused, exitCode: 1 });
    }
    expect(readFileSync(target, 'utf8')).toBe('the target');
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    const dangling = at('dangling.txt');
    symlinkSync(at('nowhere.txt'), dangling);
    expect((await cli(['writev', dangling, 'x', '--append'])).exitCode).toBe(1);
    expect(existsSync(at('nowhere.txt'))).toBe(false);

    expect(await cli(['writev', link, 'x', '--force'])).toEqual({ stdout: `writev 1 byte to ${link}`, stderr: '', exitCode: 0 });
    expect(lstatSync(link).isFile()).toBe(true);
    expect(readFileSync(link, 'utf8')).toBe('x');
    expect(readFileSync(target, 'utf8')).toBe('the target');
  });

  it('a directory, or a folder that does not exist: one line, nothing created', async () => {
    const dir = at('adir');
    mkdirSync(dir);
    const r = await cli(['writev', dir, 'x', '--force']);
    expect(r.stderr).toBe(`iolab: ${dir} is a directory, not a file`);
    const missing = await cli(['writev', at('nope/file.txt'), 'x']);
    expect(missing.stderr).toBe(`iolab: cannot write '${at('nope/file.txt')}': no folder '${at('nope')}'`);
    expect(missing.exitCode).toBe(1);
    expect(readdirSync(dir)).toEqual([]);
  });
});
