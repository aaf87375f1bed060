// The kept list, test/mutations/list.json: plausible bugs written down once (a `find` in one file
// and its replacement, the test files that must fail, why it is a bug), kept as regression
// entries now that Stryker and the C generator choose the mutants. Each is applied, what changed
// is rebuilt (the addon for a file under native/; the TypeScript is compiled by the tests' global
// setup), its test files run, and the file restored.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildAddon, Changes, runTests } from './run-tests.mjs';

/** Checks an entry against the tree; returns why it cannot be applied, or undefined. */
export function problemOf(entry, text) {
  if (!entry.id || !entry.file || !entry.find || entry.replace === undefined || !entry.tests?.length) return 'needs id, file, find, replace, tests';
  if (text === undefined) return `${entry.file} is not there`;
  const count = text.split(entry.find).length - 1;
  if (count !== 1) return `find occurs ${count} times in ${entry.file}, not once`;
  if (entry.find === entry.replace) return 'replace is find';
  return undefined;
}

export function readList(root) {
  return JSON.parse(readFileSync(join(root, 'test/mutations/list.json'), 'utf8'));
}

function pick(entries, { only, sample, seed }) {
  if (only) return entries.filter((e) => only.includes(e.id));
  if (!sample) return entries;
  let s = seed ?? Math.floor(Date.now() / 86_400_000);
  const random = () => ((s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  return entries.map((e) => [random(), e]).sort((a, b) => a[0] - b[0]).map(([, e]) => e).slice(0, sample);
}

/** Runs the list's entries. options: { only: ids, sample: N, seed, recheck }. Returns the results. */
export async function runList(root, options = {}) {
  const list = readList(root);
  const skipped = list.filter((e) => e.recheck && !options.recheck);
  for (const e of skipped) console.log(`skipped   ${e.id}: re-check (${e.recheck}); --recheck runs it`);
  // TypeScript first; native ones last, so each native build also undoes the one before
  const chosen = pick(list.filter((e) => options.recheck || !e.recheck), options)
    .sort((a, b) => Number(a.file.startsWith('native/')) - Number(b.file.startsWith('native/')));
  const changes = new Changes(root);
  const results = [];
  try {
    for (const entry of chosen) {
      let text;
      try { text = readFileSync(join(root, entry.file), 'utf8'); } catch { /* reported below */ }
      const problem = problemOf(entry, text);
      if (problem) { results.push({ entry, outcome: 'invalid', note: problem }); console.log(`invalid   ${entry.id}: ${problem}`); continue; }
      changes.write(entry.file, text.replace(entry.find, entry.replace));
      if (entry.file.startsWith('native/') && !buildAddon(root)) {
        changes.restore();
        results.push({ entry, outcome: 'invalid', note: 'does not build' });
        console.log(`invalid   ${entry.id}: does not build`);
        continue;
      }
      // a mutation can hang a test's worker past vitest's own timeouts (a loop in the addon): 5 min is a kill
      const r = await runTests(root, entry.tests, { timeoutMs: 300_000, filter: entry.filter, env: { IOLAB_MUTATION: entry.id } });
      changes.restore();
      const outcome = r.outcome === 'survived' ? 'survived' : 'killed';
      results.push({ entry, outcome, note: r.note });
      console.log(`${outcome.padEnd(9)} ${entry.id} (${r.seconds.toFixed(0)} s)${r.note ? `: ${r.note.slice(0, 160)}` : ''}`);
    }
  } finally {
    changes.finish();
  }
  const killed = results.filter((r) => r.outcome === 'killed').length;
  const survived = results.filter((r) => r.outcome === 'survived');
  const invalid = results.filter((r) => r.outcome === 'invalid').length;
  const rate = killed + survived.length > 0 ? (100 * killed) / (killed + survived.length) : 0;
  console.log(`\nlist: ${killed} killed, ${survived.length} survived, ${invalid} invalid of ${results.length} run (list: ${list.length}): kill rate ${rate.toFixed(0)}%`);
  for (const s of survived) console.log(`survived: ${s.entry.id} (${s.entry.file}): ${s.entry.why}`);
  return { results, ok: survived.length === 0 && invalid === 0 };
}
