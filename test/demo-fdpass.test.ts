// `iolab fdpass recv|send` as two processes, as a user runs them: wait for the receiver's
// listening line, then send. Exact outputs, bad input, uid refusal, and that
// sockets and shm objects never outlive the commands.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { native } from '../src/native.js';
import { sendmsg } from '../src/syscalls.js';
import { openFdCount, settledLiveObjects, zeroLiveObjects } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';
import { startCli } from './support/cli.js';
import { cli, runCliAs, shmObjects, type CliResult } from './support/demo.js';

const tmp = shortTempDir('iolab-dfp-');
chmodSync(tmp.path, 0o755); // senders of another uid must reach the socket
let unique = 0;
const sockPath = () => join(tmp.path, `r${unique++}.sock`);
let fdsBefore = 0;
beforeAll(() => { fdsBefore = openFdCount(); });
const receivers: { kill: (sig: NodeJS.Signals) => void; done: () => Promise<CliResult> }[] = [];
afterAll(async () => {
  // A failed test may have left its receiver running: stop it before counting fds.
  for (const r of receivers) { r.kill('SIGTERM'); await r.done(); }
  expect(openFdCount()).toBe(fdsBefore);
  expect(await settledLiveObjects()).toEqual(zeroLiveObjects);
  tmp.cleanup();
});

const nobody = { uid: 65534, gid: 65534 };
// Receivers that wait for senders outlive the test's own timeout: under load (CI, ASan) the
// sends of one test took 20-44 s. A receiver a test leaves behind is killed in afterAll.
const receiverWait = '300';
const listening = /^listening on |"event":"listening"/;

/** Starts a receiver and resolves once it printed its listening line. */
async function startReceiver(args: string[], env?: NodeJS.ProcessEnv) {
  const { child, firstLine } = await startCli(['fdpass', 'recv', ...args], listening, env ? { env } : {});
  const receiver = { firstLine, done: async (): Promise<CliResult> => {
    const r = await child;
    return { stdout: String(r.stdout), stderr: String(r.stderr), exitCode: r.exitCode };
  }, kill: (sig: NodeJS.Signals) => { child.kill(sig); } };
  receivers.push(receiver);
  return receiver;
}

/** Runs a sender; also returns the shm objects its pid left in /dev/shm (there must be none). */
async function send(args: string[], options: { uid?: number; gid?: number; env?: NodeJS.ProcessEnv } = {}) {
  const child = runCliAs(['fdpass', 'send', ...args], options);
  const r = await child;
  return { stdout: String(r.stdout), stderr: String(r.stderr), exitCode: r.exitCode, leftovers: shmObjects(`iolab-fdpass-${child.pid}-`) };
}

const sentLine = (socket: string, text: string, size = 4096) =>
  `sent to ${socket}: ${text} (with the fd of a ${size}-byte shared-memory object)`;
/** What the receiver prints for a message whose fd is a shm_open object of iolab's sender (its
 * /dev/shm name, already unlinked, holds the sender's pid and a random part). */
const messageLines = (i: number, text: string, size = 4096) => new RegExp([
  `message ${i} carried: ${escapeRegExp(text)}`,
  `message ${i} fd:      regular file, ${size} bytes \\(/dev/shm/iolab-fdpass-\\d+-[0-9a-f]{12} \\(deleted\\)\\); ` +
    `read ${Math.min(size, 4096)} bytes with pread \\(not mapped: it cannot be sealed against shrinking\\)`,
  `message ${i} holds:   ${escapeRegExp(text)}`,
].join('\n'));
const memfdLines = (i: number, text: string, size = 4096) => [
  `message ${i} carried: ${text}`,
  `message ${i} fd:      regular file, ${size} bytes (/memfd:iolab-fdpass (deleted)), seals F_SEAL_SHRINK|F_SEAL_GROW|F_SEAL_WRITE; ` +
    `mapped ${Math.min(size, 65536)} bytes read-only (sealed against shrinking)`,
  `message ${i} holds:   ${text}`,
].join('\n');
function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
/** The whole stdout of a receiver that got these messages, as one anchored pattern. */
const receiverOut = (socket: string, ...messages: RegExp[]) =>
  new RegExp(`^listening on ${escapeRegExp(socket)}\n${messages.map((m) => m.source).join('\n')}$`);

describe('fdpass: receiver and sender as two processes', () => {
  it('dgram, with no options but a shared XDG_RUNTIME_DIR: both meet on the default socket', async () => {
    const env = { ...process.env, XDG_RUNTIME_DIR: tmp.path };
    const socket = join(tmp.path, 'iolab-fdpass.sock');
    const receiver = await startReceiver(['--timeout', receiverWait], env);
    expect(receiver.firstLine).toBe(`listening on ${socket}`);
    const sent = await send([], { env });
    expect(sent).toEqual({ stdout: sentLine(socket, 'hello through SCM_RIGHTS'), stderr: '', exitCode: 0, leftovers: [] });
    const r = await receiver.done();
    expect(r).toMatchObject({ stderr: '', exitCode: 0 });
    expect(r.stdout).toMatch(receiverOut(socket, messageLines(1, 'hello through SCM_RIGHTS')));
    expect(existsSync(socket)).toBe(false);
    expect(existsSync(`${socket}.lock`)).toBe(false);
  });

  it.each([[['--type', 'dgram'], 65536], [['--type', 'stream', '--io-uring'], 1048576]])(
    '%j --memfd: a sealed memfd, of which the receiver maps at most 64 KiB (and says so)', async (args, size) => {
      const socket = sockPath();
      const receiver = await startReceiver(['--socket', socket, '--timeout', receiverWait, ...args]);
      const sent = await send(['--socket', socket, '--memfd', '--message', 'sealed', '--size', String(size), ...args]);
      expect(sent).toEqual({
        stdout: `sent to ${socket}: sealed (with the fd of a ${size}-byte memfd sealed against shrinking, growing and writing)`,
        stderr: '', exitCode: 0, leftovers: [],
      });
      expect(await receiver.done()).toEqual({ stdout: `listening on ${socket}\n${memfdLines(1, 'sealed', size)}`, stderr: '', exitCode: 0 });
    });

  it('stream, --count 2 and --json on both sides, a message with non-ASCII text and a 1 MiB object', async () => {
    const socket = sockPath();
    const receiver = await startReceiver(['--socket', socket, '--type', 'stream', '--count', '2', '--json', '--timeout', receiverWait]);
    expect(JSON.parse(receiver.firstLine)).toEqual({ event: 'listening', socket });
    const first = await send(['--socket', socket, '--type', 'stream', '--message', 'grüße\tvia stream', '--json']);
    expect(JSON.parse(first.stdout)).toEqual({ event: 'sent', socket, type: 'stream', bytes: 18, text: 'grüße\tvia stream', object: 'shm', size: 4096, receiverUid: process.getuid!() });
    const second = await send(['--socket', socket, '--type', 'stream', '--message', 'second', '--size', '1m']);
    expect(second).toMatchObject({ stdout: sentLine(socket, 'second', 1048576), exitCode: 0, leftovers: [] });
    const r = await receiver.done();
    expect(r.exitCode).toBe(0);
    const fd = (size: number) => ({ type: 'regular file', size, name: expect.stringMatching(/^\/dev\/shm\/iolab-fdpass-\d+-[0-9a-f]{12} \(deleted\)$/) });
    const contents = (text: string) => ({ text: text.replace('\t', '\\t'), base64: Buffer.from(text).toString('base64'), how: 'pread', bytes: 4096, end: 'NUL',
      why: 'not mapped: it cannot be sealed against shrinking' });
    expect(r.stdout.split('\n').map((l) => JSON.parse(l))).toEqual([
      { event: 'listening', socket },
      { event: 'message', index: 1, text: 'grüße\tvia stream', fd: fd(4096), contents: contents('grüße\tvia stream'), uid: 0, gid: 0 },
      { event: 'message', index: 2, text: 'second', fd: fd(1048576), contents: contents('second'), uid: 0, gid: 0 },
    ]);
    expect(existsSync(socket)).toBe(false);
  });
});

describe.runIf(process.getuid?.() === 0)('fdpass: senders of another uid', () => {
  it.each(['dgram', 'stream'])('%s: refused (SCM_CREDENTIALS / SO_PEERCRED) with a line; the receiver keeps waiting', async (type) => {
    const socket = sockPath();
    const receiver = await startReceiver(['--socket', socket, '--type', type, '--timeout', receiverWait]);
    const stranger = await send(['--socket', socket, '--type', type, '--message', 'from nobody'], nobody);
    expect(stranger.leftovers).toEqual([]);
    if (type === 'dgram') {
      // A datagram cannot learn it was refused: what the sender can know is whose socket it is.
      expect(stranger.exitCode).toBe(0);
      expect(stranger.stdout).toBe(sentLine(socket, 'from nobody'));
      expect(stranger.stderr).toBe(`note: ${socket} belongs to uid 0, not to this user (uid 65534): a receiver that checks ` +
        'the sender\'s uid, as iolab\'s does unless run with --allow-any-user, drops this message, and a datagram ' +
        'sender is not told');
    }
    const mine = await send(['--socket', socket, '--type', type, '--message', 'from root']);
    expect(mine).toMatchObject({ stderr: '', exitCode: 0 });
    const r = await receiver.done();
    expect(r.stdout).toMatch(receiverOut(socket, messageLines(1, 'from root')));
    expect(r.stderr).toMatch(/^iolab: refused a message from uid 65534 \(pid \d+\): not this user; run the receiver with --allow-any-user to accept it$/);
    expect(r.exitCode).toBe(0);
  });

  it('--allow-any-user accepts them and reports their uid', async () => {
    const socket = sockPath();
    const receiver = await startReceiver(['--socket', socket, '--allow-any-user', '--json', '--timeout', receiverWait]);
    const stranger = await send(['--socket', socket, '--message', 'from nobody'], nobody);
    expect(stranger.exitCode).toBe(0);
    const r = await receiver.done();
    expect(JSON.parse(r.stdout.split('\n')[1])).toMatchObject(
      { event: 'message', index: 1, text: 'from nobody', contents: { text: 'from nobody' }, uid: 65534, gid: 65534 });
  });
});

describe('fdpass: bad input', () => {
  it('no receiver: one line, exit 1, nothing in /dev/shm (missing path, and a stale socket file)', async () => {
    const socket = sockPath();
    const missing = await send(['--socket', socket]);
    expect(missing).toEqual({ stdout: '', stderr: `iolab: no receiver listening on ${socket}`, exitCode: 1, leftovers: [] });
    const stale = native.socket('unix', 'dgram');
    native.bind(stale, socket);
    native.close(stale);
    const refused = await send(['--socket', socket, '--type', 'stream']);
    expect(refused).toEqual({ stdout: '', stderr: `iolab: no receiver listening on ${socket}`, exitCode: 1, leftovers: [] });
  });

  it('a regular file at the socket path is left untouched by both sides', async () => {
    const file = join(tmp.path, 'regular.txt');
    writeFileSync(file, 'not a socket');
    const recv = await cli(['fdpass', 'recv', '--socket', file]);
    expect(recv).toEqual({ stdout: '', stderr: `iolab: ${file} exists and is not a socket; left untouched (choose another --socket)`, exitCode: 1 });
    const sent = await send(['--socket', file]);
    expect(sent).toEqual({ stdout: '', stderr: `iolab: ${file} is not a socket`, exitCode: 1, leftovers: [] });
    expect(readFileSync(file, 'utf8')).toBe('not a socket');
    expect(existsSync(`${file}.lock`)).toBe(false);
  });

  it('a socket path longer than 107 bytes', async () => {
    const long = join(tmp.path, 'x'.repeat(120));
    const bytes = Buffer.byteLength(long);
    for (const side of ['recv', 'send']) {
      const r = await cli(['fdpass', side, '--socket', long]);
      expect(r).toEqual({ stdout: '', stderr: `iolab: socket path is ${bytes} bytes long; Unix socket paths must be at most 107 bytes: ${long}`, exitCode: 1 });
    }
  });

  it('receiver timeout: one line, exit 1, socket removed', async () => {
    const socket = sockPath();
    const r = await cli(['fdpass', 'recv', '--socket', socket, '--timeout', '300ms']);
    expect(r).toEqual({ stdout: `listening on ${socket}`, stderr: `iolab: no message came within 0.3 s on ${socket}`, exitCode: 1 });
    expect(existsSync(socket)).toBe(false);
  });

  it('more fds than the receiver takes: it closes them all, says so, exits 1', async () => {
    const socket = sockPath();
    const receiver = await startReceiver(['--socket', socket, '--timeout', receiverWait]);
    const sock = native.socket('unix', 'dgram');
    const [a, b] = native.socketpair('stream');
    try {
      native.connect(sock, socket);
      sendmsg(sock, [Buffer.from('two fds')], { fds: [a, b], credentials: true });
    } finally {
      for (const fd of [sock, a, b]) native.close(fd);
    }
    expect(await receiver.done()).toEqual({
      stdout: `listening on ${socket}`,
      stderr: 'iolab: a message came with more file descriptors than the 1 this receiver takes; all of them were closed',
      exitCode: 1,
    });
    expect(existsSync(socket)).toBe(false);
  });

  it('a message larger than --size, and a sender of the wrong --type, are clear errors', async () => {
    const socket = sockPath();
    // the receiver outlives every send below (a sanitized run took 44 s for them); killed at the end
    const receiver = await startReceiver(['--socket', socket, '--timeout', receiverWait]);
    const big = await send(['--socket', socket, '--message', 'x'.repeat(100), '--size', '64']);
    expect(big).toEqual({ stdout: '', stderr: 'iolab: the message is 100 bytes but --size is 64', exitCode: 1, leftovers: [] });
    for (const memfd of [[], ['--memfd']]) {
      const huge = await send(['--socket', socket, '--size', '1T', ...memfd]);
      expect(huge.stderr).toMatch(memfd.length > 0
        ? /^iolab: --size 1 TiB is more than this machine has free \([\d.]+ [KMG]iB\); choose a smaller size$/
        : /^iolab: --size 1 TiB is more than \/dev\/shm has free \([\d.]+ [KMG]iB\); choose a smaller size$/);
      expect(huge).toMatchObject({ stdout: '', exitCode: 1, leftovers: [] });
    }
    const one = await send(['--socket', socket, '--message', 'xy', '--size', '1']);
    expect(one.stderr).toBe('iolab: the message is 2 bytes but --size is 1');
    const wrongType = await send(['--socket', socket, '--type', 'stream']);
    expect(wrongType).toEqual({ stdout: '', stderr: `iolab: the receiver on ${socket} is not a stream socket (try --type dgram)`, exitCode: 1, leftovers: [] });
    receiver.kill('SIGTERM');
    await receiver.done();
  });

  it('a live receiver is never displaced; a stale socket is replaced; SIGTERM/SIGINT remove the socket', async () => {
    const socket = sockPath();
    const stale = native.socket('unix', 'stream');
    native.bind(stale, socket);
    native.close(stale);
    const first = await startReceiver(['--socket', socket, '--type', 'stream']);
    const second = await cli(['fdpass', 'recv', '--socket', socket]);
    expect(second).toEqual({ stdout: '', stderr: `iolab: ${socket} is in use: another receiver is listening on it; left untouched (choose another --socket)`, exitCode: 1 });
    expect(existsSync(`${socket}.lock`)).toBe(true); // the first receiver's, left to it
    first.kill('SIGTERM');
    expect(await first.done()).toEqual({ stdout: `listening on ${socket}`, stderr: 'iolab: interrupted by SIGTERM', exitCode: 130 });
    expect(existsSync(socket)).toBe(false);

    const third = await startReceiver(['--socket', socket]);
    third.kill('SIGINT');
    expect((await third.done()).exitCode).toBe(130);
    expect(existsSync(socket)).toBe(false);
    expect(existsSync(`${socket}.lock`)).toBe(false);
  });
});
