// fio job files and command lines mean what fio 3.33 means: jobs without a stonewall at the
// same time, groupids from stonewall and new_group, group_reporting summing a group, inline
// comments, ${VAR} and fio's $pagesize/$mb_memory/$ncpus, filename lists, fio's aliases, sizes
// as fio reads them (4KiB refused), each --name a job, the command line's options under the job
// file's, numjobs' files of their own, number_ios after the ramp, fio's jobname and "global
// options". fio itself is the oracle in test/fio-differential.test.ts; these pin each rule.
import { describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { totalmem } from 'node:os';
import { join } from 'node:path';
import { native } from '../src/native.js';
import { execa } from 'execa';
import { runCliText } from './support/cli.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';

const dir = shortTempDir('iolab-fiojobs-');
checkLeaksAfterAll(dir);
let n = 0;
/** A folder of its own for a test, and a job file in it. */
function place(jobFile?: string): { cwd: string; job: string } {
  const cwd = join(dir.path, `t${n++}`);
  mkdirSync(cwd);
  const job = join(cwd, 'job.fio');
  if (jobFile !== undefined) writeFileSync(job, jobFile);
  return { cwd, job };
}
const iops = (args: string[], cwd: string, env: Record<string, string> = {}) =>
  runCliText(['bench', 'iops', ...args], { cwd, env: { ...process.env, ...env } });
async function json(args: string[], cwd: string, env: Record<string, string> = {}) {
  const r = await iops([...args, '--json'], cwd, env);
  expect(r.stderr).toBe('');
  expect(r.exitCode).toBe(0);
  return JSON.parse(r.stdout);
}
const files = (cwd: string) => readdirSync(cwd).filter((f) => f !== 'job.fio').sort().map((f) => `${f} ${statSync(join(cwd, f)).size}`);
/** [start, end] of a job's measured time (fio's job_start, ms since the epoch, and job_runtime). */
const span = (j: any): [number, number] => [j.job_start, j.job_start + j.job_runtime];

describe.concurrent('jobs and groups', { timeout: 300_000 }, () => {
  it('runs a job file\'s jobs without a stonewall at the same time, as fio does; a stonewall job after them', async () => {
    const { cwd, job } = place('[global]\nfilename=shared.dat\nsize=1m\nruntime=1\ntime_based\n\n[reader]\nrw=read\n\n[writer]\nrw=write\n\n' +
      '[after]\nstonewall\nrw=randread\n');
    const doc = await json([job], cwd);
    const [reader, writer, after] = doc.jobs;
    expect(doc.jobs.map((j: any) => [j.jobname, j.groupid])).toEqual([['reader', 0], ['writer', 0], ['after', 1]]);
    const [r, w, a] = [span(reader), span(writer), span(after)];
    expect(Math.min(r[1], w[1]) - Math.max(r[0], w[0]), 'reader and writer overlap by most of their second').toBeGreaterThan(600);
    expect(a[0], 'the stonewall job starts after both ended').toBeGreaterThanOrEqual(Math.max(r[1], w[1]) - 5);
    expect(reader.read.total_ios).toBeGreaterThan(0);
    expect(writer.write.total_ios).toBeGreaterThan(0);
    const table = await iops([job], cwd);
    expect(table.stdout).toMatch(/\nat the same time: reader, writer\nengine .*\nreader psync .*\nwriter psync .*\niolab bench iops: after: randread /);
  });

  it('counts groups at stonewall and new_group; group_reporting sums a group into one result named after its first job', async () => {
    const { cwd, job } = place('[global]\nsize=256k\n\n[a]\nrw=read\n\n[b]\nnew_group\ngroup_reporting\nrw=write\n\n' +
      '[c]\ngroup_reporting\nrw=write\n\n[d]\nstonewall\nrw=read\n');
    const doc = await json([job], cwd);
    expect(doc.jobs.map((j: any) => [j.jobname, j.groupid, j.read.total_ios + j.write.total_ios])).toEqual([
      ['a', 0, 64], ['b', 1, 128], ['d', 2, 64]]);
    expect(files(cwd)).toEqual(['a.0.0 262144', 'b.0.0 262144', 'c.0.0 262144', 'd.0.0 262144']);
  });

  it('numjobs makes copies of the job, each with its own file NAME.N.0, each its own result unless group_reporting', async () => {
    const { cwd } = place();
    const doc = await json(['--name=copies', '--size=128k', '--rw=randwrite', '--numjobs=3'], cwd);
    expect(doc.jobs.map((j: any) => [j.jobname, j['job options'].numjobs, j.write.total_ios])).toEqual([
      ['copies', '3', 32], ['copies', '3', 32], ['copies', '3', 32]]);
    expect(files(cwd)).toEqual(['copies.0.0 131072', 'copies.1.0 131072', 'copies.2.0 131072']);
    const summed = await json(['--name=copies', '--size=128k', '--rw=randread', '--numjobs=3', '--group_reporting'], cwd);
    expect(summed.jobs.map((j: any) => [j.jobname, j.read.total_ios])).toEqual([['copies', 96]]);
  });
});

describe.concurrent('the job file\'s text, as fio reads it', { timeout: 300_000 }, () => {
  it('cuts a line at its first ; or # (a file named "data.bin", numjobs=2 ; 2 simultaneous threads)', async () => {
    const { cwd, job } = place('[global]\nfilename=data.bin ; the data file\nsize=256k# no blank needed\n' +
      '[comments]   ; after a section too\nnumjobs=2 ; 2 simultaneous threads\nbs=8k;x\n');
    const doc = await json([job], cwd);
    expect(doc.jobs.map((j: any) => [j.jobname, j['job options'].bs, j.read.total_ios])).toEqual([['comments', '8192', 32], ['comments', '8192', 32]]);
    expect(doc['global options']).toEqual({ filename: 'data.bin', size: '256k' });
    expect(files(cwd)).toEqual(['data.bin 262144']);
  });

  it('takes ${VAR} from the environment (empty when unset), and fio\'s $pagesize, $mb_memory and $ncpus', async () => {
    const { cwd, job } = place('[vars]\nfilename=${IOLAB_T_FILE}\nbs=${IOLAB_T_UNSET}$pagesize\nsize=$pagesize*32\n' +
      'rw=randread\n\n[words]\nfilename=${IOLAB_T_FILE}\nsize=128k\nnumjobs=$ncpus\nnumber_ios=$mb_memory/$mb_memory\n');
    const doc = await json([job], cwd, { IOLAB_T_FILE: 'env.dat' });
    const page = native.constants.PAGE_SIZE;
    const ncpus = readdirSync('/sys/devices/system/cpu').filter((d) => /^cpu\d+$/.test(d)).length;
    expect(doc.jobs[0]['job options']).toMatchObject({ filename: 'env.dat', bs: String(page), size: String(page * 32) });
    expect(doc.jobs).toHaveLength(1 + ncpus);
    expect(doc.jobs[1].read.total_ios).toBe(1);
    expect(files(cwd)).toEqual([`env.dat ${page * 32}`]);
    expect(Math.floor(totalmem() / 2 ** 20)).toBeGreaterThan(0);
  });

  it('reads filename=a:b as two files of one job (its size split between them) and a\\:b as one', async () => {
    const { cwd, job } = place('[two]\nfilename=a.dat:b\\:c.dat\nsize=64k\n');
    const two = await json([job], cwd);
    expect(two.jobs).toHaveLength(1);
    expect([two.jobs[0]['job options'].filename, two.jobs[0].read.total_ios]).toEqual(['a.dat:b\\:c.dat', 16]);
    expect(files(cwd)).toEqual(['a.dat 32768', 'b:c.dat 32768']);
    for (const f of ['a.dat', 'b:c.dat']) rmSync(join(cwd, f));
    const small = await iops(['--name=s', '--filename=x.dat:y.dat:z.dat', '--size=10000'], cwd);
    expect(small.stderr).toBe('iolab: --size (10000 bytes) over 3 files is 3333 bytes each, less than one block (--bs 4096)');
    expect([small.exitCode, files(cwd)]).toEqual([1, []]);
    writeFileSync(job, '[one]\nfilename=odd\\:name.dat\nsize=64k\n');
    await json([job], cwd);
    expect(files(cwd)).toEqual(['odd:name.dat 65536']);
  });

  it('takes fio\'s aliases and inverse options: readwrite, blocksize, rwmixwrite, timeout, wait_for_previous, buffered', async () => {
    const { cwd, job } = place('[global]\nsize=256k\n[a]\nreadwrite=randrw\nrwmixwrite=30\nblocksize=8k\nbuffered=1\n' +
      '[b]\nwait_for_previous\nreadwrite=read\ntimeout=300ms\ntime_based\nbuffered=0\n');
    const doc = await json([job], cwd);
    expect(doc.jobs.map((j: any) => [j.groupid, j['job options'].rw, j['job options'].rwmixread, j['job options'].bs,
      j['job options'].direct])).toEqual([[0, 'randrw', '70', '8192', '0'], [1, 'read', undefined, '4096', '1']]);
    expect(doc.jobs[1]['job options'].runtime).toBe('300ms');
  });

  it('refuses bs=4KiB with the reason (fio reads it as 4000 bytes), never reading it either way', async () => {
    const { cwd, job } = place('[kib]\nbs=4KiB\nsize=400k\n');
    const r = await iops([job], cwd);
    expect(r.stderr).toBe(`iolab: ${job}:2: bs: '4KiB': fio reads KiB as a power of 1000 (4KiB = 4000 bytes), so iolab ` +
      'does not take it; write 4k for 4096 bytes, or 4000');
    expect([r.exitCode, files(cwd)]).toEqual([1, []]);
    const line = await iops(['--name=x', '--size=1MiB'], cwd);
    expect(line.stderr).toMatch(/^iolab: option '--size <size>' argument '1MiB' is invalid\. '1MiB': fio reads MiB as a power of 1000/);
  });

  it('reads an include line\'s file in its place; a job without a size for a new file is refused, as fio refuses it', async () => {
    const { cwd, job } = place('[inc]\ninclude part.inc\nrw=read\n');
    writeFileSync(join(cwd, 'part.inc'), 'size=64k ; from the included file\nbs=16k\n');
    const doc = await json([job], cwd);
    expect(doc.jobs[0]['job options']).toMatchObject({ size: '65536', bs: '16384' });
    writeFileSync(job, '[nosize]\nfilename=missing.dat\n');
    const r = await iops([job], cwd);
    expect(r.stderr).toBe('iolab: nosize: no size for \'missing.dat\', which does not exist yet (fio refuses it too: ' +
      '"you need to specify size="); give size=');
    expect(existsSync(join(cwd, 'missing.dat'))).toBe(false);
  });
});

describe.concurrent('command lines', { timeout: 300_000 }, () => {
  it('starts a job at each --name; the options before the first are every job\'s', async () => {
    const { cwd } = place();
    const doc = await json(['--size=64k', '--bs=8k', '--name=a', '--rw=write', '--name=b'], cwd);
    expect(doc.jobs.map((j: any) => [j.jobname, j['job options'].rw, j['job options'].bs])).toEqual([['a', 'write', '8192'], ['b', 'read', '8192']]);
    expect(doc['global options']).toEqual({ size: '64k', bs: '8k' });
    expect(files(cwd)).toEqual(['a.0.0 65536', 'b.0.0 65536']);
  });

  it('puts the command line\'s options under the job file\'s: --bs=16k runs a job with bs=8k at 8k and the other at 16k', async () => {
    const { cwd, job } = place('[a]\nbs=8k\nsize=64k\n\n[b]\nsize=64k\n');
    const doc = await json(['--bs=16k', job], cwd);
    expect(doc.jobs.map((j: any) => [j.jobname, j['job options'].bs])).toEqual([['a', '8192'], ['b', '16384']]);
  });

  it('counts number_ios after ramp_time, as fio; a size-bound job does its size after the ramp', async () => {
    const { cwd } = place();
    const doc = await json(['--name=ramp', '--size=16m', '--ramp_time=300ms', '--number_ios=2000', '--rw=read', '--name=sized',
      '--size=1m', '--ramp_time=300ms', '--rw=randread', '--stonewall'], cwd);
    expect(doc.jobs.map((j: any) => [j.jobname, j.read.total_ios])).toEqual([['ramp', 2000], ['sized', 256]]);
  });
});

describe.concurrent('fio\'s --showcmd, --parse-only and a job file on standard input', { timeout: 300_000 }, () => {
  const jobText = '[global]\nbs=8k\nsize=64k\n[a]\nrw=read\n[b]\nstonewall\nrw=write\nfilename=x.dat\n';

  it('--showcmd prints the job file as the command line fio prints, with iolab bench iops first, and runs nothing', async () => {
    const { cwd, job } = place(jobText);
    const r = await iops(['--showcmd', job], cwd);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('iolab bench iops --bs=8k --size=64k --name=a --rw=read --name=b --stonewall --rw=write --filename=x.dat');
    const fio = await execa('fio', ['--showcmd', job], { cwd, reject: false });
    if (fio.exitCode === 0) expect(r.stdout.replace('iolab bench iops', 'fio').trim()).toBe(String(fio.stdout).trim());
    expect(files(cwd)).toEqual([]);
  });

  it('--parse-only reads the jobs and stops with nothing made; an option iolab refuses is refused', async () => {
    const { cwd, job } = place(jobText);
    const r = await iops(['--parse-only', job], cwd);
    expect([r.exitCode, r.stdout, r.stderr]).toEqual([0, '', '']);
    expect(files(cwd)).toEqual([]);
    writeFileSync(job, '[a]\nsize=64k\ncpus_allowed=0\n');
    const refused = await iops(['--parse-only', job], cwd);
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr).toMatch(/^iolab: .*'cpus_allowed': a fio option iolab doesn't run$/);
  });

  it('reads the job file `-` from standard input, as fio does', async () => {
    const { cwd } = place();
    const r = await runCliText(['bench', 'iops', '-', '--json'], { cwd, input: jobText });
    expect(r.stderr).toBe('');
    const doc = JSON.parse(r.stdout);
    expect(doc.jobs.map((j: any) => [j.jobname, j.groupid])).toEqual([['a', 0], ['b', 1]]);
    expect(files(cwd)).toEqual(['a.0.0 65536', 'x.dat 65536']);
  });
});

describe.concurrent('unlink', { timeout: 300_000 }, () => {
  it('deletes a file the run made when the job is done, as fio; a file that was there before only with --force', async () => {
    const { cwd } = place();
    await json(['--name=u', '--filename=made.dat', '--size=64k', '--rw=write', '--unlink=1'], cwd);
    expect(files(cwd)).toEqual([]);
    writeFileSync(join(cwd, 'keep.dat'), Buffer.alloc(65536, 7));
    const r = await iops(['--name=u', '--filename=keep.dat', '--size=64k', '--unlink=1'], cwd);
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toBe('iolab: u: unlink=1 deletes \'keep.dat\' when the job is done, and it exists already: ' +
      'iolab deletes a file it did not create only with --force');
    expect(files(cwd)).toEqual(['keep.dat 65536']);
  });
});

describe.concurrent('flow', { timeout: 300_000 }, () => {
  it('shares a flow\'s I/Os by weight, as fio: flow=1 beside flow=8 does about an eighth', async () => {
    // flow_sleep is the writer's wait while it is ahead: 10 ms leaves the reader time for its
    // eight I/Os however slow the machine (at 1 ms the sanitized build's reader did only 4).
    // exitall: a job that ends leaves the flow, and the other then runs free; on a loaded
    // machine the writer's second ended a few ms before the reader's, whose free reads from
    // the page cache made the ratio 20. Both end together, so only the shared second counts.
    const { cwd, job } = place('[global]\nfilename=f.dat\nsize=256k\nflow_sleep=10000\ntime_based\nruntime=1\nexitall\n' +
      '[w]\nrw=write\nflow=1\n[r]\nrw=randread\nflow=8\n');
    const doc = await json([job], cwd);
    const [w, r] = doc.jobs;
    const ratio = r.read.total_ios / w.write.total_ios;
    expect(ratio).toBeGreaterThan(5);
    expect(ratio).toBeLessThan(12);
  });
});
