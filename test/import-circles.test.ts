// The TypeScript sources' shape: no two files of src/ import each other round a circle. Every
// import counts: type-only ones (a circle of types is still two files that are one module or a
// layer upside down), re-exports and import() expressions.
import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { stronglyConnected } from './support/circles.js';

const root = join(import.meta.dirname, '..');

/** The relative module specifiers of a TypeScript source: import/export ... from, side-effect
 * imports, import() (in code or in a type). */
function importedSpecifiers(source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const patterns = [
    /\b(?:import|export)\b[^;'"]*?\bfrom\s*['"](\.{1,2}\/[^'"]+)['"]/g,
    /\bimport\s*['"](\.{1,2}\/[^'"]+)['"]/g,
    /\bimport\s*\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g,
  ];
  return patterns.flatMap((p) => [...code.matchAll(p)].map((m) => m[1]!));
}

/** Each .ts file under `dir` (relative to the checkout) and the files of it that it imports. */
function importGraph(dir: string): Map<string, string[]> {
  const files: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(join(root, d))) {
      const path = `${d}/${name}`;
      if (statSync(join(root, path)).isDirectory()) walk(path);
      else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) files.push(path);
    }
  };
  walk(dir);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const to = importedSpecifiers(readFileSync(join(root, file), 'utf8')).map((spec) => {
      const target = relative(root, join(root, dirname(file), spec.replace(/\.js$/, '.ts')));
      expect(existsSync(join(root, target)), `${file} imports ${spec}: no such source`).toBe(true);
      return target;
    });
    graph.set(file, [...new Set(to)]);
  }
  return graph;
}

describe('import circles', () => {
  it('reads every kind of import', () => {
    const source = `import a from './a.js';\nimport type { B } from '../b.js';\nexport { c } from './c.js';\nexport type {\n  D,\n} from './d.js';\nimport './e.js';\nconst f = await import('./f.js');\ntype G = import('./g.js').G;\n// import x from './comment.js';\nimport fs from 'node:fs';`;
    expect(importedSpecifiers(source)).toEqual(['./a.js', '../b.js', './c.js', './d.js', './e.js', './f.js', './g.js']);
  });

  it('finds a circle, type-only imports included', () => {
    const graph = new Map([['a', ['b']], ['b', ['c']], ['c', ['a']], ['d', ['a']]]);
    expect(stronglyConnected(graph).map((set) => set.sort())).toEqual([['a', 'b', 'c']]);
  });

  it('no two files of src/ import each other round a circle', () => {
    const graph = importGraph('src');
    expect(graph.get('src/ring/index.ts')).toContain('src/ring/socket.ts'); // the graph is read at all
    const circles = stronglyConnected(graph).map((set) => set.sort().map((file) => `${file} -> ${graph.get(file)!.filter((to) => set.includes(to)).join(', ')}`));
    expect(circles).toEqual([]);
  });
});
