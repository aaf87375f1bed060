// --force replaces a file whole, and the file it replaces keeps its owner, group, mode and
// extended attributes, as `sed -i` and `cp --preserve=all` keep them: as root, a user's file
// replaced by writev, gen, a benchmark's --output and report -o stays theirs and readable to
// them (src/keep-attributes.ts). The attributes are set and read with python3's os module.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCliText } from './support/cli.js';
import { cli } from './support/demo.js';
import { shortTempDir } from './support/temp.js';

const root = process.getuid?.() === 0;
const nobody = 65534;

let dir: { path: string; cleanup: () => void };
beforeAll(() => { dir = shortTempDir('iolab-keep-attrs-'); });
afterAll(() => dir.cleanup());

function setXattr(path: string, name: string, value: string): void {
  execFileSync('python3', ['-c', 'import os, sys; os.setxattr(sys.argv[1], sys.argv[2], sys.argv[3].encode())', path, name, value]);
}

function getXattr(path: string, name: string): string | undefined {
  const out = execFileSync('python3', ['-c',
    'import os, sys\ntry: print(os.getxattr(sys.argv[1], sys.argv[2]).decode(), end="")\nexcept OSError: print("<none>", end="")', path, name]);
  return out.toString() === '<none>' ? undefined : out.toString();
}

/** A file of nobody:nogroup, mode 0640, with a user.* attribute. */
function usersFile(name: string): string {
  const path = join(dir.path, name);
  writeFileSync(path, 'old contents\n');
  chownSync(path, nobody, nobody);
  chmodSync(path, 0o640);
  setXattr(path, 'user.note', 'kept');
  return path;
}

function expectKept(path: string): void {
  const st = statSync(path);
  expect({ uid: st.uid, gid: st.gid, mode: (st.mode & 0o7777).toString(8), note: getXattr(path, 'user.note') })
    .toEqual({ uid: nobody, gid: nobody, mode: '640', note: 'kept' });
}

describe.runIf(root)('--force keeps the owner, group, mode and extended attributes of what it replaces', () => {
  it('writev --force', async () => {
    const f = usersFile('notes.txt');
    const r = await runCliText(['writev', f, 'new', '--force']);
    expect(r.stderr).toBe('');
    expect(readFileSync(f, 'utf8')).toBe('new');
    expectKept(f);
  });

  it('gen --force', async () => {
    const f = usersFile('words.txt');
    const r = await runCliText(['gen', f, '--size', '4k', '--force']);
    expect(r.stderr).toBe('');
    expect(statSync(f).size).toBe(4096);
    expectKept(f);
  });

  it('a benchmark\'s --output --force, and report -o --force', async () => {
    const results = usersFile('api.json');
    const r = await runCliText(['bench', 'api', '--groups', 'read', '--only', 'iolab.readvSync', '--rounds', '1',
      '--duration', '5ms', '--size', '64k', '--output', results, '--force']);
    expect(r.stderr).toBe('round 1/1 done');
    expect(JSON.parse(readFileSync(results, 'utf8')).rows).toHaveLength(1);
    expectKept(results);
    const page = usersFile('page.html');
    const report = await runCliText(['report', results, '-o', page, '--force'], { timeout: 120_000 });
    expect(report.exitCode).toBe(0);
    expect(readFileSync(page, 'utf8')).toContain('<html');
    expectKept(page);
  }, 120_000);

  it('the set-user-ID, set-group-ID and sticky bits too (a chown clears the first two: they are set after it)', async () => {
    for (const mode of [0o4755, 0o2750, 0o1644, 0o6711]) {
      const f = usersFile(`special-${mode.toString(8)}`);
      chmodSync(f, mode);
      const r = await runCliText(['writev', f, 'new', '--force']);
      expect(r.stderr).toBe('');
      const st = statSync(f);
      expect({ uid: st.uid, gid: st.gid, mode: (st.mode & 0o7777).toString(8) }).toEqual({ uid: nobody, gid: nobody, mode: mode.toString(8) });
    }
  });

  it('a non-root run keeps what it may, and says what it could not keep', async () => {
    // nobody replacing a file of root's in a folder it may write: the owner cannot be kept
    const folder = join(dir.path, 'shared');
    chmodSync(dir.path, 0o755);
    execFileSync('mkdir', ['-m', '777', folder]);
    const f = join(folder, 'roots.txt');
    writeFileSync(f, 'old\n');
    chmodSync(f, 0o644);
    // as nobody, also where nobody cannot read the checkout (a clone under a 0700 folder)
    const r = await cli(['writev', f, 'new', '--force'], { uid: nobody, gid: nobody });
    expect(r.stderr).toBe(`note: '${f}' replaced without its owner (uid 0) and its group (gid 0): not this user's to set`);
    expect(r.exitCode).toBe(0);
    expect((statSync(f).mode & 0o7777).toString(8)).toBe('644');
  });
});
