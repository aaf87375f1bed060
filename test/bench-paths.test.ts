// The storage benchmark's files as a user names them: a mistyped device under /dev is refused
// (never a file in memory measured as the disk), an existing file iolab did not create keeps its
// size (--force lets a job write into it, not grow it), a FIFO or a folder as the job file is one
// line at once, and the temp file of a layout killed by SIGKILL is removed by the next run for
// that file, which says so (a live run's is left alone).
import { describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, runCliText } from './support/cli.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';
import { waitFor } from './support/procs.js';
import { regularFilesInDev } from './support/path-surface.js';

const tmp = shortTempDir('iolab-bpaths-');
const at = (name: string) => join(tmp.path, name);
/** A name under /dev that no device has: unique to this process and run. */
const missingDevice = () => `/dev/iolab-missing-${process.pid}-${randomBytes(3).toString('hex')}`;

describe('a device under /dev that does not exist', () => {
  it('--filename is refused in one line, as fio refuses it without size=; nothing appears under /dev', async () => {
    const before = regularFilesInDev();
    const dev = missingDevice();
    for (const rw of ['randread', 'randwrite']) {
      const r = await runCliText(['bench', 'iops', '--filename', dev, '--rw', rw, '--size', '1m', '--number_ios', '10', '--ioengine', 'psync']);
      expect(r).toEqual({ exitCode: 1, stdout: '', stderr: `iolab: --filename: '${dev}' does not exist, and iolab creates no file in ` +
        '/dev (devtmpfs); name a device that exists (fio, too, refuses a missing one without size=)' });
    }
    expect(existsSync(dev)).toBe(false);
    expect(regularFilesInDev()).toEqual(before);
  });

  it("a job file in the shape of fio's basic-verify example, filename=/dev/XXX as written: refused", async () => {
    const dev = missingDevice();
    const job = at('basic-verify.fio');
    writeFileSync(job, `; write a device, then read it back and verify\n[write-and-verify]\nrw=randwrite\nbs=4k\ndirect=1\n` +
      `ioengine=libaio\niodepth=16\nverify=crc32c\nfilename=${dev}\n`);
    const r = await runCliText(['bench', 'iops', job, '--number_ios', '16']);
    expect(r.exitCode).toBe(1);
    // the job has no size=, which fio's own reading refuses first, as fio does
    expect(r.stderr).toBe(`iolab: write-and-verify: no size for '${dev}', which does not exist yet ` +
      '(fio refuses it too: "you need to specify size="); give size=');
    expect(existsSync(dev)).toBe(false);
    // with a size, the rule of /dev refuses it
    writeFileSync(job, `[write-and-verify]\nrw=randwrite\nbs=4k\nsize=1m\nfilename=${dev}\n`);
    const sized = await runCliText(['bench', 'iops', job, '--number_ios', '16']);
    expect(sized.exitCode).toBe(1);
    expect(sized.stderr).toMatch(new RegExp(`^iolab: .*'${dev}' does not exist, and iolab creates no file in /dev`));
    expect(existsSync(dev)).toBe(false);
  });
});

describe('an existing file iolab did not create', () => {
  it('keeps its size under --force (no --size: its own, as fio takes it); --size says otherwise', async () => {
    const f = at('foreign.dat');
    writeFileSync(f, randomBytes(1 << 20));
    const r = await runCliText(['bench', 'iops', '--filename', f, '--rw', 'randwrite', '--number_ios', '10', '--ioengine', 'psync', '--force']);
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    expect(statSync(f).size).toBe(1 << 20);
    const grown = await runCliText(['bench', 'iops', '--filename', f, '--rw', 'randwrite', '--number_ios', '10', '--ioengine', 'psync',
      '--force', '--size', '2m']);
    expect(grown.exitCode).toBe(0);
    expect(statSync(f).size).toBe(2 << 20);
  });
});

describe('a job file that is no regular file', () => {
  it('a FIFO and a folder: one line at once', async () => {
    const fifo = at('job.fifo');
    execFileSync('mkfifo', [fifo]);
    const folder = at('jobs');
    mkdirSync(folder);
    const t0 = Date.now();
    // the timeout only ends a run that waits for a writer of the FIFO: a fixed iolab never meets it
    expect(await runCliText(['bench', 'iops', fifo], { timeout: 20_000 }))
      .toEqual({ exitCode: 1, stdout: '', stderr: `iolab: ${fifo}: a FIFO (named pipe), not a regular file; name a fio job file` });
    expect(Date.now() - t0).toBeLessThan(15_000);
    expect(await runCliText(['bench', 'iops', folder]))
      .toEqual({ exitCode: 1, stdout: '', stderr: `iolab: ${folder}: is a folder; name a fio job file` });
  });
});

describe('the temp file of a layout killed by SIGKILL', () => {
  it('is removed by the next run for that file, which says so; a live run\'s temp file stays', async () => {
    const f = at('killed.dat');
    const temps = () => readdirSync(tmp.path).filter((n) => n.startsWith('.killed.dat.iolab-'));
    const child = runCli(['bench', 'iops', '--filename', f, '--size', '8g', '--ioengine', 'psync']);
    await waitFor('the layout\'s temp file', () => temps().length > 0, 60_000);
    child.kill('SIGKILL');
    await child;
    const left = temps();
    expect(left).toEqual([`.killed.dat.iolab-${child.pid}.tmp`]);
    // a temp file whose pid runs (this test's) is some live run's: left alone
    const live = `.killed.dat.iolab-${process.pid}.tmp`;
    writeFileSync(at(live), 'a live run is writing this');
    const r = await runCliText(['bench', 'iops', '--filename', f, '--size', '1m', '--number_ios', '10', '--ioengine', 'psync']);
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toBe(`note: removed '${at(left[0])}', left by an iolab run that was killed (pid ${child.pid})`);
    expect(temps()).toEqual([live]);
    expect(readFileSync(at(live), 'utf8')).toBe('a live run is writing this');
    // gen's and --output's temp files: the same name, the same rule
    const out = at('out.json');
    const dead = spawnSync('true').pid!;
    for (const name of ['out.json', 'gen.txt']) writeFileSync(at(`.${name}.iolab-${dead}.tmp`), 'stale');
    expect((await runCliText(['bench', 'iops', '--filename', f, '--number_ios', '10', '--ioengine', 'psync', '--output', out])).stderr)
      .toBe(`note: removed '${at(`.out.json.iolab-${dead}.tmp`)}', left by an iolab run that was killed (pid ${dead})`);
    expect((await runCliText(['gen', at('gen.txt'), '--size', '4k'])).stderr)
      .toBe(`note: removed '${at(`.gen.txt.iolab-${dead}.tmp`)}', left by an iolab run that was killed (pid ${dead})`);
    expect(temps()).toEqual([live]);
    expect(readdirSync(tmp.path).filter((n) => n.endsWith('.tmp'))).toEqual([live]);
  }, 120_000);
});

describe('a file name with a newline or a control byte', () => {
  it('is shown on one line in the layout\'s refusals, as every name the CLI prints (\\n, \\\\, \\xHH)', async () => {
    const foreign = at('a\nb\\c\x1b');
    writeFileSync(foreign, randomBytes(8192));
    const r = await runCliText(['bench', 'iops', '--filename', foreign, '--rw', 'randwrite', '--size', '8k', '--number_ios', '1', '--ioengine', 'psync']);
    expect(r).toEqual({ exitCode: 1, stdout: '', stderr: `iolab: refusing to write into '${tmp.path}/a\\nb\\\\c\\x1b': iolab did not ` +
      'create it, or it changed since (use --force to allow)' });
    const link = at('l\nk');
    symlinkSync('no\twhere', link);
    const l = await runCliText(['bench', 'iops', '--filename', link, '--rw', 'randwrite', '--size', '8k', '--number_ios', '1', '--ioengine', 'psync']);
    expect(l.stderr).toBe(`iolab: refusing to write through symlink '${tmp.path}/l\\nk' -> 'no\\twhere' (use --force to replace the link ` +
      'with a new file; its target is never written)');
  });
});

checkLeaksAfterAll(tmp);
