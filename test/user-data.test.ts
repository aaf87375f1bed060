// Nothing a user names is harmed, as an invariant over the whole CLI. The commands and their
// path options come from the commander program itself (test/support/path-surface.ts): a new
// path option is covered the day it is defined, and one that looks like a path but carries no
// mark fails the first test. For each path option fast-check picks what it is given: a user's
// file, a 0444 file, a symlink to a user's file, the run's own input, a hard link or a symlink to
// it, the file the input names when the input is a symlink, /dev/null, a FIFO, a folder, a missing path under /dev, or a new path; with or without the
// flags that allow changing an existing file (--force, writev's --append). It runs the command
// to success or refusal and, for the benchmarks, to SIGINT (to the process group, as a
// terminal sends it) or SIGKILL mid-run. Afterwards:
// - every file that was there keeps its bytes, size, mode and inode, unless the option it was
//   given to is a declared output and its flag was given (and then a file replaced keeps its
//   mode); a symlink's target never changes; a run given the same file twice with one of them
//   written is refused and changes nothing;
// - nothing appears under /dev; a refused run creates nothing; no run leaves a temp file,
//   except one killed by SIGKILL, whose temp file the next run for that file removes;
// - no run hangs, crashes, or prints a stack.
// IOLAB_FUZZ_RUNS=N runs N cases per command instead of the 12 of `npm test` (4 sanitized).
import { beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { execa } from 'execa';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, linkSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { iolabArgv } from './support/cli.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';
import { entryState, folderState, pathSurface, regularFilesInDev, type CommandSurface, type PathItem } from './support/path-surface.js';
import { native } from '../src/native.js';

const tmp = shortTempDir('iolab-udata-');
const fuzzRuns = Number(process.env.IOLAB_FUZZ_RUNS ?? 0);
// every case starts iolab two to four times; under the sanitizer each start is 2-4x slower
const runsPerCommand = fuzzRuns > 0 ? fuzzRuns : native.sanitized ? 4 : 12;

type Candidate = 'default' | 'user' | 'readonly' | 'symlink' | 'input' | 'hardlinkToInput' | 'symlinkToInput' | 'inputTarget' | 'devNull' | 'fifo' | 'folder' | 'devMissing' | 'omit';
type Mode = 'complete' | 'sigint' | 'sigkill';
interface Case { picks: Record<string, Candidate>; change: string[]; mode: Mode; rw: 'read' | 'randwrite'; delayMs: number }
type Paths = Record<string, string | undefined>;

/** How to run one command with tiny sizes: its argv from the paths picked, which item is the
 * run's input, which items a run may leave out, which default to a user's existing file, and what
 * a user's file for an item holds so the run can succeed with it. */
interface Recipe {
  input?: string;
  optional?: string[];
  existing?: string[];
  content?: Record<string, 'json' | 'jobfile'>;
  /** Why even the plain run ends non-zero (a receiver that times out, a sender with no receiver). */
  noSuccess?: string;
  argv(p: Paths, c: Case): string[];
}
const opt = (flag: string, value: string | undefined) => (value === undefined ? [] : [flag, value]);
const long = (c: Case) => c.mode !== 'complete';

const recipes: Record<string, Recipe> = {
  readv: { existing: ['<file>'], argv: (p) => ['readv', p['<file>']!, '--sizes', '16,16'] },
  writev: { argv: (p) => ['writev', p['<file>']!, 'hello'] },
  'fdpass recv': { noSuccess: 'no sender: it times out', argv: (p) => ['fdpass', 'recv', '--socket', p['--socket']!, '--timeout', '200ms'] },
  'fdpass send': { noSuccess: 'no receiver listens', argv: (p) => ['fdpass', 'send', '--socket', p['--socket']!] },
  gen: { argv: (p) => ['gen', p['<file>']!, '--size', '4k'] },
  'bench api': {
    input: '--file', existing: ['--file'], optional: ['--output'],
    argv: (p, c) => ['bench', 'api', '--only', 'iolab.readvSync', '--file', p['--file']!,
      ...(long(c) ? ['--rounds', '40', '--duration', '20ms'] : ['--rounds', '1', '--duration', '5ms']), ...opt('--output', p['--output'])],
  },
  'bench iops': {
    input: '--filename', existing: ['<jobfile>'], optional: ['<jobfile>', '--output'], content: { '<jobfile>': 'jobfile' },
    argv: (p, c) => ['bench', 'iops', ...(p['<jobfile>'] !== undefined ? [p['<jobfile>']] : []), '--filename', p['--filename']!,
      '--ioengine', 'psync', '--rw', c.rw, '--size', c.mode === 'sigkill' ? '64m' : '1m',
      ...(long(c) ? ['--runtime', '3s', '--time_based'] : ['--number_ios', '64']), ...opt('--output', p['--output'])],
  },
  'bench latency': {
    input: '--infile', existing: ['--infile'], optional: ['--output'],
    argv: (p, c) => ['bench', 'latency', '--engine', 'sync', '--infile', p['--infile']!, '--outfile', p['--outfile']!,
      ...(long(c) ? ['--count', '5000'] : ['--count', '4', '--no-direct']), ...opt('--output', p['--output'])],
  },
  'bench echo': {
    optional: ['--output'],
    argv: (p, c) => ['bench', 'echo', '--clients', '2', '--duration', '1', '--rounds', long(c) ? '2' : '1', '--servers', 'epoll',
      '--generators', 'epoll', ...opt('--output', p['--output'])],
  },
  'bench http': {
    optional: ['--output'],
    argv: (p, c) => ['bench', 'http', '--servers', 'node', '--connections', '1', '--in-flight', '1', '--duration', '1',
      '--rounds', long(c) ? '3' : '1', ...opt('--output', p['--output'])],
  },
  'bench ipc': {
    optional: ['--output'],
    argv: (p, c) => ['bench', 'ipc', '--transports', 'pipe', '--sizes', '4k', '--mode', 'throughput',
      ...(long(c) ? ['--duration', '1s', '--rounds', '3'] : ['--duration', '50ms', '--rounds', '1']), ...opt('--output', p['--output'])],
  },
  report: { input: '<files>', existing: ['<files>'], content: { '<files>': 'json' }, argv: (p) => ['report', p['<files>']!, '-o', p['-o']!] },
};

const userContent: Record<'json' | 'jobfile' | 'data', () => string | Buffer> = {
  json: () => JSON.stringify({ rows: [{ contender: 'iolab.readvSync', inflight: 1, opsPerSec: 1000 }], ratios: [] }),
  jobfile: () => '; a job of the user\'s\n[user-job]\nioengine=psync\n',
  data: () => randomBytes(1 << 20),
};

/** Lays out what each item is given, in a new folder; the input item first (others may name it). */
function materialize(dir: string, recipe: Recipe, items: PathItem[], picks: Record<string, Candidate>): Paths {
  const paths: Paths = {};
  const ordered = [...items].sort((a, b) => Number(b.key === recipe.input) - Number(a.key === recipe.input));
  for (const item of ordered) {
    const slug = item.key.replace(/[^a-z]/g, '');
    const at = (suffix: string) => join(dir, `${slug}-${suffix}`);
    const userFile = (path: string) => {
      writeFileSync(path, userContent[recipe.content?.[item.key] ?? 'data']());
      return path;
    };
    const input = recipe.input !== undefined ? paths[recipe.input] : undefined;
    switch (picks[item.key]) {
      case 'default': paths[item.key] = recipe.existing?.includes(item.key) ? userFile(at('in')) : at('new'); break;
      case 'user': paths[item.key] = userFile(at('user')); break;
      case 'readonly': paths[item.key] = userFile(at('readonly')); chmodSync(at('readonly'), 0o444); break;
      case 'symlink': symlinkSync(userFile(at('target')), at('link')); paths[item.key] = at('link'); break;
      case 'input': paths[item.key] = input; break;
      case 'hardlinkToInput':
        if (input !== undefined && lstatSync(input, { throwIfNoEntry: false })?.isFile()) {
          linkSync(input, at('hardlink'));
          paths[item.key] = at('hardlink');
        } else {
          paths[item.key] = input;
        }
        break;
      case 'symlinkToInput': // a second name for the input's file, by symlink
        if (input !== undefined && lstatSync(input, { throwIfNoEntry: false })?.isFile()) {
          symlinkSync(input, at('inlink'));
          paths[item.key] = at('inlink');
        } else {
          paths[item.key] = input;
        }
        break;
      case 'inputTarget': // the file itself when the input names it through a symlink
        paths[item.key] = input !== undefined && lstatSync(input, { throwIfNoEntry: false })?.isSymbolicLink() ? realpathSync(input) : input;
        break;
      case 'devNull': paths[item.key] = '/dev/null'; break;
      case 'fifo': execFileSync('mkfifo', [at('fifo')]); paths[item.key] = at('fifo'); break;
      case 'folder': mkdirSync(at('folder')); writeFileSync(join(at('folder'), 'keep'), 'keep'); paths[item.key] = at('folder'); break;
      case 'devMissing': paths[item.key] = `/dev/iolab-missing-${process.pid}-${randomBytes(4).toString('hex')}`; break;
      case 'omit': paths[item.key] = undefined; break;
    }
  }
  return paths;
}

const tempOf = (name: string) => /^\..+\.iolab-(\d+)(?:-[0-9a-f]+)?\.tmp$/.exec(name);

/** Runs the command as the case says; SIGINT to the process group after delayMs, or SIGKILL to
 * the process once a temp file shows (mid-layout) or after delayMs. */
async function runCase(argv: string[], c: Case, dir: string) {
  const [file, args] = iolabArgv(argv);
  const child = execa(file, args, { reject: false, cwd: dir, detached: true, timeout: 60_000 });
  if (c.mode !== 'complete') {
    const until = Date.now() + c.delayMs;
    while (Date.now() < until && child.exitCode === null && !(c.mode === 'sigkill' && readdirSync(dir).some((n) => tempOf(n)))) {
      await new Promise((r) => setTimeout(r, 10));
    }
    try {
      if (c.mode === 'sigint') process.kill(-child.pid!, 'SIGINT');
      else child.kill('SIGKILL');
    } catch {
      // it ended already
    }
  }
  const r = await child;
  return { exitCode: r.exitCode, signal: r.signal, timedOut: r.timedOut, stdout: String(r.stdout), stderr: String(r.stderr), pid: child.pid! };
}

async function checkCase(surface: CommandSurface, recipe: Recipe, c: Case): Promise<void> {
  const dir = mkdtempSync(join(tmp.path, 'case-'));
  const paths = materialize(dir, recipe, surface.paths, c.picks);
  const argv = [...recipe.argv(paths, c), ...c.change];
  const what = `${argv.join(' ')} (${c.mode}${c.mode === 'complete' ? '' : ` at ${c.delayMs} ms`})`;
  const before = folderState(dir);
  const devBefore = regularFilesInDev();
  const outside = Object.values(paths).filter((p): p is string => p !== undefined && !p.startsWith(dir) && existsSync(p));
  const outsideBefore = outside.map(entryState);
  const r = await runCase(argv, c, dir);

  // no hang, no crash, no stack; a refusal is one `iolab:` line
  expect(r.timedOut, `${what}: hung`).toBe(false);
  expect(r.stderr, what).not.toMatch(/^\s+at \S/m);
  if (c.mode === 'sigkill') expect(r.signal === 'SIGKILL' || r.exitCode === 0 || r.exitCode === 1, `${what}: ${r.stderr}`).toBe(true);
  // SIGINT before iolab took the signal (Node starting) ends it as the shell reports Ctrl-C: 130
  else expect([0, 1, 130], `${what}: exit ${r.exitCode}: ${r.stderr}`).toContain(r.signal === 'SIGINT' ? 130 : r.exitCode);
  const allDefault = Object.values(c.picks).every((k) => k === 'default') && c.change.length === 0 && c.mode === 'complete';
  if (allDefault && !recipe.noSuccess) expect(r.exitCode, `${what}: the plain run must succeed: ${r.stderr}`).toBe(0);
  const refused = c.mode === 'complete' && r.exitCode === 1;
  if (refused) expect(r.stderr, what).toMatch(/^iolab: /m);

  // the same file under two items, one of them written: refused, whatever the flags
  const overlap = surface.paths.some((i) => i.mark.output && ['input', 'hardlinkToInput', 'symlinkToInput', 'inputTarget'].includes(c.picks[i.key]));
  if (overlap) expect(r.exitCode, `${what}: a file of the run given as an output must be refused`).not.toBe(0);
  // what may change: an existing file given to a declared output, with its flag, in a run not refused
  const changeable = new Set<string>();
  for (const item of surface.paths) {
    const path = paths[item.key];
    const flags = item.mark.changedBy ?? ['--force'];
    if (path !== undefined && item.mark.output && !overlap && flags.some((f) => c.change.includes(f))) changeable.add(basename(path));
  }
  const after = folderState(dir);
  for (const [name, state] of before) {
    const now = after.get(name);
    if (!changeable.has(name)) {
      expect(now, `${what}: ${name} changed`).toEqual(state);
    } else if (now?.kind === 'file' && state.kind === 'file') {
      expect(now.mode, `${what}: ${name} replaced with another mode`).toBe(state.mode);
    }
  }
  expect(outside.map(entryState), `${what}: a file outside the folder changed`).toEqual(outsideBefore);
  const created = [...after.keys()].filter((n) => !before.has(n));
  const temps = created.filter((n) => tempOf(n));
  if (refused) expect(created, `${what}: a refused run created files`).toEqual([]);
  if (c.mode !== 'sigkill') expect(temps, `${what}: temp files left`).toEqual([]);
  for (const name of created.filter((n) => !tempOf(n))) {
    expect(name, `${what}: ${name} is no new path of the run`).toMatch(/-new$/);
  }
  expect(regularFilesInDev(), `${what}: a file appeared under /dev`).toEqual(devBefore);
  // not the missing path, nor anything beside it (a lock file, a temp file)
  expect(readdirSync('/dev').filter((n) => n.startsWith(`iolab-missing-${process.pid}-`)), `${what}: left under /dev`).toEqual([]);

  // a killed run's temp files: the next run for that file (with the same flags; its other paths
  // as they should be) removes them and says so
  for (const temp of temps) {
    if (Number(tempOf(temp)![1]) !== r.pid) continue;
    const item = surface.paths.find((i) => paths[i.key] !== undefined && temp.startsWith(`.${basename(paths[i.key]!)}.iolab-`))!;
    expect(item, `${what}: ${temp} is the temp file of no path of the run`).toBeDefined();
    const clean: Case = { ...c, mode: 'complete', picks: Object.fromEntries(surface.paths.map((i) => [i.key, 'default' as const])) };
    const cleanPaths = { ...materialize(mkdtempSync(join(dir, 'clean-')), recipe, surface.paths, clean.picks), [item.key]: paths[item.key] };
    const next = await runCase([...recipe.argv(cleanPaths, clean), ...clean.change], clean, dir);
    expect(next.exitCode, `${what}: the next run: ${next.stderr}`).toBe(0);
    expect(next.stderr, what).toContain(`note: removed '${join(dir, temp)}', left by an iolab run that was killed (pid ${r.pid})`);
    expect(existsSync(join(dir, temp)), what).toBe(false);
  }
  rmSync(dir, { recursive: true, force: true });
}

let surface: Awaited<ReturnType<typeof pathSurface>>;
beforeAll(async () => {
  surface = await pathSurface();
});

describe('the path options, read from the program', () => {
  it('every option or argument that looks like a path carries a mark; every command with one has a recipe here', () => {
    expect(surface.unmarked).toEqual([]);
    const withPaths = surface.commands.filter((c) => c.paths.length > 0).map((c) => c.name).sort();
    expect(withPaths).toEqual(Object.keys(recipes).sort());
    // the surface holds what the CLI has today: an option added without a mark would be missed
    expect(withPaths).toEqual(expect.arrayContaining(['bench iops', 'bench latency', 'report', 'gen', 'writev']));
    expect(surface.commands.flatMap((c) => c.paths.filter((p) => p.mark.results).map((p) => `${c.name} ${p.key}`)).sort())
      .toEqual(['bench api --output', 'bench echo --output', 'bench http --output', 'bench iops --output', 'bench ipc --output', 'bench latency --output', 'report -o']);
  });
});

describe('nothing a user names is harmed', { timeout: 600_000 }, () => {
  for (const name of Object.keys(recipes)) {
    it(`${name}: every path option given every kind of path`, async () => {
      const command = surface.commands.find((c) => c.name === name)!;
      const recipe = recipes[name];
      // the run's input and a valid path twice as often as the rest: a run refused for another
      // reason says nothing about a file given twice
      const kinds = (item: PathItem): Candidate[] => [
        'default', 'default', 'user', 'readonly', 'symlink', 'devNull', 'fifo', 'folder', 'devMissing',
        ...(recipe.input !== undefined && item.key !== recipe.input
          ? ['input', 'input', 'hardlinkToInput', 'hardlinkToInput', 'symlinkToInput', 'inputTarget'] as const : []),
        ...(recipe.optional?.includes(item.key) ? ['omit'] as const : []),
      ];
      const changeFlags = [...new Set(command.paths.filter((p) => p.mark.output).flatMap((p) => p.mark.changedBy ?? ['--force']))]
        .filter((f) => command.flags.includes(f));
      const caseArb: fc.Arbitrary<Case> = fc.record({
        picks: fc.record(Object.fromEntries(command.paths.map((i) => [i.key, fc.constantFrom(...kinds(i))]))) as fc.Arbitrary<Record<string, Candidate>>,
        change: fc.constantFrom([], ...changeFlags.map((f) => [f])),
        mode: name.startsWith('bench ') ? fc.constantFrom<Mode>('complete', 'complete', 'sigint', 'sigkill') : fc.constant<Mode>('complete'),
        rw: fc.constantFrom('read' as const, 'randwrite' as const),
        delayMs: fc.integer({ min: 150, max: 1500 }),
      });
      const success: Case = { picks: Object.fromEntries(command.paths.map((i) => [i.key, 'default'])), change: [], mode: 'complete', rw: 'read', delayMs: 0 };
      // Every run: each output given the input's file by another name, with --force: a symlink to
      // the input, and the file a symlinked input names (both the same file only by stat, not lstat).
      const links: Case[] = recipe.input === undefined ? [] : command.paths.filter((i) => i.mark.output && i.key !== recipe.input).flatMap((out) => [
        { ...success, picks: { ...success.picks, [recipe.input!]: 'user', [out.key]: 'symlinkToInput' }, change: changeFlags.slice(0, 1) },
        { ...success, picks: { ...success.picks, [recipe.input!]: 'symlink', [out.key]: 'inputTarget' }, change: changeFlags.slice(0, 1) },
      ]);
      await fc.assert(fc.asyncProperty(caseArb, (c) => checkCase(command, recipe, c)),
        { numRuns: runsPerCommand + links.length, examples: [[success], ...links.map((l) => [l] as [Case])], endOnFailure: true });
    });
  }
});

// A name that is not UTF-8 (Latin-1 `caf\xe9.dat`): Node reads argv as UTF-8 and would make it
// 'caf\uFFFD.dat', another file, which is there too here. Every path option of every command is
// given such a name through a shell (a JS string cannot hold the byte): refused in one line that
// names the option, before anything runs; neither file nor anything else in the folder changes.
describe('a name that is not UTF-8, given to every path option', () => {
  const bad = 'iolab-not-utf8';
  /** The folder's entries by their bytes (two names that differ only there read as one string). */
  const rawState = (dir: string) => new Map(readdirSync(dir, { encoding: 'buffer' }).map((name) => {
    const path = Buffer.concat([Buffer.from(`${dir}/`), name]);
    const st = lstatSync(path);
    return [name.toString('hex'), { ino: st.ino, mode: st.mode, size: st.size, bytes: st.isFile() ? readFileSync(path).toString('hex') : '' }];
  }));
  const shellWord = (word: string, latin1: Buffer) => (word === bad
    ? `"$(printf '${[...latin1].map((b) => `\\${b.toString(8).padStart(3, '0')}`).join('')}')"`
    : `'${word.replaceAll("'", "'\\''")}'`);

  it('nor is text that is not UTF-8 taken for other bytes: writev\'s pieces', async () => {
    const dir = mkdtempSync(join(tmp.path, 'utf8-'));
    const r = await execa('/bin/sh', ['-c', `exec ${iolabArgv(['writev', 'out.txt']).flat().map((w) => shellWord(w, Buffer.alloc(0))).join(' ')} "$(printf 'caf\\351')"`],
      { reject: false, cwd: dir });
    expect({ exitCode: r.exitCode, stderr: r.stderr }).toEqual({ exitCode: 1,
      stderr: "iolab: 'caf\\xe9' is not UTF-8 text, and iolab reads the command line as UTF-8: it would be taken for other bytes; give it as UTF-8" });
    expect(readdirSync(dir)).toEqual([]);
  });

  for (const name of Object.keys(recipes)) {
    it(`${name}: refused in one line naming the option, nothing touched`, async () => {
      const command = surface.commands.find((c) => c.name === name)!;
      const recipe = recipes[name];
      for (const item of command.paths) {
        const dir = mkdtempSync(join(tmp.path, 'utf8-'));
        const picks = Object.fromEntries(command.paths.map((i) => [i.key, 'default' as const]));
        const paths = { ...materialize(dir, recipe, command.paths, picks), [item.key]: bad };
        const latin1 = Buffer.concat([Buffer.from(`${dir}/caf`), Buffer.from([0xe9]), Buffer.from('.dat')]);
        writeFileSync(latin1, 'the file the user named\n');
        writeFileSync(join(dir, 'caf\uFFFD.dat'), 'another file, the one Node\'s reading of the name gives\n');
        const before = rawState(dir);
        const complete: Case = { picks, change: [], mode: 'complete', rw: 'read', delayMs: 0 };
        const [file, args] = iolabArgv(recipe.argv(paths, complete));
        const script = `exec ${[file, ...args].map((w) => shellWord(w, latin1)).join(' ')}`;
        const r = await execa('/bin/sh', ['-c', script], { reject: false, cwd: dir, timeout: 60_000 });
        const what = `${name} ${item.key}`;
        expect(r.exitCode, `${what}: ${r.stderr}`).toBe(1);
        // an option by its flag, an argument by what the command calls it (`file`, `input`)
        const option = item.argument ? '[a-z ]+' : item.key;
        expect(String(r.stderr), what).toMatch(new RegExp(`^iolab: ${option}: '${dir}/caf\\\\xe9\\.dat' is not UTF-8 text`));
        expect(String(r.stderr).split('\n'), what).toHaveLength(1);
        expect(rawState(dir), what).toEqual(before);
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});

checkLeaksAfterAll(tmp);
