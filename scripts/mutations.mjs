// The mutation runner (npm run test:mutations): applies each mutation of test/mutations/list.json
// (a plausible bug: one `find` in one file, replaced), rebuilds what changed (the addon for a file
// under native/; the TypeScript is compiled by the tests' global setup), runs the test files the
// entry names and counts the mutation killed when they fail. It restores every file it changed,
// on failure and on Ctrl-C too, and rebuilds the addon once at the end. Too slow for every run
// (a native rebuild each); run it before handing a change over and quote its kill rate.
//   node scripts/mutations.mjs [--only id,id] [--sample N] [--seed S] [--recheck] [--list]
// --sample N runs N entries drawn with the seed (a different seed each day unless given); entries
// marked `recheck` (code being rewritten) run only with --recheck.
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const list = JSON.parse(readFileSync(join(root, 'test/mutations/list.json'), 'utf8'));
const arg = (name) => { const i = process.argv.indexOf(name); return i > 0 ? process.argv[i + 1] : undefined; };

/** Checks an entry against the tree; returns why it cannot be applied, or undefined. */
export function problemOf(entry, text) {
  if (!entry.id || !entry.file || !entry.find || entry.replace === undefined || !entry.tests?.length) return 'needs id, file, find, replace, tests';
  if (text === undefined) return `${entry.file} is not there`;
  const count = text.split(entry.find).length - 1;
  if (count !== 1) return `find occurs ${count} times in ${entry.file}, not once`;
  if (entry.find === entry.replace) return 'replace is find';
  return undefined;
}

function pick(entries) {
  const only = arg('--only')?.split(',');
  if (only) return entries.filter((e) => only.includes(e.id));
  const n = Number(arg('--sample') ?? 0);
  if (!n) return entries;
  let seed = Number(arg('--seed') ?? Math.floor(Date.now() / 86_400_000));
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const shuffled = entries.map((e) => [random(), e]).sort((a, b) => a[0] - b[0]).map(([, e]) => e);
  return shuffled.slice(0, n);
}

const build = () => spawnSync('npx', ['node-gyp', 'build', '-j', '1'], { cwd: root, encoding: 'utf8' }).status === 0;

function main() {
  if (process.argv.includes('--list')) {
    for (const e of list) console.log(`${e.id.padEnd(28)} ${e.file}${e.recheck ? `  (re-check: ${e.recheck})` : ''}`);
    return;
  }
  // TypeScript first; native ones last, so each native build also undoes the one before
  const recheck = process.argv.includes('--recheck');
  const skipped = list.filter((e) => e.recheck && !recheck);
  for (const e of skipped) console.log(`skipped   ${e.id}: re-check (${e.recheck}); --recheck runs it`);
  const chosen = pick(list.filter((e) => recheck || !e.recheck)).sort((a, b) => Number(a.file.startsWith('native/')) - Number(b.file.startsWith('native/')));
  const originals = new Map();
  const restore = () => { for (const [file, text] of originals) writeFileSync(join(root, file), text); originals.clear(); };
  let nativeDirty = false;
  process.on('SIGINT', () => { restore(); if (nativeDirty) build(); process.exit(130); });
  const results = [];
  try {
    for (const entry of chosen) {
      const path = join(root, entry.file);
      let text;
      try { text = readFileSync(path, 'utf8'); } catch { /* reported below */ }
      const problem = problemOf(entry, text);
      if (problem) { results.push({ entry, outcome: 'invalid', note: problem }); console.log(`invalid   ${entry.id}: ${problem}`); continue; }
      originals.set(entry.file, text);
      writeFileSync(path, text.replace(entry.find, entry.replace));
      const t0 = Date.now();
      if (entry.file.startsWith('native/')) {
        nativeDirty = true;
        if (!build()) { restore(); results.push({ entry, outcome: 'invalid', note: 'does not build' }); console.log(`invalid   ${entry.id}: does not build`); continue; }
      }
      const args = ['vitest', 'run', ...entry.tests, ...(entry.filter ? ['-t', entry.filter] : [])];
      // A mutation can hang a test's worker past vitest's own timeouts (a loop in the addon): 5 min
      // is a kill, reported as such.
      // (in a session of its own, so the workers go with it: killing npx alone leaves them)
      const r = spawnSync('setsid', ['npx', ...args], { cwd: root, encoding: 'utf8', env: { ...process.env, IOLAB_MUTATION: entry.id }, timeout: 300_000, killSignal: 'SIGKILL' });
      if (r.error && r.pid) try { process.kill(-r.pid, 'SIGKILL'); } catch { /* gone */ }
      restore();
      const outcome = r.status === 0 ? 'survived' : 'killed';
      if (r.error) r.stdout = `× timed out after 5 min\n${r.stdout ?? ''}`;
      const failed = (r.stdout + r.stderr).replace(/\x1b\[[0-9;]*m/g, '').split('\n').find((l) => /^\s*(×|FAIL|AssertionError|Error:)/.test(l))?.trim();
      results.push({ entry, outcome, note: failed });
      console.log(`${outcome.padEnd(9)} ${entry.id} (${((Date.now() - t0) / 1000).toFixed(0)} s)${failed ? `: ${failed.slice(0, 160)}` : ''}`);
    }
  } finally {
    restore();
    if (nativeDirty && !build()) console.log('the addon did not build back: run npx node-gyp build');
  }
  const killed = results.filter((r) => r.outcome === 'killed').length;
  const survived = results.filter((r) => r.outcome === 'survived');
  const invalid = results.filter((r) => r.outcome === 'invalid').length;
  const rate = killed + survived.length > 0 ? (100 * killed) / (killed + survived.length) : 0;
  console.log(`\n${killed} killed, ${survived.length} survived, ${invalid} invalid of ${results.length} run (list: ${list.length}): kill rate ${rate.toFixed(0)}%`);
  for (const s of survived) console.log(`survived: ${s.entry.id} (${s.entry.file}): ${s.entry.why}`);
  if (survived.length || invalid) process.exitCode = 1;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
