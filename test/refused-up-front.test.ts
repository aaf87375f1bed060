// What a run cannot finish is refused before it starts, and a run that fails anyway leaves
// nothing behind: bench api's temporary file against the free space (and its folder removed
// whatever stops it), a file name ending in / (gen, writev, every --output), a folder that is
// not there, a folder that cannot be written.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { cliPath, runCliText } from './support/cli.js';
import { shortTempDir } from './support/temp.js';

const root = process.getuid?.() === 0;

let dir: { path: string; cleanup: () => void };
beforeAll(() => { dir = shortTempDir('iolab-up-front-'); });
afterAll(() => dir.cleanup());

const folder = (name: string) => {
  const path = join(dir.path, name);
  mkdirSync(path);
  return path;
};

describe('bench api\'s temporary file', () => {
  it.runIf(root)('a --size the folder cannot hold is refused before a byte is written', async () => {
    const small = folder('small-tmpfs');
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'iolab-test', small]);
    try {
      const r = await runCliText(['bench', 'api', '--groups', 'read', '--rounds', '1', '--duration', '5ms', '--size', '64m'],
        { env: { TMPDIR: small }, timeout: 60_000 });
      expect(r.stderr).toMatch(/^iolab: not enough free space for the temporary test file \(--size 64 MiB\) in .*small-tmpfs: [\d.]+ MiB free, 64 MiB needed$/);
      expect(r.exitCode).toBe(1);
      expect(readdirSync(small)).toEqual([]);
    } finally {
      execFileSync('umount', [small]);
    }
  });

  it('its folder is removed when writing it fails (a file size limit here)', async () => {
    const tmp = folder('limited');
    // SIGXFSZ ignored (kept across exec): a write past the limit fails with EFBIG
    const r = await execa('sh', ['-c', `trap '' XFSZ; ulimit -f 1024; exec "$0" "$@"`, process.execPath, cliPath,
      'bench', 'api', '--groups', 'read', '--rounds', '1', '--duration', '5ms', '--size', '4m'],
    { env: { TMPDIR: tmp }, reject: false, timeout: 60_000 });
    expect(r.stderr).toBe(`iolab: cannot write the temporary test file in ${tmp} (EFBIG: file too large); nothing is left there`);
    expect(r.exitCode).toBe(1);
    expect(readdirSync(tmp)).toEqual([]);
  });
});

describe('bench iops\' layout', () => {
  it.runIf(root)('numjobs=2 whose files do not fit together is refused before either is laid out', async () => {
    const small = folder('numjobs-tmpfs');
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=24m', 'iolab-test', small]);
    try {
      const r = await runCliText(['bench', 'iops', '--name=a', '--size', '16m', '--numjobs', '2', '--rw', 'randread', '--ioengine', 'psync',
        '--runtime', '100ms'], { cwd: small, timeout: 60_000 });
      expect(r.stderr).toBe('iolab: not enough free space to lay out \'a.0.0\', \'a.1.0\' together: they need 32 MiB more, 24 MiB free; nothing was laid out');
      expect(r.exitCode).toBe(1);
      expect(readdirSync(small)).toEqual([]);
    } finally {
      execFileSync('umount', [small]);
    }
  });
});

describe('bench latency\'s --outfile', () => {
  it.runIf(root)('one its file system cannot hold is refused before the first read, not after them', async () => {
    const small = folder('latency-tmpfs');
    const input = join(dir.path, 'latency-in.dat');
    writeFileSync(input, Buffer.alloc(1 << 20, 7));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'iolab-test', small]);
    try {
      // 1,000 writes of 4 KiB: a 4 MiB file on a 1 MiB file system; strace -y names each read's file
      const log = join(dir.path, 'latency-strace.log');
      const r = await execa('strace', ['-f', '-y', '-qq', '-e', 'trace=read,pread64,readv,preadv,preadv2', '-o', log, process.execPath, cliPath,
        'bench', 'latency', '--engine', 'sync', '--count', '1000', '--no-direct', '--infile', input, '--outfile', join(small, 'out.dat')],
      { reject: false, timeout: 60_000 });
      expect({ exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr }).toEqual({ exitCode: 1, stdout: '',
        stderr: `iolab: not enough free space to lay out '${join(small, 'out.dat')}': it needs 4 MiB more, 1 MiB free; nothing was laid out` });
      expect(readFileSync(log, 'utf8').split('\n').filter((l) => l.includes(`<${input}>`))).toEqual([]); // not one read of --infile
      expect(readdirSync(small)).toEqual([]);
    } finally {
      execFileSync('umount', [small]);
    }
  });
});

describe('a name ending in / names a folder, never a file', () => {
  it('gen out/ is refused before it writes, and leaves nothing', async () => {
    const cwd = folder('gen-slash');
    const r = await runCliText(['gen', 'out/', '--size', '64k'], { cwd });
    expect(r.stderr).toBe('iolab: cannot write \'out/\': a name ending in / is a folder\'s; name a file');
    expect(r.exitCode).toBe(1);
    expect(readdirSync(cwd)).toEqual([]);
  });

  it('writev out/ too', async () => {
    const cwd = folder('writev-slash');
    const r = await runCliText(['writev', 'out/', 'x'], { cwd });
    expect(r.stderr).toBe('iolab: cannot write \'out/\': a name ending in / is a folder\'s; name a file');
    expect(readdirSync(cwd)).toEqual([]);
  });

  it('bench ipc --output dir/ is refused before the run', async () => {
    const cwd = folder('ipc-slash');
    const started = Date.now();
    const r = await runCliText(['bench', 'ipc', '--transports', 'stream-copy', '--sizes', '64', '--output', 'dir/'], { cwd });
    expect(r.stderr).toBe('iolab: --output: cannot write \'dir/\': a name ending in / is a folder\'s; name a file');
    expect(r.stdout).toBe('');
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(readdirSync(cwd)).toEqual([]);
  });
});

describe('the folder of a new file', () => {
  it('gen nodir/g.txt names the missing folder, not a syscall', async () => {
    const cwd = folder('gen-nodir');
    const r = await runCliText(['gen', 'nodir/g.txt', '--size', '4k'], { cwd });
    expect(r.stderr).toBe(`iolab: cannot write 'nodir/g.txt': no folder '${join(cwd, 'nodir')}'`);
    expect(existsSync(join(cwd, 'nodir'))).toBe(false);
  });

  it.runIf(root)('gen and writev --force on a read-only file system name the folder, not a temp file', async () => {
    const ro = folder('read-only');
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m,ro', 'iolab-test', ro]);
    try {
      const r = await runCliText(['gen', join(ro, 'g.txt'), '--size', '4k']);
      expect(r.stderr).toBe(`iolab: cannot write '${join(ro, 'g.txt')}': cannot create a file in ${ro} (EROFS: read-only file system)`);
      // writev --force of a file there: the same words, not its temp name
      execFileSync('mount', ['-o', 'remount,rw', ro]);
      writeFileSync(join(ro, 'w.txt'), 'old');
      execFileSync('mount', ['-o', 'remount,ro', ro]);
      const w = await runCliText(['writev', join(ro, 'w.txt'), 'new', '--force']);
      expect(w.stderr).toBe(`iolab: cannot replace '${join(ro, 'w.txt')}': cannot create a file in ${ro} (EROFS: read-only file system)`);
    } finally {
      execFileSync('umount', [ro]);
    }
  });
});

describe('report', () => {
  it('of a fio JSON with no job to chart is an error, and writes no page', async () => {
    const input = join(folder('report-empty'), 'fio.json');
    writeFileSync(input, JSON.stringify({ 'fio version': 'fio-3.33', jobs: [] }));
    const page = join(dir.path, 'report-empty', 'page.html');
    const r = await runCliText(['report', input, '-o', page]);
    expect(r).toEqual({ exitCode: 1, stdout: '', stderr: `iolab: ${input}: nothing in it to chart (no job or row with figures); no page written` });
    expect(existsSync(page)).toBe(false);
  });
});
