#!/usr/bin/env node
// How many of fio's own example job files (fio's examples/ folder) `iolab bench iops` runs as
// written and as fio runs them: `node scripts/fio-examples.mjs [DIR [NAME...]]`, DIR holding the
// .fio files (a fio source tree's examples/), fio the one on PATH or IOLAB_FIO's (a fio built
// from source: IOLAB_FIO=/path/fio-3.42/fio, and then DIR defaults to the examples/ beside it). The files whose engines
// iolab has (sync, psync, libaio, io_uring, posixaio, mmap, null, pvsync, pvsync2, or none
// named) count, zoned devices aside (zonemode=zbd); the rest are named and left out. Each is run
// by fio and by iolab (the checkout's, through tsx) in scratch folders of their own, as a user
// would try it: absolute
// filenames and directory= pointed at the scratch folder, sizes shrunk to 1 MiB, times to 1 s,
// loops to 2, and a [global] size=1m first for a file that names an absolute path (a device, or
// a file it expects to exist). Only files fio itself runs (within 30 s) count. A file matches
// when both succeed with the same jobs (names, groupids, rw, bs), the same jobs doing I/O, the
// same bytes for jobs bounded by their size (but lengths drawn per I/O), and the same files
// left. Prints a line per file and the count.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { register } from 'tsx/esm/api';

register();
const { engineInfo } = await import('../src/bench/engines.ts');
const root = join(fileURLToPath(import.meta.url), '../..');
const fioBin = process.env.IOLAB_FIO || 'fio';
const [given, ...only] = process.argv.slice(2);
// without DIR: the examples/ beside IOLAB_FIO's fio (a source tree's); Debian's package ships none
const beside = process.env.IOLAB_FIO ? join(dirname(process.env.IOLAB_FIO), 'examples') : undefined;
const dir = given ?? [beside].find((d) => d !== undefined && existsSync(d));
if (!dir) {
  process.stderr.write('usage: node scripts/fio-examples.mjs [DIR [NAME...]]  (DIR: fio\'s examples/ folder, by default the one\n' +
    `beside IOLAB_FIO's fio${beside ? `: ${beside} is not there` : ', which is not set'}; Debian's fio package has no examples:\n` +
    'take them from fio\'s source, e.g. git clone https://github.com/axboe/fio, and name its examples/)\n');
  process.exit(2);
}
if (!existsSync(dir) || !statSync(dir).isDirectory()) {
  process.stderr.write(`fio-examples: ${dir}: not a folder\n`);
  process.exit(2);
}

const sizeOptions = new Set(['size', 'filesize', 'io_size', 'io_limit', 'offset_increment', 'zonesize', 'zoneskip', 'zonerange']);
const bytes = (t) => {
  const m = /^(\d+)\s*([kmgtp]?)i?b?$/i.exec(t.trim());
  return m ? Number(m[1]) * 1024 ** ' kmgtp'.indexOf(m[2].toLowerCase() || ' ') : undefined;
};

/** The job file as a user tries it in a scratch folder. */
export function shrink(text) {
  const device = /^\s*filename\s*=\s*\/(?!dev\/null|dev\/zero)/m.test(text);
  const lines = text.split('\n').map((line) => {
    const m = /^(\s*)([A-Za-z_]+)(\s*=\s*)([^;#]*?)(\s*(?:[;#].*)?)$/.exec(line);
    if (!m) return line;
    const [, lead, name, eq, value, rest] = m;
    const set = (v) => `${lead}${name}${eq}${v}${rest}`;
    if (name === 'directory') return set('.');
    if (name === 'filename' && value.includes('/') && !/^\/dev\/(null|zero)$/.test(value)) {
      return set(value.split(':').map((f) => basename(f)).join(':'));
    }
    if (sizeOptions.has(name) && (bytes(value) ?? 0) > 2 ** 20) return set('1m');
    if ((name === 'runtime' || name === 'timeout') && value !== '') return set('1');
    if (name === 'ramp_time') return set('500ms');
    if (name === 'loops' && Number(value) > 2) return set('2');
    return line;
  });
  return `${device ? '[global]\nsize=1m\n' : ''}${lines.join('\n')}\n`;
}

function run(cmd, args, cwd) {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', timeout: 30_000, killSignal: 'SIGKILL' });
  const start = r.stdout.indexOf('{');
  let doc;
  try {
    doc = start >= 0 ? JSON.parse(r.stdout.slice(start)) : undefined;
  } catch { /* not JSON */ }
  return { ok: r.status === 0 && doc !== undefined, doc, stderr: (r.stderr || '').trim() };
}

function jobsOf(doc) {
  const global = doc['global options'] ?? {};
  return doc.jobs.map((j) => {
    const o = { ...global, ...(j['job options'] ?? {}) };
    const rw = (o.rw ?? o.readwrite ?? 'read').split(':')[0];
    return {
      name: j.jobname, groupid: j.groupid, rw: rw === 'rw' ? 'readwrite' : rw, bs: bytes(o.bs ?? o.blocksize ?? '4k') ?? o.bs,
      io: (j.read?.io_bytes ?? 0) + (j.write?.io_bytes ?? 0),
      // fio counts a verify's reads as the job's I/O, iolab checks its pattern apart; lengths
      // drawn per I/O (bsrange, bssplit) make the bytes the draw's, in fio as in iolab
      bounded: !('time_based' in o) && !('runtime' in o) && !('timeout' in o) && !('verify' in o) &&
        !('bssplit' in o) && !('bsrange' in o) && !('blocksize_range' in o),
    };
  });
}

// a file by its size; a log file (write_*_log, PREFIX_KIND.N.log: job N's) by its lines, whose
// text differs run to run; the count of a job's log lines only for a job bounded by its size (a
// line per I/O, whose lengths may be drawn, or per window of a run's time)
const filesIn = (d) => readdirSync(d).filter((f) => !f.endsWith('-verify.state')).sort()
  .map((f) => (f.endsWith('.log') ? { name: f, job: Number(/\.(\d+)\.log$/.exec(f)?.[1] ?? 0),
    lines: readFileSync(join(d, f), 'utf8').split('\n').filter((l) => l !== '').length } : { name: f, size: statSync(join(d, f)).size }));
const shownFiles = (files, jobs) => files.map((f) => (f.size !== undefined ? `${f.name} ${f.size}` :
  `${f.name} ${jobs[f.job - 1]?.bounded ? `${f.lines} lines` : f.lines > 0 ? 'with lines' : 'empty'}`));

function compare(fio, iolab) {
  const d = [];
  const a = jobsOf(fio.doc);
  const b = jobsOf(iolab.doc);
  const same = (what, x, y) => {
    if (JSON.stringify(x) !== JSON.stringify(y)) d.push(`${what}: fio ${JSON.stringify(x)} iolab ${JSON.stringify(y)}`);
  };
  same('jobs', a.map((j) => `${j.name}/${j.groupid}/${j.rw}/${j.bs}`), b.map((j) => `${j.name}/${j.groupid}/${j.rw}/${j.bs}`));
  same('jobs with I/O', a.map((j) => j.io > 0), b.map((j) => j.io > 0));
  same('bytes of jobs bounded by size', a.map((j) => (j.bounded ? j.io : '-')), b.map((j) => (j.bounded ? j.io : '-')));
  same('files', shownFiles(fio.files, a), shownFiles(iolab.files, a));
  return d;
}

const fioRuns = spawnSync(fioBin, ['--version'], { encoding: 'utf8' });
if (fioRuns.status !== 0) {
  process.stderr.write(`${fioBin === 'fio' ? 'fio is not on PATH' : `IOLAB_FIO=${fioBin} does not run`}\n`);
  process.exit(2);
}

/** Why a file is left out of the count: an engine iolab does not have (named in ioengine= or in
 * the command lines its comments give), or a zoned device; undefined when it counts. */
function leftOut(text) {
  const engines = [...text.matchAll(/ioengine\s*=\s*([\w-]+)/g)].map((m) => m[1]);
  const foreign = [...new Set(engines.filter((e) => engineInfo(e)?.name !== e))];
  if (foreign.length > 0) return `its engine${foreign.length > 1 ? 's' : ''} ${foreign.join(', ')}`;
  if (/^\s*zonemode\s*=\s*zbd/m.test(text)) return 'a zoned device (zonemode=zbd)';
  return undefined;
}
const scratch = mkdtempSync(join(tmpdir(), 'iolab-fio-examples-'));
const all = readdirSync(dir).filter((f) => f.endsWith('.fio') && (only.length === 0 || only.includes(f))).sort();
const outside = all.map((name) => [name, leftOut(readFileSync(join(dir, name), 'utf8'))]).filter(([, why]) => why !== undefined);
const names = all.filter((name) => !outside.some(([n]) => n === name));
let fioRan = 0;
let matched = 0;
for (const name of names) {
  const text = shrink(readFileSync(join(dir, name), 'utf8'));
  const caseDir = join(scratch, name);
  const fioDir = join(caseDir, 'fio');
  const iolabDir = join(caseDir, 'iolab');
  mkdirSync(fioDir, { recursive: true });
  mkdirSync(iolabDir, { recursive: true });
  const job = join(caseDir, name);
  writeFileSync(job, text);
  const fio = run(fioBin, ['--output-format=json', job], fioDir);
  if (!fio.ok) {
    process.stdout.write(`${name}: fio refuses it or runs past 30 s (${fio.stderr.split('\n').pop()}), not counted\n`);
    continue;
  }
  fioRan++;
  const iolab = run(process.execPath, [join(root, 'scripts/iolab-ts.mjs'), 'bench', 'iops', job, '--json'], iolabDir);
  fio.files = filesIn(fioDir);
  iolab.files = filesIn(iolabDir);
  if (!iolab.ok) {
    process.stdout.write(`${name}: iolab refuses it: ${iolab.stderr.split('\n').pop()}\n`);
    continue;
  }
  const diffs = compare(fio, iolab);
  if (diffs.length === 0) matched++;
  process.stdout.write(`${name}: ${diffs.length === 0 ? 'runs and matches fio' : `runs, differs: ${diffs.join('; ')}`}\n`);
}
rmSync(scratch, { recursive: true, force: true });
const version = String(fioRuns.stdout).trim();
process.stdout.write(`\n${names.length} of ${all.length} example files have engines iolab has (zoned devices aside; left out: ` +
  `${outside.map(([n, why]) => `${n}: ${why}`).join('; ') || 'none'})\n`);
process.stdout.write(`${matched} of ${fioRan} of them that ${version} runs run as written in iolab and match fio ` +
  `(${names.length - fioRan} that ${version} refuses after shrinking, or that run past 30 s in it, not counted)\n`);
