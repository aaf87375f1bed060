// Nothing under /dev, /proc or /sys is written or replaced, --force or not, and `-o /dev/stdout`
// (/dev/fd/1, /proc/self/fd/1; /dev/stderr) writes to that stream as other tools do:
// `report r.json -o /dev/stdout --force` once turned the system's /dev/stdout link into a 63 KB
// HTML file. Each run here happens in a mount namespace of its own whose /dev is a scratch tmpfs
// holding the links and devices a run needs, so a run that did replace /dev/stdout (this test
// failing) replaces only that copy, never the machine's.
import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { cliPath, runCliText } from './support/cli.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';

const tmp = shortTempDir('iolab-kfs-');
checkLeaksAfterAll(tmp);
const skip = process.geteuid?.() !== 0 ? 'a mount namespace needs root' : undefined;

const scratchDev = `set -e
old=$(mktemp -d "$STATE/old-XXXXXX")
mount --bind /dev "$old"
mount -t tmpfs -o size=1m,mode=755 iolab-scratch-dev /dev
for n in null zero full random urandom; do touch /dev/$n; mount --bind "$old/$n" /dev/$n; done
mkdir /dev/shm && mount --bind "$old/shm" /dev/shm
ln -s /proc/self/fd /dev/fd; ln -s /proc/self/fd/0 /dev/stdin; ln -s /proc/self/fd/1 /dev/stdout; ln -s /proc/self/fd/2 /dev/stderr
set +e
"$@" > "$STATE/out" 2> "$STATE/err"
echo $? > "$STATE/rc"
for s in stdout stderr; do readlink /dev/$s || stat -c %F /dev/$s; done > "$STATE/links"
`;

/** `iolab ...args` with /dev a scratch copy: its exit, stdout, stderr and what /dev/stdout and
 * /dev/stderr are afterwards (their link targets, or the kind of file they became). */
async function inScratchDev(args: string[]) {
  const state = mkdtempSync(join(tmp.path, 'run-'));
  const r = await execa('unshare', ['--mount', '--propagation', 'private', '/bin/sh', '-c', scratchDev, 'sh', process.execPath, cliPath, ...args],
    { reject: false, env: { STATE: state }, timeout: 60_000 });
  expect(r.exitCode, String(r.stderr)).toBe(0);
  const read = (name: string) => readFileSync(join(state, name), 'utf8');
  return { exitCode: Number(read('rc')), stdout: read('out'), stderr: read('err'), links: read('links').trim().split('\n') };
}

const intact = ['/proc/self/fd/1', '/proc/self/fd/2'];
const results = () => {
  const path = join(tmp.path, `api-${Math.random().toString(16).slice(2)}.json`);
  writeFileSync(path, JSON.stringify({ rows: [{ contender: 'iolab.readvSync', inflight: 1, opsPerSec: 1000 }], ratios: [] }));
  return path;
};
const ipc = ['bench', 'ipc', '--transports', 'pipe', '--sizes', '4k', '--mode', 'throughput', '--duration', '50ms', '--rounds', '1'];

describe.skipIf(skip !== undefined)(`/dev, /proc and /sys${skip ? ` (skipped: ${skip})` : ''}`, () => {
  it.each([[['--force']], [[]]])('report -o /dev/stdout %j: the page on stdout, the link left as it was', async (force) => {
    const r = await inScratchDev(['report', results(), '-o', '/dev/stdout', ...force]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^<!doctype html>/i);
    expect(r.stdout).toMatch(/<\/html>\n?$/);
    expect(r.links).toEqual(intact);
  });

  it('report -o /dev/stderr --force: the page on stderr', async () => {
    const r = await inScratchDev(['report', results(), '-o', '/dev/stderr', '--force']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/^<!doctype html>/i);
    expect(r.links).toEqual(intact);
  });

  it.each(['/dev/stdout', '/dev/fd/1', '/proc/self/fd/1'])('a benchmark\'s --output %s --force: its JSON on stdout, as --output - prints it', async (path) => {
    const r = await inScratchDev([...ipc, '--output', path, '--force']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).rows.length).toBeGreaterThan(0);
    expect(r.links).toEqual(intact);
  });

  it('--output /dev/stderr: the table on stdout, the JSON on stderr', async () => {
    const r = await inScratchDev([...ipc, '--output', '/dev/stderr', '--force']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^pipe\s+4 KiB/m);
    expect(r.stderr).toContain('"rows": [');
    expect(r.links).toEqual(intact);
  });

  it.each([
    [['writev', '/dev/stdout', 'x', '--force']], [['writev', '/dev/stdout', 'x', '--append']], [['gen', '/dev/stdout', '--size', '4k', '--force']],
  ])('%j: refused in one line, the link left as it was', async (args) => {
    const r = await inScratchDev(args);
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toMatch(/^iolab: '\/dev\/stdout' is in \/dev \(\w+\): iolab writes and replaces nothing there, --force or not\n?$/);
    expect(r.links).toEqual(intact);
  });

  it('a file under /proc, /dev/fd/N of another fd, a new name under /sys: refused, --force or not', async () => {
    expect(await runCliText(['writev', '/proc/self/comm', 'x', '--force']))
      .toEqual({ exitCode: 1, stdout: '', stderr: "iolab: '/proc/self/comm' is in /proc (proc): iolab writes and replaces nothing there, --force or not" });
    const r = await inScratchDev([...ipc, '--output', '/dev/fd/0', '--force']);
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toBe("iolab: --output: cannot write '/dev/fd/0': it is in /proc (proc), where iolab replaces nothing, --force or not\n");
    expect((await runCliText([...ipc, '--output', '/sys/iolab-new.json', '--force'])).stderr)
      .toBe("iolab: --output: cannot write '/sys/iolab-new.json': iolab creates no file in /sys (sysfs)");
  });
});
