// The C mutant generator (scripts/mutations/c-mutants.mjs, run by npm run test:mutations --c):
// each operator the issue named, only inside function bodies, never in a comment, a string or a
// preprocessor line; the same seed draws the same sample. And the runner's map names test files
// that exist, for folders that hold code.
import { describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
// @ts-expect-error: a plain .mjs module without types
import { mutantsOf, sample } from '../scripts/mutations/c-mutants.mjs';
// @ts-expect-error: a plain .mjs module without types
import { folders, plan } from '../scripts/mutations/c-run.mjs';

interface Mutant { operator: string; original: string; replacement: string; line: number; start: number; end: number }

const source = `#include <stdio.h>
#define LIMIT (a < b && c > d)
static const int table[] = { 1, 2 };  /* x < y && z */
struct pair { int a; int b; };
// if (a < b) return 3;
static int pick(int a, int b) {
  const char *s = "a < b || 7";
  if (a < b && b != 0 || a >= 9) return 0;
  foo(a, b);
  a += 1;
  return a == b;
}
`;

const mutants: Mutant[] = mutantsOf(source);
const of = (operator: string) => mutants.filter((m) => m.operator === operator).map((m) => `${m.original} -> ${m.replacement}`);

describe('the C mutant generator', () => {
  it('flips and shifts every relational operator, swaps && and ||, and drops each condition of a compound if', () => {
    expect(of('relational flipped')).toEqual(['< -> >=', '!= -> ==', '>= -> <', '== -> !=']);
    expect(of('relational shifted')).toEqual(['< -> <=', '>= -> >']);
    expect(of('logical swapped')).toEqual(['&& -> ||', '|| -> &&']);
    expect(of('condition dropped')).toEqual(['a < b && -> ', '&& b != 0 -> ', '|| a >= 9 -> ']);
  });

  it('moves integer constants by one, deletes each statement that is not a declaration, swaps neighbouring arguments', () => {
    expect(of('constant +1')).toEqual(['0 -> 1', '9 -> 10', '0 -> 1', '1 -> 2']);
    expect(of('constant -1')).toEqual(['0 -> -1', '9 -> 8', '0 -> -1', '1 -> 0']);
    expect(of('statement deleted')).toEqual(['if (a < b && b != 0 || a >= 9) return 0; -> ;', 'return 0; -> ;', 'foo(a, b); -> ;',
      'a += 1; -> ;', 'return a == b; -> ;']);
    expect(of('arguments swapped')).toEqual(['a, b -> b, a']);
  });

  it('mutates only inside function bodies: never a comment, a string, a #define or a file-level initializer', () => {
    const body = [source.indexOf('static int pick'), source.lastIndexOf('}')];
    for (const m of mutants) expect(m.start > body[0] && m.end <= body[1], `${m.operator} at line ${m.line}`).toBe(true);
    expect(mutants.some((m) => m.line === 7)).toBe(false); // the string's line holds a declaration only
    const cpp = mutantsOf('void f() { std::vector<char*> v; static_cast<int>(x); if (a < b) g(); }') as Mutant[];
    expect(cpp.filter((m) => m.operator.startsWith('relational')).map((m) => m.original)).toEqual(['<', '<']);
  });

  it('draws the same uniform sample for a seed, and another for another seed', () => {
    const items = Array.from({ length: 1000 }, (_, i) => i);
    const a: number[] = sample(items, 50, 7);
    expect(a).toEqual(sample(items, 50, 7));
    expect(a).not.toEqual(sample(items, 50, 8));
    expect(new Set(a).size).toBe(50);
    expect(a).toEqual([...a].sort((x, y) => x - y));
  });

  it("maps every folder to files that hold mutants and to test files that exist", () => {
    const root = join(import.meta.dirname, '..');
    const planned = plan(root, { size: 1 }) as Record<string, { population: number; tests: string[] }>;
    for (const [name, folder] of Object.entries(folders as Record<string, { tests: string[] }>)) {
      expect(planned[name].population, name).toBeGreaterThan(10);
      for (const t of folder.tests) expect(existsSync(join(root, t)), t).toBe(true);
    }
  });

  it('samples per folder: a size of its own, the same draw each run, a larger one keeping the smaller', () => {
    const root = join(import.meta.dirname, '..');
    type Planned = Record<string, { mutants: { id: string }[] }>;
    const ids = (p: Planned, name: string) => p[name].mutants.map((m) => m.id);
    const small = plan(root, { size: { ring: 4, default: 2 }, only: ['ring', 'rename'] }) as Planned;
    const large = plan(root, { size: { ring: 12, default: 2 }, only: ['ring', 'rename'] }) as Planned;
    expect([ids(small, 'ring').length, ids(small, 'rename').length, ids(large, 'ring').length]).toEqual([4, 2, 12]);
    expect(ids(plan(root, { size: { ring: 4, default: 2 }, only: ['ring'] }) as Planned, 'ring')).toEqual(ids(small, 'ring'));
    for (const id of ids(small, 'ring')) expect(ids(large, 'ring')).toContain(id);
    expect(ids(plan(root, { size: 4, seed: 2, only: ['ring'] }) as Planned, 'ring')).not.toEqual(ids(small, 'ring'));
  });
});
