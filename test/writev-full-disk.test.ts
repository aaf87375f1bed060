// `iolab writev` on a file system that fills up mid-write (a 64 KiB tmpfs mounted for this file,
// with 8 KiB left): a new file, or one replaced with --force, is renamed into place only once
// complete, so nothing is left under the user's name (nor a temp file); --append of a record
// that cannot be written whole cuts the file back, so it is left as it was. Plain and through
// a Ring alike.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, statfsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCliText } from './support/cli.js';
import { shortTempDir } from './support/temp.js';
import { checkLeaksAfterAll } from './support/leaks.js';

const tmp = shortTempDir('iolab-full-');
const mount = join(tmp.path, 'full');
let mounted: string | undefined;
const skip = process.geteuid?.() !== 0 ? 'mounting a tmpfs needs root' : undefined;
checkLeaksAfterAll(tmp); // its afterAll runs after the unmount below: hooks run last first

beforeAll(() => {
  if (skip) return;
  mkdirSync(mount);
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k,mode=0755', `iolab-full-${process.pid}`, mount]);
  mounted = mount;
});
afterAll(() => {
  if (mounted) execFileSync('umount', [mounted]);
});

/** Empties the file system, puts the user's file there (when given), and fills the rest but 8 KiB. */
function nearlyFull(userFile?: string): void {
  for (const name of readdirSync(mount)) rmSync(join(mount, name), { force: true });
  if (userFile) writeFileSync(join(mount, userFile), 'kept as it was\n');
  const st = statfsSync(mount);
  writeFileSync(join(mount, 'filler'), Buffer.alloc(Number(st.bavail) * Number(st.bsize) - 8192));
}

const text = 'x'.repeat(20_000); // more than the 8 KiB left: the first writev is short, the next ENOSPC
const state = () => readdirSync(mount).sort().map((n) => `${n}:${statSync(join(mount, n)).size}`);

describe.skipIf(skip !== undefined)(`writev on a full file system${skip ? ` (skipped: ${skip})` : ''}`, () => {
  it.each([[[]], [['--io-uring']]])('a new file (%j): nothing left under its name or a temp name, one line, exit 1', async (variant) => {
    nearlyFull();
    const before = state();
    const path = join(mount, 'new.txt');
    const r = await runCliText(['writev', path, text, ...variant]);
    expect(r).toEqual({ exitCode: 1, stdout: '', stderr: `iolab: cannot write '${path}' (ENOSPC: no space left on device); no file was made` });
    expect(state()).toEqual(before);
    // a short text still fits: the same command succeeds
    expect((await runCliText(['writev', path, 'hello', ...variant])).exitCode).toBe(0);
    expect(readFileSync(path, 'utf8')).toBe('hello');
  });

  it.each([[[]], [['--io-uring']]])('--append (%j) of a record that cannot be written whole: the file is left as it was', async (variant) => {
    nearlyFull('log.txt');
    const before = state();
    const path = join(mount, 'log.txt');
    const r = await runCliText(['writev', '--append', path, text, ...variant]);
    expect(r).toEqual({ exitCode: 1, stdout: '', stderr: `iolab: cannot append to '${path}' (ENOSPC: no space left on device); the file is left as it was` });
    expect(readFileSync(path, 'utf8')).toBe('kept as it was\n');
    expect(state()).toEqual(before);
    const missing = join(mount, 'missing.txt');
    const made = await runCliText(['writev', '--append', missing, text, ...variant]);
    expect(made.stderr).toBe(`iolab: cannot append to '${missing}' (ENOSPC: no space left on device); no file was made`);
    expect(state()).toEqual(before);
  });

  it('--force: the file it would replace is left as it was', async () => {
    nearlyFull('notes.txt');
    const before = state();
    const path = join(mount, 'notes.txt');
    const r = await runCliText(['writev', '--force', path, text]);
    expect(r).toEqual({ exitCode: 1, stdout: '', stderr: `iolab: cannot replace '${path}' (ENOSPC: no space left on device); the file is left as it was` });
    expect(readFileSync(path, 'utf8')).toBe('kept as it was\n');
    expect(state()).toEqual(before);
  });
});
