// The echo servers written in TypeScript (src/echo/*-server.ts) are built on iolab's public API
// alone, as a user of the package would build them: what they run, and every module of
// src/echo they load on the way, imports nothing of iolab's but src/index.ts (node:* modules
// and type-only imports aside). That shows the public API is enough to serve TCP; the C
// servers keep their own binding.
import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { projectRoot } from '../src/native.js';

const echoDir = join(projectRoot, 'src', 'echo');
const publicApi = join(projectRoot, 'src', 'index.ts');

/** The modules a file loads when it runs: static imports and re-exports that are not
 * type-only, and dynamic imports. */
function runtimeImports(file: string): string[] {
  const code = readFileSync(file, 'utf8');
  const found: string[] = [];
  for (const m of code.matchAll(/^\s*(import|export)\s+(type\s+)?([^'";]*?)\s*from\s*['"]([^'"]+)['"]/gm)) {
    if (!m[2]) found.push(m[4]);
  }
  for (const m of code.matchAll(/^\s*import\s+['"]([^'"]+)['"]/gm)) found.push(m[1]);
  for (const m of code.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) found.push(m[1]);
  return found;
}

/** Every iolab module the file loads, through src/echo's own modules: [importer, module]. */
function iolabModulesLoaded(entry: string): [string, string][] {
  const out: [string, string][] = [];
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const spec of runtimeImports(file)) {
      if (spec.startsWith('node:')) continue;
      const target = resolve(file, '..', spec.replace(/\.js$/, '.ts'));
      if (target.startsWith(echoDir + '/')) visit(target);
      else out.push([relative(projectRoot, file), spec.startsWith('.') ? relative(projectRoot, target) : spec]);
    }
  };
  visit(entry);
  return out;
}

const servers = readdirSync(echoDir).filter((name) => name.endsWith('-server.ts'));

describe("src/echo's TypeScript servers", () => {
  it('are there to check (the node, ring and duplex engines at least)', () => {
    expect(servers).toEqual(expect.arrayContaining(['node-server.ts', 'ring-server.ts', 'duplex-server.ts']));
  });

  it.each(servers)('%s loads nothing of iolab but its public API (src/index.ts)', (name) => {
    const loaded = iolabModulesLoaded(join(echoDir, name));
    const other = loaded.filter(([, module]) => join(projectRoot, module) !== publicApi);
    expect(other).toEqual([]);
  });

  it('the check sees through a module of src/echo to a private one behind it', () => {
    // servers.ts starts the C servers through the addon's binding: it must be caught
    expect(iolabModulesLoaded(join(echoDir, 'servers.ts'))).toContainEqual(['src/echo/servers.ts', 'src/native.ts']);
  });
});
