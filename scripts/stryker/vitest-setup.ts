// Stryker's vitest runner tells the mutant to run only to the test's own process (a global its
// setup file sets). The tests also run iolab as a child (dist/cli.js, compiled by the global setup
// from the sandbox's instrumented src/, so holding every mutant) and child scripts over dist/;
// the instrumented code of a child takes the mutant from __STRYKER_ACTIVE_MUTANT__ in its
// environment, which children inherit from here. In the first run (the one that measures which
// test reaches which mutant), children report what they reached (child-coverage.mjs) and it is
// added to the test that started them.
import { afterAll, afterEach, inject } from 'vitest';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

interface Coverage { static: Record<string, number>; perTest: Record<string, Record<string, number>> }
interface Namespace { mutantCoverage?: Coverage; currentTestId?: string }
type Task = { name: string; file?: { filepath: string }; suite?: { name: string; suite?: unknown } };

const mode = inject('mode' as never) as 'mutant' | 'dry-run';
const namespace = (inject('globalNamespace' as never) as string | undefined) ?? '__stryker__';
const isRunning = (pid: number) => { try { process.kill(pid, 0); return true; } catch { return false; } };
const ns = () => ((globalThis as Record<string, unknown>)[namespace] ??= {}) as Namespace;

if (mode === 'mutant') {
  process.env.__STRYKER_ACTIVE_MUTANT__ = String(inject('activeMutant' as never));
} else {
  delete process.env.__STRYKER_ACTIVE_MUTANT__;
  const dir = mkdtempSync(join(tmpdir(), 'iolab-stryker-children-'));
  process.env.IOLAB_STRYKER_CHILD_COVERAGE = dir;
  const hook = join(import.meta.dirname, 'child-coverage.mjs');
  process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} --import=${hook}`.trim();

  /** Adds what the children wrote to `into`: a child still running (a server a file started
   * before its tests) counts for every test it lives through; a finished child's file goes. */
  const takeChildren = (into: Record<string, number>) => {
    for (const name of readdirSync(dir)) {
      let ids: string[] = [];
      try { ids = JSON.parse(readFileSync(join(dir, name), 'utf8')); } catch { continue; /* being written */ }
      for (const id of ids) into[id] = (into[id] ?? 0) + 1;
      if (!isRunning(Number(name.split('-')[0]))) rmSync(join(dir, name), { force: true });
    }
  };
  const coverage = (): Coverage => (ns().mutantCoverage ??= { static: {}, perTest: {} });

  // The same id Stryker's setup gives the test (runs before its afterEach, which forgets it).
  const testId = (task: Task) => {
    const names = [task.name];
    for (let s = task.suite as Task | undefined; s; s = s.suite as Task | undefined) names.unshift(s.name);
    return `${task.file?.filepath ?? 'unknown.js'}#${names.join(' ').trim()}`;
  };
  const testsOfFile: string[] = [];
  afterEach(({ task }) => {
    const id = ns().currentTestId ?? testId(task as unknown as Task);
    testsOfFile.push(id);
    takeChildren(coverage().perTest[id] ??= {});
  });
  afterAll(() => {
    // what children wrote after the file's last test (at their exit): every test of the file may
    // have caused it
    const late: Record<string, number> = {};
    takeChildren(late);
    for (const id of testsOfFile) Object.assign(coverage().perTest[id] ??= {}, late);
    rmSync(dir, { recursive: true, force: true });
  });
}
