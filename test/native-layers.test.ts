// The native sources' shape: the C echo server's files call one way only (the loop, then
// accept/stop/timers, then connections: no file calls back into one above it), the stream core
// has no Node header, and no source file passes 500 lines.
import { describe, expect, it } from 'vitest';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

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
