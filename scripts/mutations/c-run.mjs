// The C part of npm run test:mutations: each mutant of scripts/mutations/c-mutants.mjs is applied,
// the addon rebuilt (a mutant that does not build is invalid, not counted), the test files that
// cover its folder run under a hard bound (a hang is a kill), and the file restored. Where a
// folder has more mutants than --c-sample, the same uniform sample is drawn each run (--seed S draws another).
// Results: reports/mutation/c.json (each mutant as it ends, so --resume goes on from there) and a
// table per folder. Run it in a copy of the tree that nothing else uses meanwhile: it rewrites
// native/ and build/.
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { mutantsOf, sample } from './c-mutants.mjs';
import { buildAddon, Changes, runTests } from './run-tests.mjs';
import { commitOf } from '../stryker/sample.mjs';

/** The folders the issue named, their files, and the test files that cover them. */
export const folders = {
  channel: {
    files: ['native/channel/*.c'],
    tests: ['test/channel.test.ts', 'test/channel-hostile.test.ts', 'test/channel-bounds.test.ts', 'test/channel-protocol.test.ts',
      'test/channel-process.test.ts', 'test/channel-fuzz.test.ts', 'test/channel-close-race.test.ts'],
  },
  ring: {
    files: ['native/ring/core*.cc', 'native/ring/setup.cc'],
    // (the guard and deferred list: ring-reentrancy; ops made weak and strong again: ring-server's unref)
    tests: ['test/ring.test.ts', 'test/ring-close.test.ts', 'test/ring-batch.test.ts', 'test/ring-signal.test.ts',
      'test/ring-cq.test.ts', 'test/ring-latency.test.ts', 'test/ring-bufring-close.test.ts', 'test/ring-process.test.ts',
      'test/ring-server.test.ts', 'test/ring-reentrancy.test.ts', 'test/ring-model.test.ts'],
  },
  stream: {
    files: ['native/stream/*.c'],
    // (the Ring's streams, and the C echo server over the same core: echo-native)
    tests: ['test/ring-bufring.test.ts', 'test/ring-bufring-starved.test.ts', 'test/ring-stream-sends.test.ts',
      'test/ring-stream-eof.test.ts', 'test/ring-stream-pause.test.ts', 'test/ring-stream-handlers.test.ts', 'test/ring-duplex.test.ts',
      'test/echo-native.test.ts', 'test/ring-model.test.ts', 'test/stream-byte-queue.test.ts'],
  },
  parent_death: {
    files: ['native/parent_death.cc'],
    tests: ['test/parent-death.test.ts'],
  },
  rename: {
    files: ['native/sys/rename.cc'],
    tests: ['test/write-targets.test.ts', 'test/bench-output.test.ts'],
  },
};

/** The files a folder's patterns name (a * in the last part only). */
function filesOf(root, patterns) {
  return patterns.flatMap((p) => {
    const slash = p.lastIndexOf('/');
    const [dir, name] = [p.slice(0, slash), p.slice(slash + 1)];
    const re = new RegExp(`^${name.replace(/[.]/g, '\\.').replace(/\*/g, '.*')}$`);
    return readdirSync(join(root, dir)).filter((f) => re.test(f)).sort().map((f) => `${dir}/${f}`);
  });
}

const idOf = (file, m) => createHash('sha1').update(`${file}\0${m.start}\0${m.end}\0${m.replacement}`).digest('hex').slice(0, 12);

/** Every folder's population and, where it is larger than its size, its sample (the same each
 * run; a larger size draws the smaller sample and more). `size`: one for all, or { ring: 24,
 * default: 16 }. */
export function plan(root, { size = Infinity, seed = 1, only } = {}) {
  const out = {};
  for (const [name, folder] of Object.entries(folders)) {
    if (only && !only.includes(name)) continue;
    const n = typeof size === 'object' ? (size[name] ?? size.default ?? Infinity) : size;
    const population = filesOf(root, folder.files).flatMap((file) =>
      mutantsOf(readFileSync(join(root, file), 'utf8')).map((m) => ({ id: idOf(file, m), folder: name, file, ...m })));
    out[name] = { population: population.length, mutants: sample(population, n, seed), tests: folder.tests.filter((t) => existsSync(join(root, t))) };
  }
  return out;
}

function table(results, planned) {
  const rows = [['folder', 'population', 'sampled', 'invalid', 'killed', 'timeout', 'survived', 'score']];
  for (const [name, p] of Object.entries(planned)) {
    const of = results.filter((r) => r.folder === name);
    const count = (o) => of.filter((r) => r.outcome === o).length;
    const valid = count('killed') + count('timeout') + count('survived');
    rows.push([name, p.population, p.mutants.length, count('invalid'), count('killed'), count('timeout'), count('survived'),
      valid ? `${((100 * (count('killed') + count('timeout'))) / valid).toFixed(1)}%` : '-']);
  }
  return rows;
}

export function printTable(rows) {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => String(r[i]).length)));
  for (const r of rows) console.log(r.map((c, i) => String(c).padEnd(widths[i])).join('  '));
}

/** Runs the C mutants. options: { size, seed, only (folder names), resume, out, boundMs }. */
export async function runCMutants(root, options = {}) {
  const out = options.out ?? join(root, 'reports/mutation/c.json');
  mkdirSync(join(out, '..'), { recursive: true });
  const planned = plan(root, options);
  const last = existsSync(out) ? JSON.parse(readFileSync(out, 'utf8')) : undefined;
  const previous = options.resume && last ? last.results : [];
  const done = new Map(previous.map((r) => [r.id, r]));
  // A run of some folders keeps the others' results from the last report (same sample's number)
  const kept = options.only && last && last.seed === (options.seed ?? 1) ? last : { populations: {}, results: [] };
  const keptResults = kept.results.filter((r) => !planned[r.folder]);
  const results = [];
  const t0 = Date.now();
  const seconds0 = options.only ? Object.keys(kept.populations).filter((n) => !planned[n]).reduce((a, n) => a + (kept.populations[n].seconds ?? 0), 0) : 0;
  const populations = () => Object.fromEntries(Object.keys(folders).flatMap((n) => (planned[n]
    ? [[n, { population: planned[n].population, sampled: planned[n].mutants.length, tests: planned[n].tests,
      seconds: results.filter((r) => r.folder === n).reduce((a, r) => a + (r.seconds ?? 0), 0) }]]
    : kept.populations[n] ? [[n, kept.populations[n]]] : [])));
  const commit = commitOf(root); // before any mutant is written into the tree
  const save = () => writeFileSync(out, `${JSON.stringify({ seed: options.seed ?? 1, commit, populations: populations(),
    seconds: seconds0 + (Date.now() - t0) / 1000, results: [...keptResults, ...results] }, null, 1)}\n`);
  for (const [name, p] of Object.entries(planned)) {
    console.log(`${name}: ${p.mutants.length} of ${p.population} mutants, tests: ${p.tests.join(' ')}`);
  }
  const changes = new Changes(root);
  try {
    for (const [name, p] of Object.entries(planned)) {
      // the bound: the folder's tests on the unchanged tree, three times over (at least two minutes)
      if (!buildAddon(root)) throw new Error('the addon does not build without mutants');
      const base = await runTests(root, p.tests, { timeoutMs: 900_000 });
      if (base.outcome !== 'survived') throw new Error(`${name}: its tests fail without a mutant: ${base.note}`);
      const boundMs = options.boundMs ?? Math.max(120_000, Math.round(base.seconds * 3000));
      console.log(`${name}: the tests take ${base.seconds.toFixed(0)} s unchanged; bound ${(boundMs / 1000).toFixed(0)} s`);
      for (const m of p.mutants) {
        const known = done.get(m.id);
        if (known) { results.push(known); continue; }
        const text = readFileSync(join(root, m.file), 'utf8');
        if (text.slice(m.start, m.end) !== m.original) throw new Error(`${m.file} changed under the run`);
        changes.write(m.file, text.slice(0, m.start) + m.replacement + text.slice(m.end));
        const r = { id: m.id, folder: name, file: m.file, line: m.line, operator: m.operator, original: m.original, replacement: m.replacement,
          context: text.split('\n')[m.line - 1].trim() };
        if (!buildAddon(root)) {
          Object.assign(r, { outcome: 'invalid', note: 'does not build' });
        } else {
          const run = await runTests(root, p.tests, { timeoutMs: boundMs });
          Object.assign(r, { outcome: run.outcome, seconds: run.seconds, note: run.note });
        }
        changes.restore();
        results.push(r);
        save();
        const what = `${m.file}:${m.line} ${m.operator}: ${m.original.replace(/\s+/g, ' ').slice(0, 60)} -> ${m.replacement.replace(/\s+/g, ' ').slice(0, 40)}`;
        console.log(`${r.outcome.padEnd(8)} ${what}${r.seconds ? ` (${r.seconds.toFixed(0)} s)` : ''}`);
      }
    }
  } finally {
    changes.finish();
    save();
  }
  // kept beside the other runs under its commit and number: the summary scores each on its own
  if (commit && !options.out) copyFileSync(out, join(root, 'reports/mutation', `c-${commit}-${options.seed ?? 1}.json`));
  console.log(`\nC mutants (drawn by number ${options.seed ?? 1}), ${((Date.now() - t0) / 60_000).toFixed(0)} min:`);
  printTable(table(results, planned));
  return { results, planned };
}
