// A file the user names for a benchmark's results (--output) or a report (-o) is checked before
// any work: a folder, a folder iolab cannot write in, a missing folder are one line naming the
// user's path, never an internal temp name, and leave nothing behind. A FIFO, a device, an
// existing file or a symlink (without --force) and any file the run itself reads or writes
// (--force or not) are refused the same way and left as they were. A good --output still gets
// the table and the file; `-` is stdout.
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, linkSync, lstatSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { execa } from 'execa';
import { projectRoot } from '../src/native.js';
import { iolabArgv, runCliText } from './support/cli.js';
import { cli as cliAs, nobodyCanRunCli } from './support/demo.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';

const tmp = shortTempDir('iolab-bout-');
chmodSync(tmp.path, 0o755); // the read-only-folder case runs as another user
const at = (name: string) => join(tmp.path, name);
/** What must not change of a file iolab was not allowed to touch. */
function fileState(path: string) {
  const st = statSync(path);
  const bytes = st.isFile() ? createHash('sha256').update(readFileSync(path)).digest('hex') : undefined;
  return { bytes, size: st.size, mode: st.mode, ino: st.ino, kind: st.isFile() ? 'file' : st.isFIFO() ? 'fifo' : 'other' };
}
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

  it('--output inside a file: one line naming the file that is no folder', async () => {
    const file = at('plain.txt');
    expect((await runCliText(['gen', file, '--size', '1k'])).exitCode).toBe(0);
    const r = await runCliText([...ipc, '--output', join(file, 'x.json')]);
    expect(r).toEqual({ exitCode: 1, stdout: '', stderr: `iolab: --output: cannot write '${join(file, 'x.json')}': '${file}' is not a folder` });
    expect(readFileSync(file).length).toBe(1024);
  });

  it('a FIFO and /dev/null as --output: one line at once, left as they were, --force or not', async () => {
    const fifo = at('results.fifo');
    execFileSync('mkfifo', [fifo]);
    for (const [path, kind] of [[fifo, 'a FIFO (named pipe)'], ['/dev/null', 'a character device']]) {
      const before = fileState(path);
      for (const force of [[], ['--force']]) {
        // the timeout only ends a run that waits for a reader of the FIFO: a fixed iolab never meets it
        const r = await runCliText([...ipc, '--output', path, ...force], { timeout: 20_000 });
        expect(r).toEqual({ exitCode: 1, stdout: '', stderr: `iolab: --output: cannot write '${path}': it is ${kind}, not a regular file; left untouched` });
      }
      expect(fileState(path)).toEqual(before);
    }
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

describe('an existing file, a symlink, the run\'s own files', () => {
  it('an existing file (0444 too) is refused without --force; --force replaces it whole, keeping its mode', async () => {
    for (const mode of [0o644, 0o444]) {
      const out = at(`existing-${mode.toString(8)}.json`);
      writeFileSync(out, 'keep me\n');
      chmodSync(out, mode);
      const before = fileState(out);
      const r = await runCliText([...ipc, '--output', out]);
      expect(r).toEqual({ exitCode: 1, stdout: '', stderr: `iolab: --output: cannot write '${out}': it exists (--force replaces it)` });
      expect(fileState(out)).toEqual(before);
      const forced = await runCliText([...ipc, '--output', out, '--force']);
      expect(forced.exitCode).toBe(0);
      expect(JSON.parse(readFileSync(out, 'utf8')).rows.length).toBeGreaterThan(0);
      expect(statSync(out).mode & 0o7777).toBe(mode);
    }
    expect(readdirSync(tmp.path).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('a symlink is refused without --force; --force replaces the link, never its target', async () => {
    const target = at('link-target.txt');
    writeFileSync(target, 'keep me');
    const link = at('link.json');
    symlinkSync(target, link);
    const r = await runCliText([...ipc, '--output', link]);
    expect(r).toEqual({ exitCode: 1, stdout: '', stderr: `iolab: --output: cannot write '${link}': it is a symlink to '${target}' ` +
      '(--force replaces the link itself, never its target)' });
    expect((await runCliText([...ipc, '--output', link, '--force'])).exitCode).toBe(0);
    expect(lstatSync(link).isFile()).toBe(true);
    expect(readFileSync(target, 'utf8')).toBe('keep me');
  });

  it('killed at the first unlink after its run: the results file is whole and no temp name is left beside it', async () => {
    // strace kills iolab as it enters unlink. The file used to get its name in two steps (link,
    // then unlink of the temp name), so a kill between them left both names, and a next run
    // without --force was refused ("it exists"). One renameat2 leaves one name, whenever killed.
    const out = at('killed-at-unlink.json');
    const [file, args] = iolabArgv([...ipc, '--output', out]);
    const r = await execa('strace', ['-f', '-qq', '-o', '/dev/null', '-e', 'trace=unlink,unlinkat',
      '-e', 'inject=unlink,unlinkat:signal=KILL', file, ...args], { reject: false });
    expect(readdirSync(tmp.path).filter((f) => f.startsWith('.killed-at-unlink.json.iolab-')), `${r.stdout}\n${r.stderr}`).toEqual([]);
    expect(JSON.parse(readFileSync(out, 'utf8')).rows.length, r.stderr).toBeGreaterThan(0);
  });

  it("fio's log files (write_lat_log): refused over an existing one, replaced with --force, its mode kept", async () => {
    // their names come from the job list, so they are checked after the other paths; --force
    // once failed on them with an internal error (what replacing needs was not loaded for them)
    const log = at('lt_lat.1.log');
    writeFileSync(log, 'old\n');
    chmodSync(log, 0o640);
    const job = ['bench', 'iops', '--name=lt', `--filename=${at('lt.dat')}`, '--size=256k', '--rw=read', '--bs=4k', '--ioengine=psync',
      `--write_lat_log=${at('lt')}`];
    const refused = await runCliText(job);
    expect(refused.exitCode, refused.stderr).toBe(1);
    expect(refused.stderr).toContain(`'${log}': it exists (--force replaces it)`);
    expect(readFileSync(log, 'utf8')).toBe('old\n');
    const forced = await runCliText([...job, '--force']);
    expect(forced.exitCode, forced.stderr).toBe(0);
    expect(readFileSync(log, 'utf8')).toMatch(/^\d+, \d+, 0, 4096/);
    expect(statSync(log).mode & 0o777).toBe(0o640);
  });

  it('a file the run reads or writes is always refused, --force or not: by its name, a hard link, a job file\'s filename=', async () => {
    const data = at('userdata.img');
    writeFileSync(data, randomBytes(1 << 20));
    const hard = at('userdata-link.img');
    linkSync(data, hard);
    const job = at('read.fio');
    writeFileSync(job, `[reader]\nfilename=${data}\nrw=read\nioengine=psync\nnumber_ios=16\n`);
    const other = at('other.json');
    symlinkSync('.', at('via'));
    expect((await runCliText([...ipc, '--output', other])).exitCode).toBe(0);
    const iops = ['bench', 'iops', '--filename', data, '--rw', 'read', '--ioengine', 'psync', '--number_ios', '16'];
    const latency = ['bench', 'latency', '--engine', 'sync', '--count', '4', '--no-direct', '--infile', data, '--outfile', at('lat-out.dat')];
    const same = (option: string, path: string, other: string, otherPath: string) =>
      `iolab: ${option}: '${path}' is the same file as ${other} '${otherPath}' of this run; name another file (--force does not change this)`;
    const cases: [string[], string][] = [
      [[...iops, '--output', data], same('--output', data, '--filename', data)],
      [[...iops, '--output', hard], same('--output', hard, '--filename', data)],
      [[...latency, '--output', data], same('--output', data, '--infile', data)],
      [[...latency, '--output', at('lat-out.dat')], same('--output', at('lat-out.dat'), '--outfile', at('lat-out.dat'))],
      // a file not there yet, named through a symlinked folder: the same absolute path once the folder is resolved
      [[...latency, '--output', join(at('via'), basename(at('lat-out.dat')))], same('--output', join(at('via'), basename(at('lat-out.dat'))), '--outfile', at('lat-out.dat'))],
      [['bench', 'iops', job, '--output', job], same('--output', job, 'job file', job)],
      [['report', other, '-o', other], same('-o', other, 'input', other)],
    ];
    const before = [data, job, other].map(fileState);
    for (const [args, line] of cases) {
      for (const force of [[], ['--force']]) {
        expect(await runCliText([...args, ...force]), args.join(' ')).toEqual({ exitCode: 1, stdout: '', stderr: line });
      }
    }
    // a job file's filename= is known once the job file is read: without --force the existing
    // file is refused first, with it the same file
    const viaJob = ['bench', 'iops', job, '--output', hard];
    expect(await runCliText(viaJob)).toEqual({ exitCode: 1, stdout: '', stderr: `iolab: --output: cannot write '${hard}': it exists (--force replaces it)` });
    expect(await runCliText([...viaJob, '--force'])).toEqual({ exitCode: 1, stdout: '', stderr: same('--output', hard, '--filename', data) });
    expect([data, job, other].map(fileState)).toEqual(before);
    expect(existsSync(at('lat-out.dat'))).toBe(false);
  }, 120_000);

  it('a job file\'s included files are inputs too: neither --output nor a job\'s filename= writes one, --force or not', async () => {
    const common = at('common.fio');
    writeFileSync(common, 'ioengine=psync\nsize=64k\n');
    const nested = at('nested.fio');
    writeFileSync(nested, `include ${common}\n`);
    const job = at('includes.fio');
    writeFileSync(job, `[global]\ninclude nested.fio\n[reader]\nfilename=${at('inc-data.img')}\nrw=read\nnumber_ios=16\n`);
    const writer = at('writes-include.fio');
    writeFileSync(writer, `[global]\ninclude ${common}\n[writer]\nfilename=${common}\nrw=write\nnumber_ios=16\n`);
    const same = (option: string, path: string, where: string, included: string) =>
      `iolab: ${option}: '${path}' is the same file as the include at ${where} '${included}' of this run; name another file (--force does not change this)`;
    const before = [common, nested, job, writer].map(fileState);
    const cases: [string[], string][] = [
      [['bench', 'iops', job, '--output', common, '--force'], same('--output', common, `${nested}:1`, common)],
      [['bench', 'iops', job, '--output', nested, '--force'], same('--output', nested, `${job}:2`, join(tmp.path, 'nested.fio'))],
      [['bench', 'iops', writer, '--force'], same('--filename', common, `${writer}:2`, common)],
      [['bench', 'iops', job, '--filename', common, '--rw', 'write', '--force'], same('--filename', common, `${nested}:1`, common)],
    ];
    for (const [args, line] of cases) expect(await runCliText(args), args.join(' ')).toEqual({ exitCode: 1, stdout: '', stderr: line });
    expect([common, nested, job, writer].map(fileState)).toEqual(before);
    expect(existsSync(at('inc-data.img'))).toBe(false);
  }, 60_000);

  it('- is stdout: the JSON instead of the table, no file named -; an empty name is refused', async () => {
    const r = await runCliText([...ipc, '--output', '-'], { cwd: tmp.path });
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout).rows.length).toBeGreaterThan(0);
    expect(existsSync(at('-'))).toBe(false);
    for (const spelled of [['--output', ''], ['--output=']]) {
      expect(await runCliText([...ipc, ...spelled], { cwd: tmp.path }))
        .toEqual({ exitCode: 1, stdout: '', stderr: 'iolab: --output: the name is empty; name a file, or - for stdout' });
    }
  });
});

describe('--output of every benchmark', () => {
  it('a folder as --output is refused before any of them runs', async () => {
    const folder = at('every-folder');
    mkdirSync(folder);
    const line = `iolab: --output: cannot write '${folder}': it is a folder; name a file`;
    for (const args of [
      ['bench', 'iops', '--filename', at('every.dat'), '--size', '1m', '--number_ios', '16', '--ioengine', 'psync'],
      ['bench', 'echo', '--clients', '2', '--duration', '1', '--rounds', '1', '--servers', 'epoll', '--generators', 'epoll'],
      ['bench', 'api', '--rounds', '1', '--duration', '5ms', '--size', '64k'],
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
