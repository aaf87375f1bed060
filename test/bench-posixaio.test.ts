// posixaio waits as fio's posixaio does: it reaps every finished I/O and, while none is, sleeps in
// glibc's aio_suspend on at most 8 of the I/Os in flight (the lowest slots). Suspending on the
// whole in-flight list holds glibc's AIO lock long enough to starve the helper thread that runs
// the requests. A uprobe on glibc's aio_suspend counts the entries of every call; that needs root
// and bpftrace (a visible skip otherwise).
import { afterAll, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../src/native.js';
import { iolabArgv } from '../src/spawn-iolab.js';
import { runCli } from './support/cli.js';
import { shortTempDir } from './support/temp.js';

/** Tools run without the sanitizer runtime that the ASan suite preloads into node's children. */
const plainEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'LD_PRELOAD'));
const dir = shortTempDir('iolab-paio-');
afterAll(() => dir.cleanup());
const bpftrace = (await execa('bpftrace', ['--version'], { reject: false, env: plainEnv, extendEnv: false }).catch(() => ({ exitCode: 1 }))).exitCode === 0;
const root = process.getuid?.() === 0;
/** The libc this node runs on (aio_suspend lives there since glibc 2.34). */
const libc = readFileSync('/proc/self/maps', 'utf8').split('\n').map((l) => l.split(/\s+/)[5]).find((p) => /\/libc\.so\.6$/.test(p ?? ''));

describe('posixaio', { timeout: 120_000 }, () => {
  it.runIf(bpftrace && root && libc !== undefined)('sleeps in aio_suspend on at most 8 in-flight I/Os at qd32, as fio does', async () => {
    const file = join(dir.path, 'p.dat');
    const args = ['bench', 'iops', '--filename', file, '--size', '16m', '--ioengine', 'posixaio', '--iodepth', '32',
      '--rw', 'randread', '--direct=1', '--number_ios', '4000'];
    expect((await runCli([...args.slice(0, 6), '--ioengine', 'psync', '--number_ios', '1'])).exitCode).toBe(0);  // lays the file out
    // only this command's process (bpftrace -c: cpid) counts: other tests run posixaio jobs too
    const script = `uprobe:${libc}:aio_suspend /pid == cpid/ { @calls = count(); @most = max(arg1); }`;
    const [node, argv] = iolabArgv(args);
    const preload = process.env.LD_PRELOAD ? `/usr/bin/env LD_PRELOAD=${process.env.LD_PRELOAD} ` : '';
    const r = await execa('bpftrace', ['-c', `${preload}${node} ${argv.join(' ')}`, '-e', script],
      { reject: false, all: true, cwd: projectRoot, env: plainEnv, extendEnv: false });
    const out = String(r.all);
    expect(out).toMatch(/^posixaio\s+\d/m);  // the job ran
    const calls = Number(/^@calls: (\d+)$/m.exec(out)?.[1] ?? 0);
    const most = Number(/^@most: (\d+)$/m.exec(out)?.[1] ?? 0);
    expect(calls, out).toBeGreaterThan(0);
    expect(most, out).toBeGreaterThan(0);
    expect(most, out).toBeLessThanOrEqual(8);
  });
});
