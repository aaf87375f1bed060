// A tour killed with SIGKILL runs no cleanup: its temp folder and its shm demo's object stay.
// The next tour removes them (each name carries the dead tour's pid) and says so; a live
// tour's are left alone.
import { afterAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { iolabArgv } from './support/cli.js';
import { newProcessTag, processesTagged, processTagVariable, waitFor } from './support/procs.js';
import { shortTempDir } from './support/temp.js';

const tmp = shortTempDir('iolab-tourleft-');
afterAll(() => tmp.cleanup());

/** A pid that ran and is gone. */
function deadPid(): number {
  return Number(execFileSync('sh', ['-c', 'sh -c "echo \\$\\$"']).toString().trim());
}

describe('tour after a tour that was killed', () => {
  it('removes the dead tour\'s temp folder and shared-memory objects, and says so', async () => {
    const pid = deadPid();
    const folder = join(tmp.path, `iolab-tour-${pid}-AbC123`);
    mkdirSync(join(folder, 'io_uring'), { recursive: true });
    writeFileSync(join(folder, 'notes.txt'), 'left');
    const objects = [`/dev/shm/iolab-tour-${pid}`, `/dev/shm/iolab-tour-${pid}-io_uring`];
    for (const o of objects) writeFileSync(o, 'left');
    // a live process's leftovers-to-be stay: this test's own pid
    const live = join(tmp.path, `iolab-tour-${process.pid}-XyZ789`);
    mkdirSync(live);
    const [file, argv] = iolabArgv(['tour']);
    const r = await execa(file, argv, { reject: false, env: { ...process.env, TMPDIR: tmp.path } });
    expect(r.exitCode).toBe(0);
    expect(String(r.stderr).split('\n').sort()).toEqual([
      `note: removed the shared-memory object '${objects[0]}', left by a tour that was killed (pid ${pid})`,
      `note: removed the shared-memory object '${objects[1]}', left by a tour that was killed (pid ${pid})`,
      `note: removed the temp folder '${folder}', left by a tour that was killed (pid ${pid})`,
    ].sort());
    expect(existsSync(folder)).toBe(false);
    for (const o of objects) expect(existsSync(o)).toBe(false);
    expect(existsSync(live)).toBe(true);
  }, 90_000);

  it('a dead tour\'s folder that cannot be removed is said in a note; the tour still runs and exits 0', async () => {
    // (a demo process of the killed tour, dying too, can still add a file while the folder goes:
    // ENOTEMPTY, retried; a mount inside it stays, EBUSY, each time)
    const pid = deadPid();
    const folder = join(tmp.path, `iolab-tour-${pid}-MnT456`);
    const mount = join(folder, 'mounted');
    mkdirSync(mount, { recursive: true });
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'iolab-test', mount]);
    try {
      const [file, argv] = iolabArgv(['tour']);
      const r = await execa(file, argv, { reject: false, env: { ...process.env, TMPDIR: tmp.path } });
      expect(r.exitCode, `${r.stdout}\n${r.stderr}`).toBe(0);
      expect(String(r.stderr)).toMatch(new RegExp(`^note: could not remove the temp folder '${folder}', left by a tour that was killed \\(pid ${pid}\\): (EBUSY|Device or resource busy)`, 'm'));
      expect(existsSync(mount)).toBe(true);
    } finally {
      execFileSync('umount', [mount]);
      rmSync(folder, { recursive: true, force: true });
    }
  }, 90_000);

  it('a real tour killed with SIGKILL: the next one leaves nothing of it', async () => {
    const [file, argv] = iolabArgv(['tour']);
    const tag = newProcessTag();
    const env = { ...process.env, TMPDIR: tmp.path, [processTagVariable]: tag };
    const child = execa(file, argv, { reject: false, env });
    let seen = '';
    await new Promise<void>((resolve) => child.stdout!.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      if (/^== shm:/m.test(seen) || /^== writev:/m.test(seen)) resolve();
    }));
    child.kill('SIGKILL');
    await child;
    // its demo children die with it (a slow machine, or the sanitized build, takes them a moment,
    // and one still writing in the folder would keep it): the next tour starts once they are gone
    await waitFor('the killed tour\'s children gone', () => processesTagged(tag).length === 0, 60_000);
    const mine = () => readdirSync(tmp.path).filter((n) => n.startsWith(`iolab-tour-${child.pid}-`));
    expect(mine()).toHaveLength(1);
    const next = await execa(file, argv, { reject: false, env });
    expect(next.exitCode, `${next.stdout}\n${next.stderr}`).toBe(0);
    expect(String(next.stderr)).toContain(`left by a tour that was killed (pid ${child.pid})`);
    expect(mine()).toEqual([]);
    expect(readdirSync('/dev/shm').filter((n) => n.startsWith(`iolab-tour-${child.pid}`))).toEqual([]);
  }, 120_000);
});
