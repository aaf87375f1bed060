// iolab's engines take the kernel path fio's take for the same job, seen with bpftrace (root and
// bpftrace needed; a visible skip otherwise; fio too for the comparisons):
//  - posixaio reaps every finished I/O and, while none is, sleeps in glibc's aio_suspend on at most
//    8 of the I/Os in flight (the lowest slots), as fio's does. Suspending on the whole in-flight
//    list holds glibc's AIO lock long enough to starve the helper thread that runs the requests.
//  - io_uring reads go inline or through io-wq as fio's do: a tmpfs file has no nowait reads, so
//    each read is handed to an io-wq worker; a cached file on a disk file system reads inline.
import { afterAll, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../src/native.js';
import { iolabArgv, runCli } from './support/cli.js';
import { shortTempDir } from './support/temp.js';

/** Tools run without the sanitizer runtime that the ASan suite preloads into node's children. */
const plainEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'LD_PRELOAD'));
const dir = shortTempDir('iolab-path-');
afterAll(() => dir.cleanup());
const bpftrace = (await execa('bpftrace', ['--version'], { reject: false, env: plainEnv, extendEnv: false }).catch(() => ({ exitCode: 1 }))).exitCode === 0;
const root = process.getuid?.() === 0;
/** fio's binary by its full path (bpftrace -c refuses a name that two PATH entries resolve to). */
const fioPath = (await execa('sh', ['-c', 'command -v fio'], { reject: false }).catch(() => ({ stdout: '' }))).stdout?.toString().trim();
const fio = fioPath !== undefined && fioPath !== '' && (await execa(fioPath, ['--version'], { reject: false }).catch(() => ({ exitCode: 1 }))).exitCode === 0;
/** The libc this node runs on (aio_suspend lives there since glibc 2.34). */
const libc = readFileSync('/proc/self/maps', 'utf8').split('\n').map((l) => l.split(/\s+/)[5]).find((p) => /\/libc\.so\.6$/.test(p ?? ''));

/** bpftrace running `command` (bpftrace -c): the script counts only that process (pid == cpid),
 * so other tests' jobs running at the same time do not count. Resolves to what bpftrace printed. */
async function traced(script: string, command: string): Promise<string> {
  const r = await execa('bpftrace', ['-c', command, '-e', script], { reject: false, all: true, cwd: projectRoot, env: plainEnv, extendEnv: false });
  return String(r.all);
}

/** `iolab ...args` as one command line for bpftrace -c (with the ASan suite's preload, if any). */
function iolabCommand(args: string[]): string {
  const [node, argv] = iolabArgv(args);
  const preload = process.env.LD_PRELOAD ? `/usr/bin/env LD_PRELOAD=${process.env.LD_PRELOAD} ` : '';
  return `${preload}${node} ${argv.join(' ')}`;
}

const count = (out: string, name: string) => Number(new RegExp(`^@${name}: (\\d+)$`, 'm').exec(out)?.[1] ?? 0);

describe('the kernel path', { timeout: 120_000 }, () => {
  it.runIf(bpftrace && root && libc !== undefined)('posixaio sleeps in aio_suspend on at most 8 in-flight I/Os at qd32, as fio does', async () => {
    const file = join(dir.path, 'p.dat');
    const args = ['bench', 'iops', '--filename', file, '--size', '16m', '--ioengine', 'posixaio', '--iodepth', '32',
      '--rw', 'randread', '--direct=1', '--number_ios', '4000'];
    expect((await runCli([...args.slice(0, 6), '--ioengine', 'psync', '--number_ios', '1'])).exitCode).toBe(0);  // lays the file out
    const script = `uprobe:${libc}:aio_suspend /pid == cpid/ { @calls = count(); @most = max(arg1); }`;
    const out = await traced(script, iolabCommand(args));
    expect(out).toMatch(/^posixaio\s+\d/m);  // the job ran
    const calls = count(out, 'calls');
    const most = count(out, 'most');
    expect(calls, out).toBeGreaterThan(0);
    expect(most, out).toBeGreaterThan(0);
    expect(most, out).toBeLessThanOrEqual(8);
  });

  it.runIf(bpftrace && root && fio)('io_uring reads inline or through io-wq as fio\'s io_uring does, on tmpfs and on a cached disk file', async () => {
    const shm = `/dev/shm/iolab-path-${process.pid}-${Date.now()}.dat`;
    const files = [shm, join(dir.path, 'cached.dat')];
    try {
      const script = 'tracepoint:io_uring:io_uring_submit_req /pid == cpid/ { @submitted = count(); } ' +
        'tracepoint:io_uring:io_uring_queue_async_work /pid == cpid/ { @async = count(); }';
      for (const f of files) {
        const job = ['--filename', f, '--size', '8m', '--rw', 'randread', '--bs', '4k', '--iodepth', '8', '--invalidate=0'];
        // lays the file out; a buffered pass leaves it in the page cache
        expect((await runCli(['bench', 'iops', ...job.slice(0, 4), '--rw', 'read', '--bs', '1m', '--ioengine', 'psync'])).exitCode).toBe(0);
        const ours = await traced(script, iolabCommand(['bench', 'iops', ...job, '--ioengine', 'io_uring', '--number_ios', '2000']));
        const theirs = await traced(script, `${fioPath} --name=path --thread --output-format=json --filename=${f} --size=8m ` +
          '--rw=randread --bs=4k --iodepth=8 --invalidate=0 --ioengine=io_uring --number_ios=2000');
        expect(count(ours, 'submitted'), ours).toBeGreaterThanOrEqual(2000);
        expect(count(theirs, 'submitted'), theirs).toBeGreaterThanOrEqual(2000);
        const share = (out: string) => Math.round(count(out, 'async') / count(out, 'submitted'));  // 0: inline, 1: io-wq
        expect(share(ours), `${f}: ${ours}`).toBe(share(theirs));
      }
    } finally {
      rmSync(shm, { force: true });
    }
  });
});
