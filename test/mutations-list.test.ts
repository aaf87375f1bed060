// The mutation runner's kept list (test/mutations/list.json, run by npm run test:mutations) stays
// true to the tree: each entry's text occurs once in its file, its tests exist, and it names why
// the mutation is a plausible bug. An entry whose code moved fails here, not silently in the runner.
// The runner itself refuses options it does not take.
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
// @ts-expect-error: a plain .mjs script without types
import { problemOf } from '../scripts/mutations.mjs';

const root = join(import.meta.dirname, '..');
interface Entry { id: string; file: string; find: string; replace: string; tests: string[]; why: string; filter?: string; recheck?: string }
const list: Entry[] = JSON.parse(readFileSync(join(root, 'test/mutations/list.json'), 'utf8'));

describe('the mutation list', () => {
  it('has at least 40 entries, each id once, across the stream core, the Ring, RingSocket, path rules, fio, echo servers and generator', () => {
    expect(list.length).toBeGreaterThanOrEqual(40);
    expect(new Set(list.map((e) => e.id)).size).toBe(list.length);
    const areas = ['native/stream/', 'native/ring/', 'src/ring/stream.ts', 'src/ring/duplex.ts', 'src/run-files.ts', 'src/write-target.ts',
      'src/bench/fio-', 'native/echo/loadgen', 'native/echo/uring_', 'native/echo/epoll_server.c', 'src/echo/'];
    for (const area of areas) expect(list.some((e) => e.file.startsWith(area)), area).toBe(true);
  });

  it.each(list.map((e) => [e.id, e] as const))('%s applies to the tree and names its tests and why', (_id, entry) => {
    const path = join(root, entry.file);
    // a list being rewritten elsewhere (re-check) may have moved on; it is then skipped, and says so
    if (entry.recheck !== undefined && (!existsSync(path) || problemOf(entry, readFileSync(path, 'utf8')) !== undefined)) return;
    expect(problemOf(entry, existsSync(path) ? readFileSync(path, 'utf8') : undefined)).toBeUndefined();
    for (const test of entry.tests) expect(existsSync(join(root, test)), test).toBe(true);
    expect(entry.why.length).toBeGreaterThan(10);
  });
});

describe('npm run test:mutations', () => {
  // (an unknown option used to be ignored: the runner then ran every part, for hours)
  it('refuses an unknown option or one without its value in one line, before it changes anything; --help lists the options', () => {
    const run = (...args: string[]) => spawnSync(process.execPath, [join(root, 'scripts/mutations.mjs'), ...args], { encoding: 'utf8', timeout: 20_000 });
    expect(run('--bogus')).toMatchObject({ status: 2, stdout: '', stderr: 'mutations: unknown option --bogus (--help lists the options)\n' });
    expect(run('--c', '--folders')).toMatchObject({ status: 2, stderr: 'mutations: --folders needs a value (--help lists the options)\n' });
    const help = run('--help');
    expect(help.status).toBe(0);
    for (const option of ['--stryker', '--group', '--stryker-sample', '--c', '--folders', '--c-sample', '--list', '--only', '--seed', '--resume']) {
      expect(help.stdout).toContain(option);
    }
  });
});
