// fio, differentially: every job file of test/fixtures/fio-corpus/ (written for this project in
// the shapes of fio's examples) and a corpus of command lines, run by fio (PATH's, Debian's 3.33
// in CI; IOLAB_FIO names another, such as a 3.42 built from source) and by iolab with
// tiny sizes and 1 s runtimes, compared field by field (test/support/fio-diff.ts): job names,
// groupids and count, rw/bs/iodepth, which jobs did I/O, the files created with their sizes,
// which jobs ran at the same time, fio's "global options", the exit status. Where fio runs a case
// iolab does not, iolab refuses it by name, in one line, leaving nothing. The closing table of
// fio vs iolab is printed at the end. IOLAB_FIO_CORPUS=full adds every engine x rw x depth as
// command lines (a longer run).
import { afterAll, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { projectRoot } from '../src/native.js';
import { table } from '../src/format.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';
import { differences, fioBinary, runFioCase, runIolabCase, summaryRow, type DiffCase } from './support/fio-diff.js';
import { runCliText } from './support/cli.js';

const fio = await execa(fioBinary, ['--version'], { reject: false }).catch(() => ({ exitCode: 1, stdout: '' }));
const fioVersion = fio.exitCode === 0 ? String(fio.stdout).trim() : undefined;
const dir = shortTempDir('iolab-fiodiff-');
checkLeaksAfterAll(dir);

const corpusDir = join(projectRoot, 'test/fixtures/fio-corpus');
const fileCases: DiffCase[] = readdirSync(corpusDir).filter((f) => f.endsWith('.fio')).sort().map((f) => {
  const path = join(corpusDir, f);
  const text = readFileSync(path, 'utf8');
  const refuses = /^;\s*iolab refuses:\s*(.+)$/m.exec(text)?.[1];
  // `; same bytes: a.dat b.dat`: those files hold the same bytes after fio's run and iolab's
  const sameBytes = /^;\s*same bytes:\s*(.+)$/m.exec(text)?.[1].trim().split(/\s+/);
  // `; needs fio: 3.42`: compared only with that fio or a later one (an older one's known fault)
  const needsFio = /^;\s*needs fio:\s*(\S+)$/m.exec(text)?.[1];
  return { name: f, jobFile: path, args: [], refuses: refuses ? new RegExp(refuses.trim()) : undefined, sameBytes, needsFio };
});

/** fio-3.42 -> [3, 42]: whether this fio is `version` or later. */
const atLeast = (version: string) => {
  const have = (fioVersion ?? '').replace(/^fio-/, '').split('.').map(Number);
  const want = version.split('.').map(Number);
  return have[0] > want[0] || (have[0] === want[0] && (have[1] ?? 0) >= (want[1] ?? 0));
};

// a job file for the command line's precedence: its job's bs wins over the command line's
const precedence = join(dir.path, 'precedence.fio');
writeFileSync(precedence, '[own-bs]\nbs=8k\nsize=64k\n\n[command-line-bs]\nsize=64k\n');
// two job files: fio starts the second from its own defaults (not the command line's, nor the
// first file's [global]), its first job behind a stonewall
const firstFile = join(dir.path, 'first.fio');
writeFileSync(firstFile, '[global]\nsize=64k\nrw=write\n\n[a]\n\n[a2]\n');
const secondFile = join(dir.path, 'second.fio');
writeFileSync(secondFile, '[global]\nrw=randread\n\n[b]\nsize=64k\nfilename=a.0.0\n\n[b2]\nsize=32k\nfilename=a2.0.0\n');
// a job file whose [global] includes another's options (fio's `include`, inside a section)
const included = join(dir.path, 'included-options.fio');
writeFileSync(included, 'size=64k\nbs=8k\nrw=randwrite\n');
const including = join(dir.path, 'including.fio');
writeFileSync(including, `[global]\ninclude ${included}\n\n[inc-a]\n\n[inc-b]\nrw=read\nfilename=inc-a.0.0\nstonewall\n`);
// a file both runs only read (--readonly), made before them
const readOnlyFile = join(dir.path, 'readonly.dat');
writeFileSync(readOnlyFile, Buffer.alloc(256 * 1024, 7));

const commandLineCases: DiffCase[] = [
  { name: 'two --name, the first without a size', args: ['--name=a', '--name=b', '--size=64k'] },
  { name: 'globals before two --name jobs', args: ['--size=64k', '--name=a', '--rw=write', '--name=b', '--rw=read'] },
  { name: '--bs before a job file', args: ['--bs=16k'], jobFile: precedence },
  { name: 'numjobs summed by group_reporting', args: ['--name=x', '--rw=randread', '--bs=4k', '--size=256k', '--numjobs=2', '--group_reporting'] },
  { name: 'numjobs on the command line', args: ['--name=a', '--size=128k', '--numjobs=2'] },
  { name: 'a classic one-dash line', args: ('-ioengine=libaio -bs=16k -direct=1 -thread -rw=read -size=1M -filename=classic.img ' +
    '-name=test -iodepth=1 -time_based -runtime=2 -numjobs=2 -group_reporting').split(' ') },
  { name: 'group_reporting: job_runtime summed, bw_mean and bw_agg the group\'s', args: ['--name=g', '--filename=g.dat', '--size=8m',
    '--rw=randread', '--numjobs=2', '--runtime=2', '--time_based', '--group_reporting'] },
  { name: 'without group_reporting: bw_agg each job\'s share', args: ['--name=g', '--filename=g.dat', '--size=8m',
    '--rw=randread', '--numjobs=2', '--runtime=1', '--time_based'] },
  { name: 'ramp_time with number_ios', args: ['--name=ramp', '--size=4m', '--ramp_time=500ms', '--number_ios=300'] },
  { name: 'a file list on the command line, numjobs sharing it, time_based', args: ['--name=tb', '--filename=tb-a.dat:tb-b.dat:tb-c.dat',
    '--size=192k', '--rw=randwrite', '--numjobs=2', '--runtime=1', '--time_based'] },
  { name: 'a writer and a reader at once', args: ['--filename=cl.dat', '--size=1m', '--runtime=1', '--time_based',
    '--name=w', '--rw=write', '--name=r', '--rw=read'] },
  // (fio's JSON gives every job the last file's [global] as its global options, and the first
  // file's jobs no options of their own: their rw and bs cannot be read back from it; their
  // I/Os and the directions they moved tell them)
  { name: 'two job files, the command line\'s bs before them', args: ['--bs=8k', firstFile], jobFile: secondFile, skip: ['rw, bs, iodepth'] },
  { name: 'a [global] that includes another file\'s options', args: [], jobFile: including },
  { name: '--section of a job file', args: ['--section=a2'], jobFile: firstFile },
  { name: '--section twice, in the file\'s order', args: ['--section=a2', '--section=a'], jobFile: firstFile },
  { name: '--section that names no section', args: ['--section=nothing'], jobFile: firstFile },
  { name: '--readonly with a job that writes', args: ['--readonly'], jobFile: firstFile },
  { name: '--readonly reading a file that is there', args: ['--readonly', '--name=ro', `--filename=${readOnlyFile}`, '--rw=randread'] },
  { name: '--readonly with a file to lay out', args: ['--readonly', '--name=ro', '--filename=new.dat', '--size=64k'] },
];

/** IOLAB_FIO_CORPUS=full: every engine with every rw at depths 1 and 4, each as a command line. */
const fullCases: DiffCase[] = process.env.IOLAB_FIO_CORPUS !== 'full' ? [] :
  ['psync', 'sync', 'io_uring', 'libaio', 'posixaio', 'mmap'].flatMap((engine) =>
    ['read', 'write', 'randread', 'randwrite', 'randrw', 'rw'].flatMap((rw) => [1, 4].map((depth) => ({
      name: `${engine} ${rw} iodepth=${depth}`,
      args: [`--name=${engine}-${rw}`, `--ioengine=${engine}`, `--rw=${rw}`, `--iodepth=${depth}`, '--bs=8k', '--size=256k', '--numjobs=2'],
    }))));

const rows: string[][] = [];
afterAll(() => {
  if (rows.length === 0) return;
  process.stdout.write(`\nfio vs iolab over ${rows.length} cases (${fioVersion}):\n` +
    table(['case', 'fio', 'iolab', 'verdict'], rows));
});

let serial = 0;
// two cases at a time (one fio or iolab run each, mostly waiting on 1 s runtimes): the corpus
// stays under a minute as it grows
let running = 0;
const waiting: (() => void)[] = [];
async function twoAtATime<T>(fn: () => Promise<T>): Promise<T> {
  if (running >= 2) await new Promise<void>((resolve) => waiting.push(resolve));
  running++;
  try {
    return await fn();
  } finally {
    running--;
    waiting.shift()?.();
  }
}

async function check(c: DiffCase): Promise<void> {
  return twoAtATime(() => checkCase(c));
}

async function checkCase(c: DiffCase): Promise<void> {
  const caseDir = join(dir.path, `case${serial++}`);
  mkdirSync(caseDir);
  const theirs = await runFioCase(c, caseDir);
  const ours = await runIolabCase(c, caseDir);
  const diffs = differences(c, theirs, ours);
  for (const f of c.sameBytes ?? []) {
    const hash = (side: string) => createHash('sha256').update(readFileSync(join(caseDir, side, f))).digest('hex');
    if (hash('fio') !== hash('iolab')) diffs.push(`${f}: other bytes than fio's`);
  }
  rows.push(summaryRow(c, theirs, ours, diffs));
  expect(diffs, `${c.name}: iolab vs fio`).toEqual([]);
}

describe.runIf(fioVersion)('fio vs iolab', { timeout: 120_000 }, () => {
  it.concurrent.for(fileCases)('job file $name', async (c, ctx) => {
    if (c.needsFio && !atLeast(c.needsFio)) ctx.skip(`needs fio ${c.needsFio} or later (${fioVersion} here)`);
    await check(c);
  });
  it.concurrent('--vs-fio over groups: a row per group and direction, the groups and directions fio\'s own run has', async () => {
    const job = join(corpusDir, 'groups.fio');
    const caseDir = join(dir.path, 'vs-groups');
    mkdirSync(caseDir);
    const theirs = await twoAtATime(() => runFioCase({ name: 'groups.fio', jobFile: job, args: [] }, caseDir));
    mkdirSync(join(caseDir, 'vs'));
    const r = await twoAtATime(() => runCliText(['bench', 'iops', job, '--vs-fio', '--repeat', '1', '--json'],
      { cwd: join(caseDir, 'vs'), env: { ...process.env, IOLAB_FIO: fioBinary } }));
    expect(r.stderr).toBe('');
    const [e] = JSON.parse(r.stdout).vs_fio.engines;
    // fio's groups, each with the directions its jobs moved
    const fioRows = theirs.jobs.flatMap((j) => j.directions.map((d) => `${j.groupid} ${d}`));
    expect(e.groups.map((g: any) => `${g.group} ${g.direction}`)).toEqual([...new Set(fioRows)].sort());
    for (const g of e.groups) expect(g.fio_iops, `group ${g.group} ${g.direction}`).toBeGreaterThan(0);
  });
  it.concurrent.for(commandLineCases)('command line: $name', async (c) => check(c));
  it.concurrent.for(fullCases)('full corpus: $name', async (c) => check(c));
});

if (!fioVersion) {
  describe('fio vs iolab', () => {
    it.skip('needs fio on PATH (apt-get install fio)', () => {});
  });
}
