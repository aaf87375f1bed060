// The public API as written down: every ```js example of docs/api.md and README's library
// example run as written (their `from 'iolab'` pointed at this checkout's src/index.ts), each in
// a process of its own; the exports are exactly the documented ones; and loading the API leaves
// the addon's own functions as the addon made them.
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { native, projectRoot } from '../src/native.js';
import * as api from '../src/index.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';

const tmp = shortTempDir('iolab-apidocs-');
checkLeaksAfterAll(tmp);

const index = pathToFileURL(join(projectRoot, 'src', 'index.ts')).href;
const tsx = pathToFileURL(join(projectRoot, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href;

/** The ```js blocks of a markdown file that import from 'iolab'. */
function examples(file: string): string[] {
  const text = readFileSync(join(projectRoot, file), 'utf8');
  return [...text.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]).filter((code) => code.includes("from 'iolab'"));
}

/** Runs one example in its own Node process, in the temp folder (with readv.c beside it). */
function runExample(code: string, name: string): { status: number | null; output: string } {
  const file = join(tmp.path, `${name}.mjs`);
  writeFileSync(file, code.replaceAll("from 'iolab'", `from '${index}'`));
  writeFileSync(join(tmp.path, 'readv.c'), readFileSync(join(projectRoot, 'readv.c')));
  const r = spawnSync(process.execPath, ['--import', tsx, file], { cwd: tmp.path, encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

describe('docs/api.md and README', () => {
  const apiExamples = examples('docs/api.md');

  it('docs/api.md has an example for each part of the API', () => {
    expect(apiExamples.length).toBeGreaterThanOrEqual(4);
  });

  it.each(apiExamples.map((code, i) => [i + 1, code]))('docs/api.md example %i runs as written', (i, code) => {
    const r = runExample(code as string, `api-example-${i}`);
    expect(r.output).not.toMatch(/Error/);
    expect(r.status).toBe(0);
  });

  it("README's library example runs as written and prints what its comments say", () => {
    const [code] = examples('README.md');
    expect(code).toBeDefined();
    const r = runExample(code, 'readme-example');
    expect(r.status).toBe(0);
    expect(r.output).toBe('5 1\n18 hello from a memfd\n');
  });
});

describe('the public surface', () => {
  it('exports exactly the documented names', () => {
    const documented = readFileSync(join(projectRoot, 'docs/api.md'), 'utf8')
      .split('\n').filter((l) => l.startsWith('| `'))
      .flatMap((l) => [...l.split('|')[1].matchAll(/`(\w+)(?:\(\))?`/g)].map((m) => m[1]));
    expect(Object.keys(api).sort()).toEqual([...new Set(documented)].sort());
  });

  it('keeps the raw addon private and unpatched', () => {
    expect(Object.keys(api)).not.toContain('native');
    // the Ring is a class of its own over the addon's ring object, whose methods stay native
    expect(api.Ring).not.toBe(native.Ring);
    for (const name of Object.getOwnPropertyNames(native.Ring.prototype)) {
      const d = Object.getOwnPropertyDescriptor(native.Ring.prototype, name)!;
      if (name !== 'constructor' && typeof d.value === 'function') expect(String(d.value), name).toContain('[native code]');
    }
    for (const [name, value] of Object.entries(native)) {
      if (typeof value === 'function') expect(String(value), name).toContain('[native code]');
    }
  });
});
