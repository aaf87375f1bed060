// The sampled Stryker run (scripts/stryker/sample.mjs and sample-ignorer.mjs): the places are
// drawn from Stryker's own list, the same each run and nested as the count grows, and the
// instrumenter then makes every mutant of a sampled place and none elsewhere but between two
// sampled places, one inside the other (those the summary leaves out of the score).
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { projectRoot } from '../src/native.js';
// @ts-expect-error: plain .mjs modules without types
import { placesOf, readSample, writeSample } from '../scripts/stryker/sample.mjs';

type Place = { file: string; start: { line: number; column: number }; end: { line: number; column: number }; mutants: number };
const keyOf = (p: Omit<Place, 'mutants'>) => `${p.file}:${p.start.line}:${p.start.column}-${p.end.line}:${p.end.column}`;
const dir = mkdtempSync(join(tmpdir(), 'iolab-stryker-sample-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

describe('a sample of the places Stryker mutates', () => {
  it('lists every mutant of the group once, by place', async () => {
    const { mutants, places } = await placesOf(projectRoot, 'paths');
    expect(mutants).toBeGreaterThan(100);
    expect(places.reduce((a: number, p: Place) => a + p.mutants, 0)).toBe(mutants);
    expect(new Set(places.map(keyOf)).size).toBe(places.length);
    for (const p of places) expect(['src/write-target.ts', 'src/run-files.ts', 'src/path-options.ts']).toContain(p.file);
  });

  it('draws the same places for the same number, a larger count keeping the smaller one', async () => {
    const draw = async (count: number, seed: number) =>
      readSample(await writeSample(projectRoot, 'paths', count, seed, join(dir, `${count}-${seed}.json`))).places.map(keyOf) as string[];
    const [ten, again, twenty, other] = [await draw(10, 1), await draw(10, 1), await draw(20, 1), await draw(10, 2)];
    expect(again).toEqual(ten);
    expect(ten).toHaveLength(10);
    for (const k of ten) expect(twenty).toContain(k);
    expect(other).not.toEqual(ten);
  });

  it('makes every mutant of a sampled place, and outside them only between two nested places', async () => {
    const path = await writeSample(projectRoot, 'paths', 40, 3, join(dir, 'run.json'));
    const sample = readSample(path);
    // the instrumenter as Stryker drives it: the places as ranges (0-based lines), the ignorer loaded
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', `
      import { readFileSync } from 'node:fs';
      const { Instrumenter } = await import('@stryker-mutator/instrumenter');
      const { strykerPlugins } = await import('./scripts/stryker/sample-ignorer.mjs');
      const sample = JSON.parse(readFileSync(process.env.IOLAB_STRYKER_SAMPLE, 'utf8'));
      const ranges = new Map();
      for (const p of sample.places) ranges.set(p.file, [...(ranges.get(p.file) ?? []),
        { start: { line: p.start.line - 1, column: p.start.column }, end: { line: p.end.line - 1, column: p.end.column } }]);
      const files = [...ranges].map(([name, mutate]) => ({ name, content: readFileSync(name, 'utf8'), mutate }));
      const quiet = { debug() {}, trace() {}, info() {}, warn() {}, error: console.error, fatal: console.error,
        isDebugEnabled: () => false, isTraceEnabled: () => false, isInfoEnabled: () => false };
      const r = await new Instrumenter(quiet).instrument(files, { ignorers: [strykerPlugins[0].value], excludedMutations: [], plugins: null, noHeader: false });
      console.log(JSON.stringify(r.mutants.map((m) => ({ file: m.fileName, ignored: m.status === 'Ignored',
        start: { line: m.location.start.line + 1, column: m.location.start.column }, end: { line: m.location.end.line + 1, column: m.location.end.column } }))));
    `], { cwd: projectRoot, env: { ...process.env, IOLAB_STRYKER_SAMPLE: path }, encoding: 'utf8' });
    const made = JSON.parse(out) as (Omit<Place, 'mutants'> & { ignored: boolean })[];
    const live = made.filter((m) => !m.ignored);
    const places = new Map<string, Place>(sample.places.map((p: Place) => [keyOf(p), p]));
    for (const [key, p] of places) expect(live.filter((m) => keyOf(m) === key), key).toHaveLength(p.mutants);
    const before = (a: Place['start'], b: Place['start']) => a.line < b.line || (a.line === b.line && a.column <= b.column);
    const inside = (outer: Omit<Place, 'mutants'>, inner: Omit<Place, 'mutants'>) =>
      outer.file === inner.file && before(outer.start, inner.start) && before(inner.end, outer.end);
    for (const m of live.filter((x) => !places.has(keyOf(x)))) {
      const between = [...places.values()].some((outer) => inside(outer, m) && [...places.values()].some((inner) => inner !== outer && inside(m, inner)));
      expect(between, keyOf(m)).toBe(true);
    }
    expect(made.filter((m) => m.ignored).length).toBeGreaterThan(0);
  });
});
