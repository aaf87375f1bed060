// A file the user names for a benchmark's results (--output) or a report (-o) is checked before
// any work: a folder, a folder iolab cannot write in, a missing folder are one line naming the
// user's path, never an internal temp name, and leave nothing behind. A good --output still gets
// the table and the file.
import { describe, expect, it } from 'vitest';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { projectRoot } from '../src/native.js';
import { iolabArgv, runCliText } from './support/cli.js';
import { cli as cliAs, nobodyCanRunCli } from './support/demo.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';

const tmp = shortTempDir('iolab-bout-');
chmodSync(tmp.path, 0o755); // the read-only-folder case runs as another user
const at = (name: string) => join(tmp.path, name);
/** The shortest bench ipc run: one transport, one size, one mode, one round. */
const ipc = ['bench', 'ipc', '--transports', 'pipe', '--sizes', '4k', '--mode', 'throughput', '--duration', '50ms', '--rounds', '1'];

describe('--output checked before the run', () => {
  it('bench ipc --output FOLDER: one line naming the folder, no run, nothing written', async () => {
    const folder = at('ipc-folder');
    mkdirSync(folder);
    const r = await runCliText([...ipc, '--output', folder]);
    expect(r).toEqual({ exitCode: 1, stdout: '', stderr: `iolab: --output: cannot write '${folder}': it is a folder; name a file` });
    expect(readdirSync(folder)).toEqual([]);
    expect(readdirSync(tmp.path).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('bench latency --output FOLDER: the same line, before any I/O', async () => {
    const folder = at('lat-folder');
    mkdirSync(folder);
    const infile = at('lat-in.txt');
    expect((await runCliText(['gen', infile, '--size', '16k'])).exitCode).toBe(0);
    const r = await runCliText(['bench', 'latency', '--engine', 'sync', '--count', '4', '--no-direct', '--infile', infile,
      '--outfile', at('lat-out.dat'), '--output', folder]);
    expect(r).toEqual({ exitCode: 1, stdout: '', stderr: `iolab: --output: cannot write '${folder}': it is a folder; name a file` });
    expect(existsSync(at('lat-out.dat'))).toBe(false);
  });

  it('--output inside a file, and a FIFO as --output: one line each', async () => {
    const file = at('plain.txt');
    expect((await runCliText(['gen', file, '--size', '1k'])).exitCode).toBe(0);
    let r = await runCliText([...ipc, '--output', join(file, 'x.json')]);
    expect(r).toEqual({ exitCode: 1, stdout: '', stderr: `iolab: --output: cannot write '${join(file, 'x.json')}': '${file}' is not a folder` });
    expect(readFileSync(file).length).toBe(1024);
    r = await runCliText([...ipc, '--output', '/dev/null']);
    expect(r).toEqual({ exitCode: 1, stdout: '', stderr: "iolab: --output: cannot write '/dev/null': it exists and is not a regular file" });
  });

  it.runIf(nobodyCanRunCli)('a folder the user cannot write in: one line naming it, exit 1, before the run', async () => {
    const folder = at('ro');
    mkdirSync(folder, { mode: 0o755 }); // root's: uid 65534 may read it, not write in it
    const out = join(folder, 'sub', 'ipc.json');
    const r = await cliAs([...ipc, '--output', out], { uid: 65534 });
    expect({ exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr })
      .toEqual({ exitCode: 1, stdout: '', stderr: `iolab: --output: cannot write '${out}': cannot write in '${folder}' (EACCES: permission denied)` });
    expect(readdirSync(folder)).toEqual([]);
  });

  it('a good --output in a new folder: the table, then "written:", and the JSON', async () => {
    const out = at('new/deeper/ipc.json');
    const r = await runCliText([...ipc, '--output', out]);
    expect(r.stderr).not.toMatch(/iolab:/);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/pipe/);
    expect(r.stdout.trimEnd().split('\n').at(-1)).toBe(`written: ${out}`);
    expect(JSON.parse(readFileSync(out, 'utf8')).rows.length).toBeGreaterThan(0);
    expect(readdirSync(at('new/deeper'))).toEqual(['ipc.json']);
  });
});

describe('--output of every benchmark', () => {
  it('a folder as --output is refused before any of them runs', async () => {
    const folder = at('every-folder');
    mkdirSync(folder);
    const line = `iolab: --output: cannot write '${folder}': it is a folder; name a file`;
    for (const args of [
      ['bench', 'iops', '--filename', at('every.dat'), '--size', '1m', '--number_ios', '16', '--ioengine', 'psync'],
      ['bench', 'echo', '--clients', '2', '--duration', '1', '--rounds', '1', '--engines', 'epoll', '--generators', 'epoll'],
      ['bench', 'api', '--rounds', '1', '--duration', '5', '--size', '64k'],
    ]) {
      expect(await runCliText([...args, '--output', folder]), args[1]).toEqual({ exitCode: 1, stdout: '', stderr: line });
    }
    expect(existsSync(at('every.dat'))).toBe(false);
  });

  it('a file name of 250 bytes is written (its temp name stays within the limit); one of 300 is refused first', async () => {
    const long = at('x'.repeat(245) + '.json');
    const r = await runCliText([...ipc, '--output', long]);
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(readFileSync(long, 'utf8')).rows.length).toBeGreaterThan(0);
    const tooLong = at('y'.repeat(300));
    expect(await runCliText([...ipc, '--output', tooLong]))
      .toEqual({ exitCode: 1, stdout: '', stderr: `iolab: --output: cannot write '${tooLong}': ENAMETOOLONG: name too long` });
  });
});

describe('--output that fails at the end of the run', () => {
  it('the table is printed all the same, then one line naming the file; no temp file left', async () => {
    // RLIMIT_FSIZE of 200 bytes: the check passes, the JSON's write fails with EFBIG (Node
    // ignores SIGXFSZ); stdout is a pipe, which the limit does not touch.
    const out = at('big/ipc.json');
    const [file, argv] = iolabArgv([...ipc, '--output', out]);
    const r = await execa('prlimit', ['--fsize=200', file, ...argv], { reject: false, cwd: projectRoot });
    expect(r.exitCode).toBe(1);
    expect(String(r.stderr).split('\n').at(-1)).toBe(`iolab: --output: could not write '${out}' (EFBIG: file too large)`);
    expect(String(r.stdout)).toMatch(/^pipe\s+4 KiB\s/m);
    expect(readdirSync(at('big'))).toEqual([]);
  });
});

describe('report -o', () => {
  it('a missing folder: one line naming the path the user gave, nothing written', async () => {
    const input = at('report-in.json');
    expect((await runCliText([...ipc, '--output', input])).exitCode).toBe(0);
    const out = at('nodir/r.html');
    const r = await runCliText(['report', input, '-o', out]);
    expect(r).toEqual({ exitCode: 1, stdout: '', stderr: `iolab: -o: cannot write '${out}': no folder '${at('nodir')}'` });
    expect(existsSync(at('nodir'))).toBe(false);
    expect(readdirSync(tmp.path).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });
});

checkLeaksAfterAll(tmp);
