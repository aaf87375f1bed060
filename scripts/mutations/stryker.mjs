// The Stryker part of npm run test:mutations: StrykerJS over each group of scripts/stryker/groups.mjs
// in turn (stryker.config.mjs has the rest). StrykerJS 10 needs Node 22 or later: under Node 20
// it runs on the Node 24 the package tests use (scripts/node-lines.mjs), its children too (PATH).
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { nodeBin } from '../node-lines.mjs';
import { groups } from '../stryker/groups.mjs';
import { writeSample } from '../stryker/sample.mjs';

/** Copies a sampled run's report and sample as reports/mutation/<group>-<commit>.json and
 * .sample.json (the commit the sample was drawn at). */
function keepRun(root, name) {
  const dir = join(root, 'reports/mutation');
  const { commit } = JSON.parse(readFileSync(join(dir, `${name}.sample.json`), 'utf8'));
  if (!commit) return;
  for (const suffix of ['.json', '.sample.json', '.html']) {
    if (existsSync(join(dir, `${name}${suffix}`))) copyFileSync(join(dir, `${name}${suffix}`), join(dir, `${name}-${commit}${suffix}`));
  }
}

/** Runs Stryker over `names` (all groups by default); `extra`: Stryker's own options; `sample`:
 * places to draw per group ({ ring: 50 }: scripts/stryker/sample.mjs; a group not named runs whole),
 * `seed` the number that draws them. Resolves the groups that failed to run (a survivor is not a
 * failure: the summary shows them). */
export async function runStryker(root, { names = Object.keys(groups), extra = [], sample = {}, seed = 1 } = {}) {
  const major = Number(process.versions.node.split('.')[0]);
  const bin = major >= 22 ? join(process.execPath, '..') : nodeBin(24);
  const failed = [];
  for (const name of names) {
    if (!groups[name]) throw new Error(`no Stryker group ${name} (${Object.keys(groups).join(', ')})`);
    const t0 = Date.now();
    console.log(`\nStryker: ${name} (${groups[name].mutate.join(' ')})`);
    const sampleFile = join(root, 'reports/mutation', `${name}.sample.json`);
    rmSync(sampleFile, { force: true });
    if (sample[name]) {
      await writeSample(root, name, sample[name], seed);
      const { population, sampled } = JSON.parse(readFileSync(sampleFile, 'utf8'));
      console.log(`a sample: ${sampled.places} of ${population.places} places, ${sampled.mutants} of ${population.mutants} mutants`);
    }
    const code = await new Promise((resolve) => {
      const child = spawn(join(bin, 'node'), ['--import', './scripts/stryker/typescript-api.mjs',
        'node_modules/@stryker-mutator/core/bin/stryker.js', 'run', ...extra],
      { cwd: root, stdio: 'inherit', env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, IOLAB_STRYKER_GROUP: name,
        ...(sample[name] && { IOLAB_STRYKER_SAMPLE: sampleFile }) } });
      // Ctrl-C reaches Stryker too (the same process group): it stops and removes its sandbox
      child.on('close', (c, signal) => resolve(signal ? 130 : c));
    });
    console.log(`Stryker: ${name} took ${((Date.now() - t0) / 60_000).toFixed(0)} min; report: reports/mutation/${name}.html`);
    // a sample's run is kept beside the others under its commit: the summary scores each sample
    // on its own (an independent draw shows what the tests catch beyond the last one's answers)
    if (code === 0 && sample[name]) keepRun(root, name);
    if (code === 130) process.exit(130);
    if (code !== 0) failed.push(name);
  }
  return failed;
}
