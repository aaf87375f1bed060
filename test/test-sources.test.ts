// The test files themselves: assertions that look like checks but pass whatever the value.
// vitest's toMatchObject compares a subset key by key, and an object with no keys of its own (a
// regular expression literal is one) is a subset of anything: `toMatchObject({ message: /x/ })`
// never read the message. Thirteen of them in the channel's tests checked nothing about the
// message, so a mutant that threw another error of the same code survived. The check here finds
// such a literal as a property's value anywhere inside a toMatchObject(...) or
// objectContaining(...) call; expect.stringMatching(/x/) is what compares.
import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../src/native.js';

/** The text of each call to one of `names`, from its name to its closing parenthesis. */
function callsIn(source: string, names: string[]): { at: number; text: string }[] {
  const calls: { at: number; text: string }[] = [];
  const start = new RegExp(`\\b(?:${names.join('|')})\\(`, 'g');
  for (let m = start.exec(source); m; m = start.exec(source)) {
    let depth = 0;
    let end = m.index + m[0].length - 1;
    for (; end < source.length; end++) {
      if (source[end] === '(') depth++;
      else if (source[end] === ')' && --depth === 0) break;
    }
    calls.push({ at: m.index, text: source.slice(m.index, end + 1) });
  }
  return calls;
}

/** The places in `source` where a subset match is given a regular expression as a property's
 * value: "line: text". */
export function regexSubsets(source: string): string[] {
  return callsIn(source, ['toMatchObject', 'objectContaining'])
    // a property's value that starts a regular expression literal (a key, a colon, a slash)
    .filter((c) => /[\w'"\]]\s*:\s*\/(?![/*])/.test(c.text))
    .map((c) => `${source.slice(0, c.at).split('\n').length}: ${c.text.split('\n')[0].trim()}`);
}

describe('the test files', () => {
  it('finds a regular expression given as a subset value, on one line or over several, and not expect.stringMatching', () => {
    expect(regexSubsets("await expect(p).rejects.toMatchObject({ code: 'E', message: /more fds/ });")).toHaveLength(1);
    expect(regexSubsets('expect(e).toMatchObject({\n  code: 1,\n  stderr: /refused/,\n});')).toEqual(['1: toMatchObject({']);
    expect(regexSubsets('expect.objectContaining({ name: /x/ })')).toHaveLength(1);
    expect(regexSubsets("expect(e).toMatchObject({ message: expect.stringMatching(/more fds/) });")).toEqual([]);
    expect(regexSubsets("expect(e).toMatchObject({ path: '/tmp/a' }); // see: /x/")).toEqual([]);
  });

  it('no test gives toMatchObject or objectContaining a regular expression as a value (it would match anything)', () => {
    const dir = join(projectRoot, 'test');
    const files = readdirSync(dir, { recursive: true }).map(String).filter((f) => f.endsWith('.ts') && f !== 'test-sources.test.ts'); // (this one's samples are strings)
    expect(files.length).toBeGreaterThan(100);
    const found = files.flatMap((f) => regexSubsets(readFileSync(join(dir, f), 'utf8')).map((where) => `test/${f}:${where}`));
    expect(found).toEqual([]);
  });
});
