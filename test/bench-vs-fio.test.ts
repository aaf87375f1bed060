// --vs-fio gives fio the user's own job (the job file as it is, the command line's options as
// typed), never iolab's reading of it; fio runs with no shell between and dies with iolab, even
// when iolab is SIGKILLed; Ctrl-C while fio runs stops both, and the run is partial (exit 130).
import { describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { iolabArgv, runCliText } from './support/cli.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { childrenOf, newProcessTag, processesTagged, processTagVariable, waitFor } from './support/procs.js';
import { shortTempDir } from './support/temp.js';

const fio = (await execa('fio', ['--version'], { reject: false }).catch(() => ({ exitCode: 1 }))).exitCode === 0;
const dir = shortTempDir('iolab-vsfio-');
checkLeaksAfterAll(dir);
const file = (name: string) => join(dir.path, name);

/** The command name of a process (/proc/<pid>/comm), '' when it is gone. */
function comm(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}

/** fio's benchmark run under iolab (not its `fio --version` check), once it has started. */
function fioRunUnder(iolab: number): number | undefined {
  return childrenOf(iolab).find((pid) => {
    try {
      return comm(pid) === 'fio' && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('--output-format=json');
    } catch {
      return false;
    }
  });
}

/** Starts a --vs-fio run of seconds per side, tagged, and waits until fio's run is under way. */
async function untilFioRuns(name: string, seconds: number) {
  const tag = newProcessTag();
  const [cmd, argv] = iolabArgv(['bench', 'iops', '--filename', file(name), '--size', '1m', '--ioengine', 'psync',
    '--runtime', String(seconds), '--time_based', '--vs-fio', '--repeat', '1']);
  const child = execa(cmd, argv, { reject: false, env: { ...process.env, [processTagVariable]: tag } });
  const fioPid = await waitFor('fio under iolab', () => fioRunUnder(child.pid as number), 30_000);
  return { tag, child, fioPid };
}

describe.runIf(fio)('--vs-fio', { timeout: 300_000 }, () => {
  it('gives fio the job file as written: its comments, ${VAR}, aliases and groups are fio\'s to read', async () => {
    const job = file('vs.fio');
    writeFileSync(job, `[global]
filename=\${IOLAB_VS_FILE} ; the data file
size=1m
blocksize=8k
runtime=300ms
time_based

[reader]
readwrite=randread

[writer]
rw=write
`);
    const r = await runCliText(['bench', 'iops', job, '--vs-fio', '--repeat', '1', '--json'],
      { env: { ...process.env, IOLAB_VS_FILE: file('vs.dat') } });
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    const doc = JSON.parse(r.stdout);
    const [e] = doc.vs_fio.engines;
    // fio read the file itself: its JSON has the text after fio's own substitution, and two jobs in one group
    expect(e.fio_global_options).toEqual({ filename: file('vs.dat'), size: '1m', bs: '8k', runtime: '300ms' });
    expect(e.fio_jobs).toBe(2);
    expect(doc.jobs.map((j: any) => [j.jobname, j.groupid, j['job options'].rw, j['job options'].bs])).toEqual([
      ['reader', 0, 'randread', '8192'], ['writer', 0, 'write', '8192']]);
    expect(e.fio_iops).toBeGreaterThan(0);
    expect(e.ratio).toBeGreaterThan(0.1);
    expect(e.ratio).toBeLessThan(10);
  });

  it('a row per group, its reads and writes apart, as fio\'s groups are; fio\'s start-up left out of its CPU per I/O', async () => {
    const job = file('groups.fio');
    writeFileSync(job, `[global]
filename=${file('groups.dat')}
size=1m
runtime=200ms
time_based

[reader]
rw=randread

[writer]
rw=write

[after]
stonewall
rw=read
`);
    const r = await runCliText(['bench', 'iops', job, '--vs-fio', '--repeat', '1']);
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines.slice(2, 5).map((l) => l.split(/\s{2,}/)[0])).toEqual([
      'psync group 0 (reader, writer) read', 'psync group 0 (reader, writer) write', 'psync group 1 (after) read']);
    for (const line of lines.slice(2, 5)) expect(line).toMatch(/\s[\d,]+\s+[\d,]+\s+\d+\.\d\dx\s+[\d.]+us\s+[\d.]+us\s/);
    expect(lines[5]).toMatch(/^note: CPU\/IO is each side's process CPU over its jobs' I\/O; fio's main thread \(reading the job, laying files out, its report: [\d.]+(ns|us|ms|s) of CPU a run\) is left out/);
    const doc = JSON.parse((await runCliText(['bench', 'iops', job, '--vs-fio', '--repeat', '1', '--json'])).stdout);
    const [e] = doc.vs_fio.engines;
    expect(e.groups.map((g: any) => [g.group, g.direction, g.jobs])).toEqual([
      [0, 'read', ['reader', 'writer']], [0, 'write', ['reader', 'writer']], [1, 'read', ['after']]]);
    for (const g of e.groups) {
      expect(g.fio_iops).toBeGreaterThan(0);
      expect(g.ratio).toBeCloseTo(g.iolab_iops / g.fio_iops, 6);
    }
    // fio's clock calibration and job parsing cost its main thread CPU before any I/O
    expect(e.fio_startup_cpu_sec).toBeGreaterThan(0);
  });

  it('gives fio its own name for an engine iolab takes by another (posix_aio, uring)', async () => {
    for (const [typed, engine] of [['posix_aio', 'posixaio'], ['uring', 'io_uring']]) {
      const r = await runCliText(['bench', 'iops', '--filename', file('alias.dat'), '--size', '1m', '--ioengine', typed,
        '--runtime', '100ms', '--time_based', '--vs-fio', '--repeat', '1', '--json']);
      expect(r.stderr).toBe('');
      expect(r.exitCode).toBe(0);
      const [e] = JSON.parse(r.stdout).vs_fio.engines;
      expect(e.engine).toBe(engine);
      expect(e.fio_global_options.ioengine).toBe(engine);
      expect(e.fio_iops).toBeGreaterThan(0);
    }
  });

  it('SIGKILL while fio runs: fio, a child of iolab itself (no shell), dies with it', async () => {
    const { tag, child, fioPid } = await untilFioRuns('kill.dat', 6);
    expect(childrenOf(child.pid as number).map(comm).filter((c) => c !== 'fio')).not.toContain('bash');
    child.kill('SIGKILL');
    await child;
    // fio's own run would go on for 6 s: it is gone well before (the signal comes once the
    // kernel has torn iolab down, which under ASan, with its shadow memory, takes a second or two)
    await waitFor('fio to die with iolab', () => comm(fioPid) === '', 4000);
    expect(processesTagged(tag)).toEqual([]);
  });

  it('Ctrl-C while fio runs: fio stops too, iolab prints what it has, marked partial, and exits 130', async () => {
    const { tag, child } = await untilFioRuns('int.dat', 4);
    const stopped = Date.now();
    child.kill('SIGINT');
    const r = await child;
    expect(Date.now() - stopped, 'stops within a second, not at the end of fio\'s 4 s').toBeLessThan(2500);
    expect(r.exitCode).toBe(130);
    expect(String(r.stdout)).toMatch(/\npsync \(partial\)\s/);
    // the header claims no round it did not finish, and a trailer says the run was cut short
    expect(String(r.stdout)).toMatch(/^iolab bench iops --vs-fio \(fio-[\d.]+, no round finished, of 1 asked: cut short\): /);
    expect(String(r.stdout)).toMatch(/\ninterrupted \(SIGINT\): the rows hold the rounds that finished; a row marked \(partial\) lost a run cut short$/);
    expect(processesTagged(tag)).toEqual([]);
  });

  it('--repeat 2 says its figures are the mean of 2 rounds, not a median', async () => {
    const r = await runCliText(['bench', 'iops', '--filename', file('two.dat'), '--size', '1m', '--ioengine', 'psync',
      '--runtime', '100ms', '--time_based', '--vs-fio', '--repeat', '2']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/^iolab bench iops --vs-fio \(fio-[\d.]+, mean of 2 rounds\): /);
  });
});

describe('--vs-fio when fio refuses the job', () => {
  it('shows fio\'s whole refusal, not its last line', async () => {
    // a stand-in fio on PATH: it knows its version and refuses every job, in two lines
    const bin = join(dir.path, 'fake-fio');
    mkdirSync(bin);
    writeFileSync(join(bin, 'fio'), '#!/bin/sh\nif [ "$1" = --version ]; then echo fio-3.33; exit 0; fi\n' +
      'echo "fio: bad option value for rw" >&2\necho "fio: job global dropped" >&2\nexit 1\n', { mode: 0o755 });
    const r = await runCliText(['bench', 'iops', '--filename', file('refused.dat'), '--size', '1m', '--ioengine', 'psync',
      '--runtime', '100ms', '--vs-fio', '--repeat', '1'], { env: { PATH: `${bin}:${process.env.PATH}` } });
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toBe('iolab: fio failed: fio: bad option value for rw / fio: job global dropped');
  });
});
