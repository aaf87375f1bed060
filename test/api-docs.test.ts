// The public API as written down: every ```js example of docs/api.md and README's library
// example run as written (their 'iolab' pointed at this checkout's src/index.ts), each in a
// process of its own, on Node 24 when it says it needs it; every ```cjs one as a CommonJS file
// that requires the compiled package (dist/, as npm ships it); the exports are exactly the
// documented ones; and loading the API leaves the addon's own functions as the addon made them.
import { describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
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

const compiled = join(projectRoot, 'dist', 'index.js');

/** The ```js (or ```cjs) blocks of a markdown file that load 'iolab'. */
function examples(file: string, kind = 'js'): string[] {
  const text = readFileSync(join(projectRoot, file), 'utf8');
  return [...text.matchAll(new RegExp(`\`\`\`${kind}\n([\\s\\S]*?)\`\`\``, 'g'))].map((m) => m[1])
    .filter((code) => /(from |import\(|require\()'iolab'/.test(code));
}

/** The `node` an example runs on: Node 24's for one that starts `// Node 24 and later`. */
function nodeFor(code: string): string {
  if (!code.startsWith('// Node 24 and later')) return process.execPath;
  const bin = execFileSync(process.execPath, [join(projectRoot, 'scripts', 'node-lines.mjs'), '24'], { encoding: 'utf8' }).trim();
  return join(bin, 'node');
}

/** Runs one example in its own Node process, in the temp folder (with readv.c beside it). */
function runExample(code: string, name: string): { status: number | null; output: string } {
  const cjs = /require\('iolab'\)/.test(code);
  const file = join(tmp.path, `${name}.${cjs ? 'cjs' : 'mjs'}`);
  // a worker's import('iolab') loads the compiled package: tsx's hooks do not reach workers on Node 20
  const source = code.replaceAll("require('iolab')", `require(${JSON.stringify(compiled)})`)
    .replaceAll("import('iolab')", `import(${JSON.stringify(pathToFileURL(compiled).href)})`).replaceAll("from 'iolab'", `from '${index}'`);
  writeFileSync(file, source);
  writeFileSync(join(tmp.path, 'readv.c'), readFileSync(join(projectRoot, 'readv.c')));
  const r = spawnSync(nodeFor(code), cjs ? [file] : ['--import', tsx, file], { cwd: tmp.path, encoding: 'utf8', timeout: 60_000 });
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

  it('docs/api.md has a CommonJS example, and it runs as written against the compiled package', () => {
    const [code] = examples('docs/api.md', 'cjs');
    expect(code).toBeDefined();
    const r = runExample(code, 'api-example-cjs');
    expect(r.output).toBe('');
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
