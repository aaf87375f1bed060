// The --io-uring variants of the demos print exactly what the plain ones print; under a seccomp
// filter that refuses io_uring_setup, --io-uring fails with the one-sentence reason and the plain
// variant still works.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../src/native.js';
import { buildSeccompRefuser, shortTempDir } from './support/temp.js';
import { cliPath, runCli, startCli } from './support/cli.js';

let dir: { path: string; cleanup: () => void };
let refuse: string;

beforeAll(() => {
  dir = shortTempDir('iolab-ring-demos-');
  refuse = buildSeccompRefuser(dir.path);
  copyFileSync(join(projectRoot, 'readv.c'), join(dir.path, 'readv.c'));
});
afterAll(() => dir.cleanup());

// Tests that start a dozen iolab processes one after another: each start costs about a second
// under the sanitizer on a loaded 2-core machine, so they get more than the default 30 s.
const cliHeavy = 120_000;

const refusedLine = (errno: string, why: string) =>
  `iolab: io_uring is unavailable: io_uring_setup was refused (${errno}), ${why}; use the command without --io-uring`; // execa strips the final newline
const epermWhy = 'as a seccomp profile or the io_uring_disabled sysctl does';

/** Runs the CLI under the seccomp filter (io_uring_setup -> errno). */
function underFilter(errno: 'EPERM' | 'ENOSYS', args: string[], cwd = dir.path) {
  return execa(refuse, [errno, process.execPath, cliPath, ...args], { cwd, reject: false });
}

describe('--io-uring prints what the plain variant prints', () => {
  it('readv, text and --json, with --offset and --sizes', async () => {
    for (const args of [['readv.c'], ['readv.c', '--sizes', '5,1,300', '--offset', '7'], ['readv.c', '--json', '--sizes', '16,16']]) {
      const plain = await runCli(['readv', ...args], { cwd: dir.path });
      const uring = await runCli(['readv', ...args, '--io-uring'], { cwd: dir.path });
      expect(plain.exitCode).toBe(0);
      expect(uring.stdout).toBe(plain.stdout);
      expect(uring.stderr).toBe(plain.stderr);
      expect(uring.exitCode).toBe(plain.exitCode);
    }
    const missing = await runCli(['readv', 'missing.c', '--io-uring'], { cwd: dir.path });
    expect(missing.stderr).toBe((await runCli(['readv', 'missing.c'], { cwd: dir.path })).stderr);
  }, cliHeavy);

  it('writev: the same output and the same file, create, refuse, append', async () => {
    for (const variant of ['plain', 'uring']) mkdirSync(join(dir.path, variant));
    const flag = (v: string) => (v === 'uring' ? ['--io-uring'] : []);
    const steps = [
      { args: ['notes.txt', 'gathered ', 'by one ', 'writev call', '--newline'], exit: 0 },
      { args: ['notes.txt', 'again'], exit: 1 },
      { args: ['notes.txt', 'more', '--append'], exit: 0 },
      { args: ['notes.txt', 'replaced', '--force', '--json'], exit: 0 },
    ];
    for (const step of steps) {
      const [plain, uring] = await Promise.all(['plain', 'uring'].map((v) =>
        runCli(['writev', ...step.args, ...flag(v)], { cwd: join(dir.path, v) })));
      expect(plain.exitCode).toBe(step.exit);
      expect(uring.exitCode).toBe(step.exit);
      expect(uring.stdout).toBe(plain.stdout);
      expect(uring.stderr).toBe(plain.stderr);
      expect(readFileSync(join(dir.path, 'uring/notes.txt'))).toEqual(readFileSync(join(dir.path, 'plain/notes.txt')));
    }
  }, cliHeavy);

  // One test per socket type: twelve CLI processes each.
  it.each(['dgram', 'stream'])('fdpass recv/send over %s: every mix of plain and --io-uring prints the same', async (type) => {
    const outputs: string[] = [];
    for (const [recvUring, sendUring] of [[false, false], [true, false], [false, true], [true, true]]) {
      const socket = join(dir.path, `fp-${type}.sock`);
      const recvArgs = ['fdpass', 'recv', '--socket', socket, '--type', type, '--timeout', '300', '--count', '2', ...(recvUring ? ['--io-uring'] : [])];
      const { child } = await startCli(recvArgs, /^listening on /);
      const sendArgs = ['fdpass', 'send', '--socket', socket, '--type', type, ...(sendUring ? ['--io-uring'] : [])];
      const first = await runCli([...sendArgs, '--message', `first ${type}`]);
      const second = await runCli([...sendArgs, '--message', `second ${type}`, '--size', '8k', '--memfd']);
      const received = await child;
      expect(first.exitCode).toBe(0);
      expect(second.exitCode).toBe(0);
      expect(received.exitCode).toBe(0);
      expect(received.stderr).toBe('');
      // The unlinked object's name holds the sender's pid: the one part that differs between runs.
      outputs.push([first.stdout, second.stdout, received.stdout].join('\n').replace(/iolab-fdpass-\d+-[0-9a-f]{12}/, 'iolab-fdpass-PID'));
    }
    expect(outputs[0]).toContain('message 1 fd:      regular file, 4096 bytes (/dev/shm/iolab-fdpass-PID (deleted)); read 4096 bytes with pread');
    expect(outputs[0]).toContain('message 2 fd:      regular file, 8192 bytes (/memfd:iolab-fdpass (deleted)), seals F_SEAL_SHRINK|F_SEAL_GROW|F_SEAL_WRITE; mapped 8192 bytes read-only');
    expect(outputs[0]).toContain(`message 2 holds:   second ${type}`);
    for (const o of outputs) expect(o).toBe(outputs[0]);
  }, cliHeavy);

  it('shm write/read: the same output and the same object', async () => {
    const outputs: string[] = [];
    for (const variant of [[], ['--io-uring']]) {
      const name = `/iolab-test-ring-shm-${process.pid}-${variant.length}`;
      const w = await runCli(['shm', 'write', name, 'through a ring?', '--size', '10k', ...variant]);
      const r = await runCli(['shm', 'read', name, '--json', ...variant]);
      const object = readFileSync(`/dev/shm${name}`);
      await runCli(['shm', 'unlink', name]);
      outputs.push([String(w.stdout).replace(name, 'NAME'), String(r.stdout).replace(name, 'NAME'), object.toString('base64')].join('\n'));
    }
    expect(outputs[0]).toContain('"text":"through a ring?"');
    expect(outputs[1]).toBe(outputs[0]);
  });

  it('fdpass recv --io-uring --timeout gives up like the plain one', async () => {
    const socket = join(dir.path, 'quiet.sock');
    const plain = await runCli(['fdpass', 'recv', '--socket', socket, '--timeout', '0.3']);
    const uring = await runCli(['fdpass', 'recv', '--socket', socket, '--timeout', '0.3', '--io-uring']);
    expect(plain.exitCode).toBe(1);
    expect(uring.exitCode).toBe(1);
    expect(uring.stdout).toBe(plain.stdout);
    expect(uring.stderr).toBe(plain.stderr);
  });
});

describe('--io-uring under a seccomp filter that refuses io_uring', () => {
  it('readv, writev, fdpass send and recv: one line with the reason; the plain variant works', async () => {
    const plain = await underFilter('EPERM', ['readv', 'readv.c']);
    expect(plain.exitCode).toBe(0);
    expect(plain.stdout).toBe((await runCli(['readv', 'readv.c'], { cwd: dir.path })).stdout);
    for (const args of [['readv', 'readv.c'], ['writev', 'sec.txt', 'x'], ['fdpass', 'send', '--socket', 'none.sock'],
      ['fdpass', 'recv', '--socket', 'r.sock', '--timeout', '1']]) {
      const run = await underFilter('EPERM', [...args, '--io-uring']);
      expect(run.stderr).toBe(refusedLine('EPERM', epermWhy));
      expect(run.stdout).toBe('');
      expect(run.exitCode).toBe(1);
    }
    const written = await underFilter('EPERM', ['writev', 'sec.txt', 'plain works']);
    expect(written.stdout).toBe('writev 11 bytes to sec.txt');
    expect(readFileSync(join(dir.path, 'sec.txt'), 'utf8')).toBe('plain works');
  }, cliHeavy);

  it('--uring, the old name, is --io-uring (hidden in the help): refused there too, on every demo command', async () => {
    for (const args of [['readv', 'readv.c'], ['writev', 'old.txt', 'x'], ['shm', 'read', '/iolab-none'], ['fdpass', 'send', '--socket', 'none.sock']]) {
      const run = await underFilter('EPERM', [...args, '--uring']);
      expect({ stderr: run.stderr, exitCode: run.exitCode }).toEqual({ stderr: refusedLine('EPERM', epermWhy), exitCode: 1 });
      const help = await runCli([...args.slice(0, args[0] === 'shm' || args[0] === 'fdpass' ? 2 : 1), '--help']);
      expect(help.stdout).toContain('--io-uring');
      expect(help.stdout).not.toContain('--uring');
    }
    const both = await runCli(['readv', 'readv.c', '--uring', '--io-uring'], { cwd: dir.path });
    expect({ stderr: both.stderr, exitCode: both.exitCode }).toEqual({ stderr: 'iolab: --uring is the old name of --io-uring: give one of them', exitCode: 1 });
  }, cliHeavy);

  it('ENOSYS (as Docker\'s default profile returns) says so', async () => {
    const run = await underFilter('ENOSYS', ['readv', 'readv.c', '--io-uring']);
    expect(run.stderr).toBe(refusedLine('ENOSYS', "as a seccomp profile (Docker's default) or a kernel without io_uring does"));
    expect(run.exitCode).toBe(1);
  });

  it('tour notes the refusal and still runs every plain demo', async () => {
    const run = await underFilter('EPERM', ['tour'], projectRoot);
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toContain('== the --io-uring variants\n# skipped: io_uring is unavailable: io_uring_setup was refused (EPERM), ' + epermWhy);
    expect(run.stdout.trimEnd().split('\n').at(-1)).toBe('tour done: 5 demos, 11 commands, temp folder removed');
  }, cliHeavy);
});
