// `iolab fdpass recv` and its socket path against other processes: receivers started at once
// on one path agree on a single owner (the lock file beside it), and a symlink swapped in for
// the socket right after bind(2) never gets a file's mode changed through it. A mistyped path
// under /dev is refused before the lock file or the socket is made there.
import { describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { chmodSync, closeSync, existsSync, openSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { native } from '../src/native.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { buildFixture, shortTempDir } from './support/temp.js';
import { cli } from './support/demo.js';
import { processState } from './support/trace.js';
import { iolabArgv } from './support/cli.js';

const tmp = shortTempDir('iolab-dfpp-');
checkLeaksAfterAll(tmp);
let unique = 0;

/** The pid of the child of `parent` (strace) that runs `program`, once it does (strace forks
 * short-lived copies of itself first, to probe what ptrace offers). */
async function tracedChild(parent: number, program: string): Promise<number> {
  for (;;) {
    const children = readFileSync(`/proc/${parent}/task/${parent}/children`, 'utf8').trim().split(' ').filter(Boolean);
    for (const pid of children) {
      let argv0 = '';
      try { argv0 = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0]; } catch { /* that one is gone already */ }
      if (argv0 === program) return Number(pid);
    }
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Resolves once `pid` has sat in a tracing stop ('t') for two looks in a row 100 ms apart:
 * strace is holding it in the delayed syscall. */
async function heldByStrace(pid: number): Promise<void> {
  const deadline = Date.now() + 20_000;
  const state = () => {
    if (Date.now() > deadline) throw new Error(`pid ${pid} was never seen held in the delayed connect`);
    return processState(pid);
  };
  for (let seen = 0; seen < 2; await new Promise((r) => setTimeout(r, 100))) seen = state() === 't' ? seen + 1 : 0;
}

describe('fdpass recv: one owner per socket path', () => {
  it('a receiver replacing a stale socket is paused between its probe and its bind: a second one meanwhile is told the path is in use', async () => {
    const socket = join(tmp.path, `race${unique++}.sock`);
    const stale = native.socket('unix', 'dgram');
    native.bind(stale, socket);
    native.close(stale);
    // The first receiver's connect(2) probe of the stale socket returns only after 4 s (strace's
    // fault injection). It is the command's only connect (under tsx the loader would make one
    // before it; the tests run the compiled command).
    const [file, argv] = iolabArgv(['fdpass', 'recv', '--socket', socket, '--timeout', '60']);
    const first = execa('strace', ['-qq', '-o', '/dev/null', '-e', 'trace=connect', '-e', 'inject=connect:delay_exit=4000000:when=1+',
      file, ...argv], { reject: false });
    let traced: number | undefined;
    try {
      const firstListening = new Promise<void>((resolve) => first.stdout!.once('data', () => resolve()));
      traced = await tracedChild(first.pid!, file);
      await heldByStrace(traced);
      const second = await cli(['fdpass', 'recv', '--socket', socket, '--timeout', '10']);
      expect(second).toEqual({ stdout: '', stderr: `iolab: ${socket} is in use: another receiver is listening on it; left untouched (choose another --socket)`, exitCode: 1 });
      // The first one goes on, binds, and is the receiver a sender reaches.
      await firstListening;
      const sent = await cli(['fdpass', 'send', '--socket', socket, '--message', 'to the first']);
      expect(sent.exitCode).toBe(0);
      const r = await first;
      expect(r.exitCode).toBe(0);
      expect(String(r.stdout)).toContain('message 1 holds:   to the first');
      expect(readdirSync(tmp.path).filter((f) => f.startsWith(`race${unique - 1}.`))).toEqual([]);
    } finally {
      // after a failure above: neither is left for its 60 s (no-ops once they exited)
      if (traced !== undefined) try { process.kill(traced, 'SIGKILL'); } catch { /* gone */ }
      first.kill('SIGKILL');
    }
  }, 60_000);

  it('a path whose lock another process holds is in use, even with no socket there yet', async () => {
    const socket = join(tmp.path, `held${unique++}.sock`);
    writeFileSync(`${socket}.lock`, '');
    const fd = openSync(`${socket}.lock`, 'r');
    try {
      expect(native.flock(fd, 'exclusive')).toBe(true);
      const r = await cli(['fdpass', 'recv', '--socket', socket, '--timeout', '1']);
      expect(r.stderr).toBe(`iolab: ${socket} is in use: another receiver is listening on it; left untouched (choose another --socket)`);
      expect(existsSync(socket)).toBe(false);
      expect(existsSync(`${socket}.lock`)).toBe(true); // the holder's, left alone
    } finally {
      closeSync(fd);
    }
  });
});

describe('fdpass recv: the socket is made world-writable by bind itself, never by a chmod', () => {
  it('a symlink swapped in for the socket right after bind leaves its target\'s mode alone', async () => {
    const swap = buildFixture(tmp.path, 'swap-in-symlink');
    const victim = join(tmp.path, 'victim.txt');
    writeFileSync(victim, 'private');
    chmodSync(victim, 0o600);
    let swapped = 0;
    for (let round = 0; round < 4; round++) {
      const socket = join(tmp.path, `swap${unique++}.sock`);
      const attacker = execa(swap, [socket, victim, '15000'], { reject: false });
      await new Promise<void>((resolve) => attacker.stdout!.once('data', () => resolve()));
      const r = await cli(['fdpass', 'recv', '--socket', socket, '--timeout', '200ms']);
      const a = await attacker;
      if (String(a.stdout).includes('swapped')) swapped++;
      expect(r.exitCode).toBe(1);
      expect(statSync(victim).mode & 0o777).toBe(0o600);
      expect(readFileSync(victim, 'utf8')).toBe('private');
    }
    expect(swapped).toBeGreaterThan(0); // the attacker did get its link in
  }, 90_000);

  it('the socket file is created 0666 whatever the umask', async () => {
    const socket = join(tmp.path, `mode${unique++}.sock`);
    const [file, argv] = iolabArgv(['fdpass', 'recv', '--socket', socket, '--timeout', '5']);
    const child = execa('sh', ['-c', 'umask 077; exec "$@"', 'sh', file, ...argv], { reject: false });
    try {
      await new Promise<void>((resolve) => child.stdout!.once('data', () => resolve()));
      expect(statSync(socket).mode & 0o777).toBe(0o666);
      expect(existsSync(`${socket}.lock`)).toBe(true);
      child.kill('SIGTERM');
      expect((await child).exitCode).toBe(130);
      expect(existsSync(socket)).toBe(false);
    } finally {
      child.kill('SIGKILL'); // after a failure above (a no-op once it exited)
    }
  });

  it('a path under /dev that does not exist: refused, and nothing made there, not even the lock file', async () => {
    const socket = `/dev/iolab-missing-${process.pid}-${unique++}.sock`;
    const r = await cli(['fdpass', 'recv', '--socket', socket, '--timeout', '200ms']);
    expect(r).toEqual({ exitCode: 1, stdout: '',
      stderr: `iolab: --socket: '${socket}' does not exist, and iolab creates no file in /dev (devtmpfs)` });
    expect([existsSync(socket), existsSync(`${socket}.lock`)]).toEqual([false, false]);
  });
});
