// Writes test/mutations/summary.md, the committed summary of npm run test:mutations: Stryker's
// score per folder and file for each kept sample (reports/mutation/<group>-<commit>.json, else
// <group>.json), the C mutants' per folder for each kept run (c-<commit>-<number>.json, else
// c.json), and every survivor with what became of it: the test that kills it
// now, or why it is equivalent (test/mutations/survivors.json, kept by hand; a survivor not in
// it is listed as open). A part whose report is missing keeps its section from the last summary.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { groups } from '../stryker/groups.mjs';
import { OUTSIDE } from '../stryker/sample.mjs';

const DETECTED = ['Killed', 'Timeout'];
const UNDETECTED = ['Survived', 'NoCoverage'];

const pct = (detected, valid) => (valid ? `${((100 * detected) / valid).toFixed(1)}%` : '-');
const one = (s) => s.replace(/\s+/g, ' ').trim();
const code = (s) => `\`${one(s).replaceAll('`', "'").replaceAll('|', '\\|').slice(0, 70) || '(nothing)'}\``;

/** The source text a Stryker mutant replaced. */
function originalOf(source, { start, end }) {
  const lines = source.split('\n');
  if (start.line === end.line) return lines[start.line - 1].slice(start.column - 1, end.column - 1);
  return [lines[start.line - 1].slice(start.column - 1), ...lines.slice(start.line, end.line - 1), lines[end.line - 1].slice(0, end.column - 1)].join('\n');
}

/** The annotation of a survivor, matched on file, operator, the line it is on (its text: lines
 * move), the text replaced and its replacement. */
const noteOf = (notes, s) => notes.find((v) => v.file === s.file && v.mutator === s.mutator && one(v.context) === one(s.context) &&
  one(v.original) === one(s.original) && one(v.replacement) === one(s.replacement));

/** What became of a survivor, in words. */
function verdictOf(notes, s) {
  const n = noteOf(notes, s);
  if (!n) return 'open';
  if (n.verdict === 'open') return `open: ${n.why}`; // understood, and no test kills it yet
  return n.verdict === 'equivalent' ? `equivalent: ${n.why}` : `killed by ${n.by}${n.why ? ` (${n.why})` : ''}`;
}

/** The kind of a survivor's verdict: 'killed' (by a test written after the run), 'equivalent' or 'open'. */
const kindOf = (notes, s) => noteOf(notes, s)?.verdict ?? 'open';

/** The score after the survivors' verdicts: those killed since count as detected, equivalents leave the count. */
function scoreAfter(detected, survivors, notes) {
  const kinds = survivors.map((s) => kindOf(notes, s));
  const killed = kinds.filter((k) => k === 'killed').length;
  const equivalent = kinds.filter((k) => k === 'equivalent').length;
  return pct(detected + killed, detected + survivors.length - equivalent);
}

/** A mutant's place as the sample names it (scripts/stryker/sample.mjs: Babel's lines from 1,
 * columns from 0; the report's columns count from 1). */
const placeOf = (file, { start, end }) => `${file}:${start.line}:${start.column - 1}-${end.line}:${end.column - 1}`;

/** A group's runs: each sampled run kept under its commit (reports/mutation/<group>-<commit>.json,
 * scripts/mutations/stryker.mjs), in the order they were drawn; else the last run (<group>.json). */
function runsOf(root, group) {
  const dir = join(root, 'reports/mutation');
  if (!existsSync(dir)) return [];
  const kept = readdirSync(dir).filter((f) => new RegExp(`^${group}-[0-9a-f]{7}\\+?\\.json$`).test(f))
    .map((f) => ({ report: join(dir, f), sample: join(dir, f.replace(/\.json$/, '.sample.json')) }))
    .map((run) => ({ ...run, drawn: existsSync(run.sample) ? JSON.parse(readFileSync(run.sample, 'utf8')).drawn ?? '' : '' }))
    .sort((a, b) => a.drawn.localeCompare(b.drawn));
  if (kept.length) return kept;
  const last = join(dir, `${group}.json`);
  return existsSync(last) ? [{ report: last, sample: join(dir, `${group}.sample.json`) }] : [];
}

function strykerSection(root, notes) {
  const rows = [];
  const survivors = new Map();
  const samples = [];
  let ignored = 0;
  let beside = 0;
  for (const group of Object.keys(groups)) {
    for (const run of runsOf(root, group)) {
      const report = JSON.parse(readFileSync(run.report, 'utf8'));
      // A sampled run's score counts the sampled places' mutants only: Stryker also makes those of
      // the nodes between two sampled places, one inside the other, and lists the rest as ignored
      const sample = existsSync(run.sample) ? JSON.parse(readFileSync(run.sample, 'utf8')) : undefined;
      const places = sample && new Set(sample.places.map((p) => `${p.file}:${p.start.line}:${p.start.column}-${p.end.line}:${p.end.column}`));
      const label = sample ? `sample at ${sample.commit ?? 'an earlier commit'}` : 'every place';
      if (sample) samples.push(`${group}, ${label}: ${sample.sampled.places} of ${sample.population.places} places (${sample.sampled.mutants} of ${sample.population.mutants} mutants), drawn by number ${sample.seed}`);
      for (const [file, f] of Object.entries(report.files)) {
        const all = f.mutants.filter((m) => m.statusReason !== OUTSIDE);
        const mutants = places ? all.filter((m) => places.has(placeOf(file, m.location))) : all;
        beside += all.length - mutants.length;
        const count = (statuses) => mutants.filter((m) => statuses.includes(m.status)).length;
        ignored += count(['Ignored']);
        const mine = [];
        for (const m of mutants.filter((x) => UNDETECTED.includes(x.status))) {
          const s = { file, line: m.location.start.line, mutator: m.mutatorName, status: m.status,
            context: f.source.split('\n')[m.location.start.line - 1], original: originalOf(f.source, m.location), replacement: m.replacement ?? '' };
          mine.push(s);
          // one row per survivor, however many samples drew it
          survivors.set(`${s.file} ${s.mutator} ${one(s.context)} ${one(s.original)} ${one(s.replacement)}`, s);
        }
        rows.push({ group, label, file, detected: count(DETECTED), undetected: count(UNDETECTED), noCoverage: count(['NoCoverage']),
          invalid: count(['CompileError', 'RuntimeError']), ignored: count(['Ignored']), survivors: mine });
      }
    }
  }
  if (!rows.length) return undefined;
  const out = [...(samples.length ? ['Uniform samples of the places Stryker mutates (every mutant at a sampled place; scripts/stryker/sample.mjs), each drawn anew from the code of its commit and scored on its own:',
    '', ...samples.map((s) => `- ${s}`), ...(beside ? [`- ${beside} more mutants ran, between two sampled places one inside the other: not in the scores`] : []), ''] : []),
  '| folder or file | detected | survived | of which not reached | invalid | ignored (static) | score | after the verdicts |', '|---|---|---|---|---|---|---|---|'];
  const line = (name, rs, bold) => {
    const sum = (k) => rs.reduce((a, r) => a + r[k], 0);
    const b = bold ? '**' : '';
    out.push(`| ${b}${name}${b} | ${sum('detected')} | ${sum('undetected')} | ${sum('noCoverage')} | ${sum('invalid')} | ${sum('ignored')} | ${b}${pct(sum('detected'), sum('detected') + sum('undetected'))}${b} | ${b}${scoreAfter(sum('detected'), rs.flatMap((r) => r.survivors), notes)}${b} |`);
  };
  const folders = [['src/ring', (r) => r.file.startsWith('src/ring/')],
    ['path rules (write-target, run-files, path-options)', (r) => ['src/write-target.ts', 'src/run-files.ts', 'src/path-options.ts'].includes(r.file)],
    ['src/bench/http.ts', (r) => r.file === 'src/bench/http.ts']];
  for (const [name, test] of folders) {
    const labels = [...new Set(rows.filter(test).map((r) => r.label))];
    for (const label of labels) {
      const rs = rows.filter((r) => test(r) && r.label === label);
      line(`${name}, ${label}`, rs, true);
      if (rs.length > 1) for (const r of rs.sort((a, b) => a.file.localeCompare(b.file))) line(r.file, [r], false);
    }
  }
  out.push('', `Static mutants (reached only while a module loads) are ignored (stryker.config.mjs: ignoreStatic): ${ignored} in all.`);
  out.push('', '### Stryker\'s survivors', '', '| where | mutator | replaced | by | now |', '|---|---|---|---|---|');
  for (const s of [...survivors.values()].sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line)) {
    out.push(`| ${s.file}:${s.line} | ${s.mutator}${s.status === 'NoCoverage' ? ' (not reached)' : ''} | ${code(s.original)} | ${code(s.replacement)} | ${verdictOf(notes, s)} |`);
  }
  return out.join('\n');
}

/** The text of a file's line as it is now (results written before they kept it). */
const lineOf = (root, file, line) => readFileSync(join(root, file), 'utf8').split('\n')[line - 1] ?? '';

/** The C runs, each scored on its own: those kept as reports/mutation/c-<commit>-<number>.json
 * (scripts/mutations/c-run.mjs copies each finished run there), else the last (c.json). */
function cRunsOf(root) {
  const dir = join(root, 'reports/mutation');
  if (!existsSync(dir)) return [];
  const kept = readdirSync(dir).filter((f) => /^c-[\w.+-]+\.json$/.test(f)).sort();
  const names = kept.length ? kept : readdirSync(dir).filter((f) => f === 'c.json');
  return names.map((f) => ({ name: f, report: JSON.parse(readFileSync(join(dir, f), 'utf8')) }));
}

function cSection(root, notes) {
  const runs = cRunsOf(root);
  if (!runs.length) return undefined;
  const out = [];
  const survived = new Map();
  for (const { name: runName, report } of runs) {
    out.push(`${runs.length > 1 ? `reports/mutation/${runName}: a` : 'A'} uniform sample per folder where its population is larger (\`sampled\`), drawn by number ${report.seed}${report.commit ? ` at ${report.commit}` : ''}; ${(report.seconds / 3600).toFixed(1)} h.`, '',
      '| folder | population | sampled | invalid (does not build) | killed | timeout (a hang) | survived | score | after the verdicts |', '|---|---|---|---|---|---|---|---|---|');
    for (const [name, p] of Object.entries(report.populations)) {
      const of = report.results.filter((r) => r.folder === name);
      const count = (o) => of.filter((r) => r.outcome === o).length;
      const detected = count('killed') + count('timeout');
      const survivors = of.filter((r) => r.outcome === 'survived').map((s) => ({ ...s, context: s.context ?? lineOf(root, s.file, s.line), mutator: s.operator }));
      out.push(`| ${name} | ${p.population} | ${p.sampled} | ${count('invalid')} | ${count('killed')} | ${count('timeout')} | ${count('survived')} | **${pct(detected, detected + count('survived'))}** | **${scoreAfter(detected, survivors, notes)}** |`);
      for (const s of survivors) survived.set(`${s.file}:${s.line} ${s.operator} ${one(s.original)} ${one(s.replacement)}`, s);
    }
    out.push('');
  }
  out.push('Test files run for each folder: scripts/mutations/c-run.mjs (`folders`).', '', '### The C survivors', '',
    '| where | operator | replaced | by | now |', '|---|---|---|---|---|');
  for (const s of survived.values()) {
    out.push(`| ${s.file}:${s.line} | ${s.operator} | ${code(s.original)} | ${code(s.replacement)} | ${verdictOf(notes, s)} |`);
  }
  return out.join('\n');
}

/** The section of the last summary headed `## title`, to keep when its report is missing. */
function lastSection(previous, title) {
  const at = previous.indexOf(`## ${title}\n`);
  if (at < 0) return undefined;
  const next = previous.indexOf('\n## ', at + 1);
  return previous.slice(at + title.length + 4, next < 0 ? undefined : next).trim();
}

export function writeSummary(root) {
  const file = join(root, 'test/mutations/summary.md');
  const previous = existsSync(file) ? readFileSync(file, 'utf8') : '';
  const notesFile = join(root, 'test/mutations/survivors.json');
  const notes = existsSync(notesFile) ? JSON.parse(readFileSync(notesFile, 'utf8')) : [];
  const sections = [
    ['StrykerJS (TypeScript)', strykerSection(root, notes)],
    ['C and C++ mutants by operator', cSection(root, notes)],
  ];
  const text = ['# What the tests catch: mutation scores', '',
    'Written by `npm run test:mutations` (scripts/mutations/summary.mjs) from its reports; the HTML',
    'reports stay in reports/mutation/ (not committed). A survivor\'s fate is kept by hand in',
    'test/mutations/survivors.json: the test that kills it now, why it is equivalent, or (open) what a test would need to show it.', '',
    ...sections.flatMap(([title, body]) => [`## ${title}`, '', body ?? lastSection(previous, title) ?? '(not run yet)', ''])].join('\n');
  writeFileSync(file, text);
}
