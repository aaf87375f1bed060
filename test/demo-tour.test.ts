// `iolab tour`: every demo pair end to end, as README's first command runs it. Checks the
// transcript's shape and content, the exit status, and that nothing it created is left.
import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../src/native.js';
import { shellLine } from '../src/demos/tour.js';
import { cli, shmObjects } from './support/demo.js';
import { execa } from 'execa';
import { iolabArgv } from './support/cli.js';

describe('iolab tour', () => {
  it('runs every demo pair as separate processes, prints what each showed, removes what it made', async () => {
    const r = await cli(['tour']);
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    const out = r.stdout;
    const dir = /^iolab tour: each demo run as separate processes in a temp folder \((\/\S+); the --io-uring variants in its io_uring\/ folder\)$/m.exec(out)?.[1];
    expect(dir).toBeDefined();

    // readv of readv.c: the same 224 bytes the readv command prints on its own.
    const alone = await cli(['readv', 'readv.c']);
    expect(out).toContain(`$ iolab readv readv.c\n${alone.stdout}\n`);
    expect(readFileSync(join(projectRoot, 'readv.c'), 'utf8').length).toBeGreaterThan(224);

    expect(out).toContain([
      "$ iolab writev notes.txt 'gathered ' 'by one ' 'writev call' --newline",
      'writev 28 bytes to notes.txt',
      '$ iolab readv notes.txt --sizes 9,7,12',
      'Read 28 bytes:', 'buf1: gathered ', 'buf2: by one ', 'buf3: writev call\\n',
      "$ iolab writev notes.txt 'overwritten?'",
      'iolab: notes.txt already exists; left untouched (use --append to add to it or --force to replace it)',
      '(exit status 1, as expected)',
      '# notes.txt still holds: gathered by one writev call\\n',
    ].join('\n'));

    expect(out).toMatch(new RegExp([
      "\\$ iolab shm write (/iolab-tour-\\d+) 'written by one process, read by another'",
      'wrote 39 bytes of text to \\1 \\(new 4096-byte shared-memory object\\)',
      '\\$ iolab shm read \\1', 'written by one process, read by another',
      '\\$ iolab shm unlink \\1', 'unlinked \\1',
    ].join('\n')));

    for (const [type, memfd] of [['dgram', false], ['stream', true]] as const) {
      const socket = `fdpass-${type}.sock`;
      const text = `a ${type} message with an fd`;
      const fdLine = memfd
        ? 'regular file, 4096 bytes \\(/memfd:iolab-fdpass \\(deleted\\)\\), seals F_SEAL_SHRINK\\|F_SEAL_GROW\\|F_SEAL_WRITE; ' +
          'mapped 4096 bytes read-only \\(sealed against shrinking\\)'
        : 'regular file, 4096 bytes \\(/dev/shm/iolab-fdpass-\\d+-[0-9a-f]{12} \\(deleted\\)\\); ' +
          'read 4096 bytes with pread \\(not mapped: it cannot be sealed against shrinking\\)';
      expect(out).toMatch(new RegExp([
        `\\$ iolab fdpass recv --socket ${socket} --type ${type} --timeout 20 &`,
        `\\$ iolab fdpass send --socket ${socket} --type ${type} --message '${text}'${memfd ? ' --memfd' : ''}`,
        `sent to ${socket}: ${text} \\(with the fd of a 4096-byte ${memfd ? 'memfd sealed against shrinking, growing and writing' : 'shared-memory object'}\\)`,
        '\\(output of the background fdpass recv\\)',
        `listening on ${socket}`,
        `message 1 carried: ${text}`,
        `message 1 fd:      ${fdLine}`,
        `message 1 holds:   ${text}`,
        ...(memfd ? [] : ['# the sender left nothing in /dev/shm \\(it unlinked the name right after creating the object\\)']),
        `# the receiver removed ${socket} and its lock file on exit`,
      ].join('\n')));
    }
    // 5 plain demos (11 commands), then all 5 again with --io-uring (11 commands)
    expect(out).toContain('$ iolab readv readv.c --io-uring\n' + alone.stdout + '\n');
    expect(out).toMatch(/^\$ iolab shm read \/iolab-tour-\d+-io_uring --io-uring\nwritten by one process, read by another$/m);
    expect(out.trimEnd().split('\n').at(-1)).toBe('tour done: 10 demos, 22 commands, temp folder removed');

    // Everything it created is gone: its temp folder and its shm object.
    expect(existsSync(dir!)).toBe(false);
    const shmName = /\$ iolab shm write \/(iolab-tour-\d+)/.exec(out)![1];
    expect(shmObjects(shmName)).toEqual([]);
    expect(shmObjects(`iolab-fdpass-`).filter((f) => out.includes(f))).toEqual([]);
  }, 90_000); // 12 CLI processes: slow under ASan on a busy machine

  it('streams: each step is printed as soon as it finished, while later steps still run', async () => {
    const [file, argv] = iolabArgv(['tour']);
    const child = execa(file, argv, { reject: false, cwd: projectRoot });
    // Everything on stdout up to the moment the first step's title arrived.
    const firstSeen = await new Promise<string>((resolve) => {
      let seen = '';
      const onData = (chunk: Buffer) => {
        seen += chunk.toString();
        if (/^== readv:/m.test(seen)) { child.stdout?.off('data', onData); resolve(seen); }
      };
      child.stdout?.on('data', onData);
    });
    expect(firstSeen).not.toContain('== fdpass (stream)');
    expect(firstSeen).not.toContain('tour done');
    const r = await child;
    expect(r.exitCode, `${r.stdout}\n${r.stderr}`).toBe(0); // what failed, if it did
    expect(String(r.stdout).trimEnd().split('\n').at(-1)).toBe('tour done: 10 demos, 22 commands, temp folder removed');
  }, 90_000);

  it('Ctrl-C: the running commands stop, the finished steps stay, "partial", nothing left behind, exit 130', async () => {
    const [file, argv] = iolabArgv(['tour']);
    const child = execa(file, argv, { reject: false, cwd: projectRoot });
    let seen = '';
    await new Promise<void>((resolve) => child.stdout!.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      if (/^== writev:/m.test(seen)) resolve();
    }));
    child.kill('SIGINT');
    const r = await child;
    expect({ exitCode: r.exitCode, stderr: r.stderr }).toEqual({ exitCode: 130, stderr: 'iolab: interrupted by SIGINT' });
    const out = String(r.stdout);
    expect(out).toContain('== readv:');
    expect(out.trimEnd().split('\n').at(-1)).toMatch(/^tour interrupted \(partial\): \d+ demos?, \d+ commands? finished, temp folder removed$/);
    const dir = /temp folder \((\/\S+);/.exec(out)![1];
    expect(existsSync(dir)).toBe(false);
    expect(shmObjects(`iolab-tour-${child.pid}`)).toEqual([]);
  }, 90_000);

  it('quotes arguments in its transcript the way a shell needs them', () => {
    expect(shellLine(['writev', 'a b', "it's", 'x,y', '--sizes', '1,2'])).toBe("iolab writev 'a b' 'it'\\''s' x,y --sizes 1,2");
  });
});
