// A uniform sample of the places Stryker mutates in a group, for a run whose full population would
// take longer than the machine has (npm run test:mutations -- --stryker --stryker-sample ring=50). A place
// is one node of the source: every mutant Stryker makes there is run, none elsewhere. Drawn by the
// C mutator's generator (the same number draws the same sample on every machine), from the mutants
// Stryker's own instrumenter lists, so nobody chooses them. The sample's file
// (reports/mutation/<group>.sample.json) is read by stryker.config.mjs (the places as mutate
// ranges) and by scripts/stryker/sample-ignorer.mjs (a range also takes in the nodes inside it:
// those are ignored, reported as outside the sample).
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { sample } from '../mutations/c-mutants.mjs';
import { groups } from './groups.mjs';

export const OUTSIDE = 'outside the sample';

const quiet = { debug() {}, trace() {}, info() {}, warn: console.warn, error: console.error, fatal: console.error,
  isDebugEnabled: () => false, isTraceEnabled: () => false, isInfoEnabled: () => false };

/** A group's pattern as files: a path, or a folder's `**\/*.ts` (Node 20 has no fs.globSync). */
function filesOf(root, pattern) {
  const deep = pattern.match(/^(.*)\/\*\*\/\*(\.\w+)$/);
  if (!deep) return [pattern];
  return readdirSync(join(root, deep[1]), { recursive: true }).filter((f) => f.endsWith(deep[2])).map((f) => `${deep[1]}/${f}`);
}

/** Every place Stryker would mutate in the group, with how many mutants each has: { file, start,
 * end (Babel's lines, from 1), mutants }. */
export async function placesOf(root, name) {
  const { Instrumenter } = await import('@stryker-mutator/instrumenter');
  const names = groups[name].mutate.flatMap((pattern) => filesOf(root, pattern)).sort();
  const files = names.map((file) => ({ name: file, content: readFileSync(join(root, file), 'utf8'), mutate: true }));
  const { mutants } = await new Instrumenter(quiet).instrument(files, { ignorers: [], excludedMutations: [], plugins: null, noHeader: false });
  const places = new Map();
  for (const { fileName, location: { start, end } } of mutants) {
    const key = `${fileName}:${start.line + 1}:${start.column}-${end.line + 1}:${end.column}`;
    const place = places.get(key) ?? { file: fileName, start: { line: start.line + 1, column: start.column },
      end: { line: end.line + 1, column: end.column }, mutants: 0 };
    place.mutants += 1;
    places.set(key, place);
  }
  return { mutants: mutants.length, places: [...places.values()] };
}

/** The commit the sample is drawn at (short), with `+` when the tree has changes of its own. */
export function commitOf(root) {
  try {
    const head = execFileSync('git', ['rev-parse', '--short=7', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: root, encoding: 'utf8' }).trim() !== '';
    return dirty ? `${head}+` : head;
  } catch {
    return undefined; // not a git checkout (an unpacked copy)
  }
}

/** Draws `count` places of the group and writes the sample's file; returns its path. */
export async function writeSample(root, name, count, seed = 1, out = join(root, 'reports/mutation', `${name}.sample.json`)) {
  const population = await placesOf(root, name);
  const places = sample(population.places, count, seed);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify({ group: name, seed, commit: commitOf(root), drawn: new Date().toISOString(), population: { mutants: population.mutants, places: population.places.length },
    sampled: { places: places.length, mutants: places.reduce((a, p) => a + p.mutants, 0) }, places }, null, 1)}\n`);
  return out;
}

export const rangeOf = (p) => `${p.file}:${p.start.line}:${p.start.column}-${p.end.line}:${p.end.column}`;

export function readSample(path) {
  return JSON.parse(readFileSync(path, 'utf8'));
}
