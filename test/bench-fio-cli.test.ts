// fio users' own command lines and job files through `iolab bench iops`: fio's spellings
// (-opt=value, bare booleans), the options that change nothing iolab measures shown in the job
// options, fio options iolab doesn't run refused by name, job files (sections, comments, errors
// with file:line), and a data file given as a job file refused, never benchmarked.
import { describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCliText } from './support/cli.js';
import { runCliAs } from './support/demo.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';

const fioInstalled = (await execa('fio', ['--version'], { reject: false }).catch(() => ({ exitCode: 1 }))).exitCode === 0;
const dir = shortTempDir('iolab-fiocli-');
checkLeaksAfterAll(dir);
const file = (name: string) => join(dir.path, name);
const iops = (args: string[], cwd?: string) => runCliText(['bench', 'iops', ...args], cwd ? { cwd } : {});
/** A fio command line as a user pastes it: `fio` replaced by `iolab bench iops`, split on spaces. */
const fioLine = (line: string) => line.trim().split(/\s+/);

// a loaded machine takes tens of seconds per CLI run: generous timeouts
describe.concurrent('fio\'s command line', { timeout: 300_000 }, () => {
  it('runs fio\'s classic sequential libaio test as written (sizes and runtime shrunk)', async () => {
    const img = file('test.img');
    const r = await iops(fioLine(`-ioengine=libaio -bs=16k -direct=1 -thread -rw=read -size=4M -filename=${img} ` +
      '-name=test -iodepth=1 -time_based -runtime=300ms -numjobs=2 -group_reporting --json'));
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    // fio's jobname is the job's name; group_reporting sums its two copies into one result
    const { jobs } = JSON.parse(r.stdout);
    expect(jobs.map((j: { jobname: string; groupid: number }) => [j.jobname, j.groupid])).toEqual([['test', 0]]);
    expect(jobs[0]['job options']).toMatchObject({ name: 'test', ioengine: 'libaio', bs: '16384', direct: '1', rw: 'read',
      size: String(4 << 20), numjobs: '2', time_based: '1', thread: '1', group_reporting: '1' });
    expect(jobs[0].read.total_ios).toBeGreaterThan(0);
  });

  it.runIf(fioInstalled)('runs the same line with --vs-fio: fio gets the line as typed, not iolab\'s reading of it', async () => {
    const img = file('vs.img');
    const r = await iops(fioLine(`-ioengine=libaio -bs=16k -direct=1 -thread -rw=read -size=4M -filename=${img} ` +
      '-name=test -iodepth=1 -time_based -runtime=300ms -numjobs=2 -group_reporting --vs-fio --repeat 1 --json'));
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    const doc = JSON.parse(r.stdout);
    const [e] = doc.vs_fio.engines;
    // fio's own JSON: the options before -name global, the job's own after it, each as typed
    expect(e.fio_global_options).toEqual({ ioengine: 'libaio', bs: '16k', direct: '1', rw: 'read', size: '4M', filename: img });
    expect(e.fio_job_options).toEqual({ name: 'test', iodepth: '1', runtime: '300ms', numjobs: '2' });
    expect(e.fio_jobs).toBe(1);  // group_reporting: one result, as iolab's
    expect(doc.jobs[0]['job options']).toMatchObject({ bs: String(16 * 1024), size: String(4 * 2 ** 20) });
    // the same job on the same file, both O_DIRECT reads: within 10x (a misread job, say a
    // buffered read of a cached file against O_DIRECT, is far more)
    expect(e.ratio).toBeGreaterThan(0.1);
    expect(e.ratio).toBeLessThan(10);
  });

  it('runs the random read IOPS line on a file (-norandommap -randrepeat=0 -refill_buffers), double dashes too', async () => {
    for (const dash of ['-', '--']) {
      const line = `-name=Rand_Read_IOPS_Test -group_reporting -direct=1 -iodepth=128 -rw=randread -ioengine=libaio ` +
        `-refill_buffers -norandommap -randrepeat=0 -bs=4k -size=4M -numjobs=1 -runtime=300ms -filename=${file(`rr${dash.length}.dat`)}`;
      const r = await iops(fioLine(line.replaceAll(' -', ` ${dash}`).replace(/^-/, dash)));
      expect(r.stderr).toBe('');
      expect(r.exitCode).toBe(0);
      expect(r.stdout.split('\n')[0]).toMatch(/^iolab bench iops: Rand_Read_IOPS_Test: randread bs=4096 iodepth=128 /);
      expect(r.stdout.split('\n')[2]).toMatch(/^Rand_Read_IOPS_Test libaio\s+[\d,]+\s/);
    }
  });

  it('runs the read/write mix line; its -ioscheduler is refused by name as a system setting', async () => {
    const line = '-name=Read_Write_IOPS_Test -group_reporting -direct=1 -iodepth=128 -rw=randrw -rwmixread=70 -refill_buffers ' +
      '-norandommap -randrepeat=0 -ioengine=libaio -bs=4k -size=4M -numjobs=1 -runtime=300ms';
    const refused = await iops(fioLine(`${line} -ioscheduler=noop`));
    expect(refused.stderr).toBe('iolab: -ioscheduler: it switches the device\'s I/O scheduler, a system setting; ' +
      'a fio option iolab doesn\'t run (set it yourself before the job if you want it)');
    expect(refused.stdout).toBe('');
    expect(refused.exitCode).toBe(1);
    // no -filename: fio names the file after the job, in the folder it runs in
    const cwd = file('rw');
    mkdirSync(cwd);
    const r = await iops([...fioLine(line), '--json'], cwd);
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    const job = JSON.parse(r.stdout).jobs[0];
    expect(job['job options']).toMatchObject({ rw: 'randrw', rwmixread: '70', norandommap: '1', randrepeat: '0', refill_buffers: '1' });
    expect(job.read.total_ios).toBeGreaterThan(0);
    expect(job.write.total_ios).toBeGreaterThan(0);
    expect(existsSync(join(cwd, 'Read_Write_IOPS_Test.0.0'))).toBe(true);
  });

  it('refuses fio options iolab doesn\'t run, by name, in one line; unknown words stay unknown', async () => {
    const f = file('refuse.dat');
    const [hugepage, typo, bool] = await Promise.all([['-cpus_allowed=0'], ['-iodepht=8'], ['-time_based=2']]
      .map((extra) => iops(['--filename', f, ...extra])));
    expect(hugepage.stderr).toBe('iolab: -cpus_allowed: a fio option iolab doesn\'t run');
    expect(typo.stderr).toMatch(/^iolab: unknown option '--iodepht=8'/);
    expect(bool.stderr).toBe('iolab: -time_based: expected 0 or 1, got \'2\'');
    for (const r of [hugepage, typo, bool]) expect([r.exitCode, r.stdout]).toEqual([1, '']);
  });

  it('help says what a bare 0|1 option means, not commander\'s preset', async () => {
    const r = await iops(['--help']);
    expect(r.stdout).not.toMatch(/preset: "1"/);
    expect(r.stdout).toMatch(/--direct \[0\|1\]\s+O_DIRECT \(bypass the page cache\); default 0, bare --direct is 1/);
  });

  it.runIf(process.getuid?.() === 0)('a folder the user may not write in: one error line, no table header', async () => {
    const ro = file('ro');
    mkdirSync(ro);
    chmodSync(dir.path, 0o755);
    chmodSync(ro, 0o555);
    const r = await runCliAs(['bench', 'iops', '--filename', join(ro, 'x.dat'), '--size', '1m', '--ioengine', 'psync'],
      { uid: 65534, gid: 65534 });
    expect(String(r.stdout)).toBe('');
    expect(String(r.stderr)).toBe(`iolab: EACCES: permission denied, open '${join(ro, 'x.dat')}'`);
    expect(r.exitCode).toBe(1);
  });
});

describe.concurrent('fio job files', { timeout: 300_000 }, () => {
  it('runs [global] and two job sections, the second after a stonewall, comments skipped, each named as fio names it', async () => {
    const job = file('two.fio');
    writeFileSync(job, `; a fio job file
[global]
ioengine=psync   ; each job may say otherwise
bs=4k
size=1m
# both jobs read the same file
filename=${file('two.dat')}
number_ios=100

[seq]
rw=read

[rand]
stonewall
rw=randread
ioengine=io_uring
iodepth=4
`);
    const r = await iops([job, '--json']);
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    const { jobs, 'global options': global } = JSON.parse(r.stdout);
    expect(jobs.map((j: { jobname: string; groupid: number }) => [j.jobname, j.groupid])).toEqual([['seq', 0], ['rand', 1]]);
    expect(global).toEqual({ ioengine: 'psync', bs: '4k', size: '1m', filename: file('two.dat'), number_ios: '100' });
    expect(jobs[0]['job options']).toMatchObject({ rw: 'read', bs: '4096', ioengine: 'psync' });
    expect(jobs[1]['job options']).toMatchObject({ rw: 'randread', iodepth: '4', ioengine: 'io_uring' });
    expect(jobs.map((j: { read: { total_ios: number } }) => j.read.total_ios)).toEqual([100, 100]);
    const table = await iops([job]);
    expect(table.stdout).toMatch(/^iolab bench iops: seq: read bs=4096 .*\nengine .*\nseq psync .*\n(note: .*\n)?iolab bench iops: rand: randread /);
  });

  it('refuses an unknown option with file:line and its name; a fio option iolab doesn\'t run likewise', async () => {
    const job = file('bad.fio');
    writeFileSync(job, '[global]\nbs=4k\n\n[j]\nrw=read\nfrobnicate=3');
    const r = await iops([job]);
    expect(r.stderr).toBe(`iolab: ${job}:6: unknown option 'frobnicate'`);
    writeFileSync(job, '[j]\n; comment\nioscheduler=noop');
    const s = await iops([job]);
    expect(s.stderr).toBe(`iolab: ${job}:3: 'ioscheduler': it switches the device's I/O scheduler, a system setting; ` +
      'a fio option iolab doesn\'t run (set it yourself before the job if you want it)');
    writeFileSync(job, '[j]\nbs=4q');
    const v = await iops([job]);
    expect(v.stderr).toMatch(new RegExp(`^iolab: ${job}:2: bs: expected a size .*, got '4q'$`));
    for (const x of [r, s, v]) expect([x.exitCode, x.stdout]).toEqual([1, '']);
  });

  it('refuses a data file given as the job file, never benchmarks it; testIOPS mode still takes a file', async () => {
    const data = file('big.fio');
    const made = await iops(['--filename', data, '--size', '1m', '--ioengine', 'psync', '--number_ios', '1']);
    expect(made.exitCode).toBe(0);
    const r = await iops([data]);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(new RegExp(`^iolab: '${data}' is not a fio job file \\((it holds binary data|line 1 is neither a \\[section\\] nor an option)\\); `));
    expect(r.exitCode).toBe(1);
    const text = file('notes.txt');
    writeFileSync(text, 'hello world');
    expect((await iops([text])).stderr).toMatch(/is not a fio job file \(line 1 is neither a \[section\] nor an option\)/);
  });
});
