// Messages in a user's words: the option or argument they typed, not a syscall, an internal
// option name, a placeholder of the help or iolab's own temp name.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCliText } from './support/cli.js';
import { shortTempDir } from './support/temp.js';

let dir: { path: string; cleanup: () => void };
beforeAll(() => { dir = shortTempDir('iolab-words-'); });
afterAll(() => dir.cleanup());

const refused = (stderr: string) => ({ exitCode: 1, stdout: '', stderr: `iolab: ${stderr}` });

describe('bench iops --filename', () => {
  it('in a folder that is not there names the folder, not access(2)', async () => {
    const r = await runCliText(['bench', 'iops', '--filename', 'nodir/x.dat', '--size', '1m', '--runtime', '100ms'], { cwd: dir.path });
    expect(r).toEqual(refused(`--filename: cannot create 'nodir/x.dat': no folder '${join(dir.path, 'nodir')}'`));
  });

  it('an empty name is said so, whichever way it is spelt', async () => {
    for (const args of [['--filename='], ['--filename', ''], ['-filename=']]) {
      const r = await runCliText(['bench', 'iops', ...args, '--size', '1m'], { cwd: dir.path });
      // named as typed
      expect(r).toEqual(refused(`${args[0].split('=')[0]} names no file; fio refuses it too ("failed parsing filename=")`));
    }
  });

  it('a name ending in / is refused before a layout', async () => {
    const r = await runCliText(['bench', 'iops', '--filename', 'out/', '--size', '1m'], { cwd: dir.path });
    expect(r).toEqual(refused('--filename: cannot create \'out/\': a name ending in / is a folder\'s; name a file'));
  });
});

describe('arguments are named in words, not the help\'s placeholders', () => {
  it('report\'s input, bench iops\' job file', async () => {
    const input = join(dir.path, 'in.json');
    writeFileSync(input, '{}');
    expect(await runCliText(['report', input, '-o', input])).toEqual(
      refused(`-o: '${input}' is the same file as input '${input}' of this run; name another file (--force does not change this)`));
    const job = join(dir.path, 'job.fio');
    writeFileSync(job, '[a]\nrw=read\nsize=1m\n');
    expect(await runCliText(['bench', 'iops', job, '--output', job])).toEqual(
      refused(`--output: '${job}' is the same file as job file '${job}' of this run; name another file (--force does not change this)`));
  });
});

describe('a file where a folder should be', () => {
  it('writev and gen say so, not ENOTDIR from lstat', async () => {
    const plain = join(dir.path, 'plain.txt');
    writeFileSync(plain, 'x');
    for (const argv of [['writev', join(plain, 'x'), 'hi'], ['gen', join(plain, 'x'), '--size', '4k']]) {
      expect(await runCliText(argv)).toEqual(refused(`cannot write '${join(plain, 'x')}': a folder on its way is a file`));
    }
  });
});

describe('shm and echo', () => {
  it('shm write \'\' x: the empty name, not the \'/\' iolab adds', async () => {
    for (const name of ['', '/']) {
      expect(await runCliText(['shm', 'write', name, 'x'])).toEqual(refused('the shared-memory object\'s name is empty: name one, e.g. demo'));
    }
  });

  it('echo server --host of another machine: "cannot listen on", for every server', async () => {
    for (const server of ['io_uring', 'epoll', 'node', 'ring', 'duplex']) {
      expect(await runCliText(['echo', 'server', '--server', server, '--host', '8.8.8.8', '--port', '0'], { timeout: 20_000 })).toEqual(
        refused(`cannot listen on 8.8.8.8:0 (server ${server}): EADDRNOTAVAIL: address not available (--host must be an address of this machine)`));
    }
  });
});

describe('trace', () => {
  it('IOLAB_BPFTRACE naming nothing says so, not "bpftrace is not installed"', async () => {
    const r = await runCliText(['trace', '--', 'readv', 'readv.c'], { env: { IOLAB_BPFTRACE: '/nonexistent' } });
    expect(r).toEqual(refused('IOLAB_BPFTRACE names \'/nonexistent\', which does not exist: name the bpftrace program, or unset it to use the one on PATH'));
  });
});

describe('help', () => {
  it('iolab help bench iops is bench iops --help; help echo server too', async () => {
    const r = await runCliText(['help', 'bench', 'iops']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe((await runCliText(['bench', 'iops', '--help'])).stdout);
    expect(r.stdout).toMatch(/^Usage: iolab bench iops /);
    expect((await runCliText(['help', 'echo', 'server'])).stdout).toMatch(/^Usage: iolab echo server /);
  });
});
