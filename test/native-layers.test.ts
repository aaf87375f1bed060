// The native sources' shape: the C echo server's files call one way only (the loop, then
// accept/stop/timers, then connections: no file calls back into one above it), no two files of the
// built addon call each other round a circle (read from the objects' symbols, so a call through any
// header counts), the stream core has no Node header, and no source file passes 500 lines.
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { stronglyConnected } from './support/circles.js';

const root = join(import.meta.dirname, '..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');

/** The non-static functions a C file defines (a definition starts at the line's beginning). */
function defined(source: string): string[] {
  return [...source.matchAll(/^(?!static\b)[A-Za-z_][\w\s*]*?\b(\w+)\([^;]*?\)\s*\{/gm)].map((m) => m[1]!);
}

/** Which of `names` the source calls. */
function calls(source: string, names: string[]): string[] {
  return names.filter((n) => new RegExp(`\\b${n}\\(`).test(source));
}

describe('native layers', () => {
  // Top to bottom: each file may call only those after it.
  const layers = ['native/echo/uring_server.c', 'native/echo/uring_control.c', 'native/echo/uring_conn.c'];

  it('the uring echo server: each file calls only the files below it', () => {
    const sources = layers.map(read);
    const defs = sources.map(defined);
    expect(defs[1]).toContain('us_on_accept'); // the pattern finds definitions at all
    expect(defs[2]).toContain('us_add_conn');
    const upward: string[] = [];
    layers.forEach((file, i) => {
      for (let above = 0; above < i; above++) {
        for (const name of calls(sources[i]!, defs[above]!)) upward.push(`${file} calls ${name} of ${layers[above]}`);
      }
    });
    expect(upward).toEqual([]);
  });

  it('no circle of calls between the addon\'s files (undefined symbols of each object against the defined)', () => {
    const circles = callCircles(join(root, 'build/Release/obj.target/iolab'));
    // One C++ class whose methods are split over files for size calls itself across them: those
    // files are one module, so their circle is known and listed; any other circle, or a file
    // joining one of these, fails. Plain C files (.c) have none.
    const knownClassFiles = [
      'native/ring/core.cc native/ring/core_close.cc native/ring/core_reap.cc native/ring/direct.cc', // RingCore
      'native/ring/bufring.cc native/ring/stream.cc', // RingStreams
      'native/ring/io_op.cc native/ring/io_table.cc', // IoOp: the op and its table of kinds
    ];
    expect(circles.map((c) => c.files.join(' ')).filter((c) => !knownClassFiles.includes(c)), JSON.stringify(circles, null, 1)).toEqual([]);
    expect(circles.flatMap((c) => c.files).filter((f) => f.endsWith('.c'))).toEqual([]);
  });

  it('the stream core includes no Node header', () => {
    for (const name of readdirSync(join(root, 'native/stream'))) {
      expect(read(`native/stream/${name}`), name).not.toMatch(/#include\s*[<"](napi|node_api|node|uv)[\w.]*\.h/);
    }
  });

  it('no source file passes 500 lines', () => {
    const long: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(join(root, dir))) {
        const path = `${dir}/${name}`;
        if (statSync(join(root, path)).isDirectory()) walk(path);
        else if (/\.(c|cc|h|ts|mjs)$/.test(name) && read(path).split('\n').length > 501) long.push(path);
      }
    };
    for (const dir of ['native', 'src', 'scripts', 'test']) walk(dir);
    expect(long).toEqual([]);
  });
});

/** The circles (strongly connected sets of two or more files) of calls between the addon's
 * objects: file A calls file B when an undefined symbol of A's object is defined in B's. */
function callCircles(objDir: string): { files: string[]; calls: string[] }[] {
  expect(existsSync(objDir), `${objDir}: build the addon from source first`).toBe(true);
  const objects: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.o')) objects.push(path);
    }
  };
  walk(objDir);
  const owner = new Map<string, string>();
  const undefinedBy = new Map<string, string[]>();
  for (const object of objects) {
    const undef: string[] = [];
    for (const line of execFileSync('nm', ['-P', object], { encoding: 'utf8' }).split('\n')) {
      const [name, type] = line.split(' ');
      if (type === 'U') undef.push(name!);
      else if (type && 'TDBR'.includes(type)) owner.set(name!, object); // weak (inline, template) ones are every caller's own
    }
    undefinedBy.set(object, undef);
  }
  const edges = new Map(objects.map((o) => [o, new Map<string, string[]>()]));
  for (const [object, undef] of undefinedBy) {
    for (const symbol of undef) {
      const to = owner.get(symbol);
      if (!to || to === object) continue;
      const list = edges.get(object)!.get(to) ?? [];
      edges.get(object)!.set(to, [...list, symbol]);
    }
  }
  const found = stronglyConnected(new Map([...edges].map(([o, to]) => [o, [...to.keys()]])));
  const source = (object: string) => {
    const base = relative(objDir, object).replace(/\.o$/, '');
    return existsSync(join(root, `${base}.c`)) ? `${base}.c` : `${base}.cc`;
  };
  return found.map((set) => ({
    files: set.map(source).sort(),
    calls: set.flatMap((a) => [...edges.get(a)!].filter(([b]) => set.includes(b)).map(([b, s]) => `${source(a)} -> ${source(b)}: ${s.join(', ')}`)),
  }));
}
