// An engine that cannot run here (io_uring refused by a seccomp filter, as Docker's default
// profile does) gets an `unavailable: <reason>` row and the other engines still run.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { join } from 'node:path';
import { buildSeccompRefuser, shortTempDir } from './support/temp.js';
import { cliPath } from './support/cli.js';

let dir: ReturnType<typeof shortTempDir>;
let refuse: string;

beforeAll(() => {
  dir = shortTempDir('iolab-unavail-');
  refuse = buildSeccompRefuser(dir.path);
});
afterAll(() => dir.cleanup());

const iopsRefused = (...args: string[]) =>
  execa(refuse, ['EPERM', process.execPath, cliPath, 'bench', 'iops', '--filename', join(dir.path, 'f.dat'),
    '--size', '1m', '--runtime', '200ms', ...args], { reject: false });

describe('bench iops with io_uring refused', { timeout: 120_000 }, () => {
  it('says unavailable for io_uring and runs psync', async () => {
    const r = await iopsRefused('--ioengine', 'psync,io_uring');
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines[2]).toMatch(/^psync\s+[\d,]+\s/);
    expect(lines[3]).toMatch(/^io_uring\s+unavailable: io_uring_setup refused: Operation not permitted$/);
  });

  it('carries the reason in JSON and exits 1 when no engine could run', async () => {
    const r = await iopsRefused('--ioengine', 'io_uring', '--output-format', 'json');
    expect(r.exitCode).toBe(1);
    const job = JSON.parse(r.stdout).jobs[0];
    expect(job.jobname).toBe('io_uring');
    expect(job.error).toBe(1);
    expect(job.unavailable).toBe('io_uring_setup refused: Operation not permitted');
  });
});
