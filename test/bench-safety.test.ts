// User data through the storage commands as a user meets them: the mark that makes a file
// iolab's cannot be fooled (replaced contents, a copy with the xattr), symlinks are never
// written through, gen checks space and writes under a temp name, and Ctrl-C (SIGINT) ends a
// run with the finished rows, the partial one marked, nothing half-made left, exit 130.
import { afterAll, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from './support/cli.js';
import { shortTempDir } from './support/temp.js';

const dir = shortTempDir('iolab-safe-');
afterAll(() => dir.cleanup());
const file = (name: string) => join(dir.path, name);
async function cli(args: string[]) {
  const r = await runCli(args);
  return { exitCode: r.exitCode, stdout: String(r.stdout ?? ''), stderr: String(r.stderr ?? '') };
}
const write = (f: string, ...extra: string[]) =>
  cli(['bench', 'iops', '--filename', f, '--size', '1m', '--rw', 'randwrite', '--ioengine', 'psync', '--number_ios', '20', ...extra]);

/** Starts iolab, waits until `ready` holds, sends SIGINT after delayMs, resolves with the result. */
async function interrupt(args: string[], ready: () => boolean, delayMs: number) {
  const child = runCli(args);
  const t0 = Date.now();
  while (!ready() && Date.now() - t0 < 60_000) await new Promise((r) => setTimeout(r, 20));
  await new Promise((r) => setTimeout(r, delayMs));
  child.kill('SIGINT');
  const r = await child;
  return { exitCode: r.exitCode, stdout: String(r.stdout ?? ''), stderr: String(r.stderr ?? '') };
}

describe.concurrent('the mark that makes a file iolab\'s', { timeout: 120_000 }, () => {
  it('is not fooled by replaced contents', async () => {
    const f = file('reuse.dat');
    expect((await write(f)).exitCode).toBe(0);
    expect((await write(f)).exitCode).toBe(0);  // iolab's own file: reused
    writeFileSync(f, randomBytes(1 << 20));  // as `head -c 1M /dev/urandom > reuse.dat` does
    const before = readFileSync(f);
    const r = await write(f);
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toMatch(/^iolab: refusing to write into '.*reuse\.dat': iolab did not create it, or it changed since \(use --force to allow\)$/);
    expect(readFileSync(f).equals(before)).toBe(true);
  });

  it('does not follow a copy made with cp --preserve=xattr', async () => {
    const f = file('orig.dat');
    expect((await write(f)).exitCode).toBe(0);
    const copy = file('copy.dat');
    await execa('cp', ['--preserve=xattr', f, copy]);
    const r = await write(copy);
    expect(r.stderr).toMatch(/^iolab: refusing to write into '.*copy\.dat': iolab did not create it, or it changed since/);
    expect((await write(copy, '--force')).exitCode).toBe(0);
  });

  it('notices contents replaced with the same size and mtime: the sampled layout pattern is gone', async () => {
    const f = file('same.dat');
    expect((await cli(['bench', 'iops', '--filename', f, '--size', '1m', '--ioengine', 'psync', '--number_ios', '5'])).exitCode).toBe(0);
    await execa('touch', ['-r', f, `${f}.times`]);
    const fd = openSync(f, 'r+');
    writeSync(fd, Buffer.alloc(1 << 20));  // rewritten in place, as dd conv=notrunc does
    closeSync(fd);
    await execa('touch', ['-r', `${f}.times`, f]);
    expect((await write(f)).stderr).toMatch(/^iolab: refusing to write into/);
  });
});

describe.concurrent('symlinks', { timeout: 120_000 }, () => {
  it('bench iops refuses to write through one; --force replaces the link, never the target', async () => {
    const target = file('target.dat');
    writeFileSync(target, Buffer.alloc(1 << 20, 7));
    const link = file('link.dat');
    symlinkSync(target, link);
    const r = await write(link);
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toBe(`iolab: refusing to write through symlink '${link}' -> '${target}' (use --force to replace the link with a new file; its target is never written)`);
    expect((await write(link, '--force')).exitCode).toBe(0);
    expect(lstatSync(link).isFile()).toBe(true);
    expect(readFileSync(target).every((b) => b === 7)).toBe(true);
  });

  it('gen follows the same rule', async () => {
    const target = file('gen-target.txt');
    writeFileSync(target, 'keep me');
    const link = file('gen-link.txt');
    symlinkSync(target, link);
    const r = await cli(['gen', link, '--size', '4k']);
    expect(r.stderr).toBe(`iolab: refusing to write through symlink '${link}' -> '${target}' (use --force to replace the link with a new file; its target is never written)`);
    expect((await cli(['gen', link, '--size', '4k', '--force'])).exitCode).toBe(0);
    expect(lstatSync(link).isFile()).toBe(true);
    expect(statSync(link).size).toBe(4096);
    expect(readFileSync(target, 'utf8')).toBe('keep me');
  });
});

describe.concurrent('gen', { timeout: 120_000 }, () => {
  it('checks free space before writing a byte', async () => {
    const f = file('huge.txt');
    const r = await cli(['gen', f, '--size', '100t']);
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toMatch(/^iolab: not enough free space for '.*huge\.txt' in .*: [\d.]+ \w+ free, 100 TiB needed$/);
    expect(existsSync(f)).toBe(false);
    expect(readdirSync(dir.path).filter((n) => n.includes('huge'))).toEqual([]);
  });

  it('Ctrl-C leaves no file under the user\'s name and no temp file', async () => {
    const f = file('big.txt');
    const temp = () => readdirSync(dir.path).some((n) => n.startsWith('.big.txt.iolab-'));
    const r = await interrupt(['gen', f, '--size', '4g'], temp, 100);
    expect(r.exitCode).toBe(130);
    expect(r.stderr).toBe(`iolab: gen interrupted: nothing written to '${f}' (the partial temp file is removed)`);
    expect(existsSync(f)).toBe(false);
    expect(temp()).toBe(false);
  });
});

describe.concurrent('Ctrl-C in bench iops', { timeout: 120_000 }, () => {
  it('prints the finished rows and the partial one, and exits 130', async () => {
    const f = file('int.dat');
    const r = await interrupt(['bench', 'iops', '--filename', f, '--size', '4m', '--rw', 'randread', '--ioengine', 'psync,libaio',
      '--runtime', '2s', '--time_based'], () => existsSync(f), 3000);
    expect(r.exitCode).toBe(130);
    const lines = r.stdout.trim().split('\n');
    expect(lines[2]).toMatch(/^psync\s+[\d,]+\s/);
    expect(lines[3]).toMatch(/^libaio \(partial\)\s+[\d,]+\s/);
    expect(lines[4]).toBe('interrupted: the row marked (partial) stopped early');
  });

  it.runIf(process.getuid?.() === 0)('bench latency: the partial row, and a trailer saying the run was cut short', async () => {
    const infile = file('lat-in.txt');
    expect((await runCli(['gen', infile, '--size', '64k'])).exitCode).toBe(0);
    // 100,000,000 reads from the page cache: a read phase far longer than the wait below. Its
    // writes would need 400 GB, which bench latency checks before the first read: the --outfile
    // goes on a tmpfs that says it has 1 TiB (it takes memory only as it is written, never here)
    const roomy = file('roomy');
    mkdirSync(roomy);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1t', 'iolab-test', roomy]);
    let r: Awaited<ReturnType<typeof interrupt>>;
    try {
      r = await interrupt(['bench', 'latency', '--engine', 'sync,psync', '--count', '100000000', '--no-direct', '--infile', infile,
        '--outfile', join(roomy, 'lat-out.dat')], () => true, 1500);
      expect(readdirSync(roomy)).toEqual([]);
    } finally {
      execFileSync('umount', [roomy]);
    }
    expect(r.exitCode, r.stderr).toBe(130);
    const lines = r.stdout.trim().split('\n');
    // its writes never ran: no figures for them, not 0ns
    expect(lines[2]).toMatch(/^sync \(partial\)\s+\S+\s+\S+\s+\S+\s+-\s+-\s+-$/);
    expect(lines.at(-1)).toBe('interrupted (SIGINT): the row marked (partial) stopped early; one engine after it did not run');
  });

  it('removes the file it was laying out, and says so', async () => {
    const f = file('layout.dat');
    const temp = () => readdirSync(dir.path).some((n) => n.startsWith('.layout.dat.iolab-'));
    const r = await interrupt(['bench', 'iops', '--filename', f, '--size', '8g', '--ioengine', 'psync'], temp, 200);
    expect(r.exitCode).toBe(130);
    expect(r.stderr).toBe(`iolab: interrupted while laying out '${f}': what this run wrote is removed`);
    expect(existsSync(f)).toBe(false);
    expect(temp()).toBe(false);
  });
});
