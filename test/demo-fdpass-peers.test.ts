// fdpass against peers written in C the way textbook examples are (test/fixtures/textbook-*.c,
// compiled here with cc): a C sender's shared-memory fd shown by `iolab fdpass recv`, an iolab
// sender's object printed by a C receiver's printf("%s"), dgram and stream, plain and --io-uring;
// and a C sender that keeps shrinking its object right after sending, which must never make
// the receiver die of SIGBUS.
import { describe, expect, it } from 'vitest';
import { execa, type ResultPromise } from 'execa';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { checkLeaksAfterAll } from './support/leaks.js';
import { buildFixture, shortTempDir } from './support/temp.js';
import { startCli } from './support/cli.js';
import { cli, shmObjects } from './support/demo.js';

const tmp = shortTempDir('iolab-peers-');
let sender = '';
let receiver = '';
checkLeaksAfterAll(tmp, () => {
  sender = buildFixture(tmp.path, 'textbook-sender', ['-lrt']);
  receiver = buildFixture(tmp.path, 'textbook-receiver', ['-lrt']);
});
let unique = 0;
const sockPath = () => join(tmp.path, `p${unique++}.sock`);
const variants = [['dgram', []], ['stream', []], ['dgram', ['--io-uring']], ['stream', ['--io-uring']]] as const;

/** Starts the C receiver and resolves once it is bound (wrapped: a returned ResultPromise
 * would be awaited to its end). */
async function startCReceiver(socket: string, type: string): Promise<{ child: ResultPromise }> {
  const child = execa(receiver, [socket, type], { reject: false });
  await new Promise<void>((resolve) => child.stdout!.once('data', () => resolve()));
  return { child };
}

describe('a C sender (shm_open, ftruncate, mmap, memcpy, sendmsg) to iolab fdpass recv', () => {
  it.each(variants)('%s %j: the receiver shows the C string the object holds', async (type, extra) => {
    const socket = sockPath();
    const { child } = await startCli(['fdpass', 'recv', '--socket', socket, '--type', type, '--timeout', '300', ...extra], /^listening on /);
    const sending = execa(sender, [socket, type, `from C over ${type}`], { reject: false });
    const sent = await sending;
    expect(sent.exitCode, String(sent.stderr)).toBe(0);
    const r = await child;
    expect({ exitCode: r.exitCode, stderr: r.stderr }).toEqual({ exitCode: 0, stderr: '' });
    expect(String(r.stdout).split('\n')).toEqual([
      `listening on ${socket}`,
      `message 1 carried: from C over ${type}`,
      expect.stringMatching(new RegExp(`^message 1 fd: {6}regular file, 65536 bytes \\(/dev/shm/textbook-${sending.pid} \\(deleted\\)\\); ` +
        'read 4096 bytes with pread \\(not mapped: it cannot be sealed against shrinking\\)$')),
      `message 1 holds:   from C over ${type}`,
    ]);
    expect(existsSync(socket)).toBe(false);
  });
});

describe('iolab fdpass send to a C receiver (recvmsg, mmap, printf("%s"))', () => {
  it.each(variants)('%s %j: printf of the mapping shows the message, for a shm object and a sealed memfd', async (type, extra) => {
    for (const memfd of [[], ['--memfd']]) {
      const socket = sockPath();
      const { child: peer } = await startCReceiver(socket, type);
      const sent = await cli(['fdpass', 'send', '--socket', socket, '--type', type, '--message', `to C over ${type}`, ...memfd, ...extra]);
      expect(sent.exitCode, sent.stderr).toBe(0);
      const r = await peer;
      expect({ exitCode: r.exitCode, stderr: r.stderr }).toEqual({ exitCode: 0, stderr: '' });
      expect(String(r.stdout)).toBe(`listening\nmessage: to C over ${type}\nshared memory: to C over ${type}`);
    }
    expect(shmObjects('iolab-fdpass-').filter((f) => f.startsWith(`iolab-fdpass-${process.pid}`))).toEqual([]);
  });
});

describe('a C sender that shrinks its object right after sending', () => {
  it.each([['dgram', []], ['stream', ['--io-uring']]] as const)('%s %j: the receiver reads with pread and never dies of SIGBUS', async (type, extra) => {
    const socket = sockPath();
    const count = 4;
    const { child } = await startCli(['fdpass', 'recv', '--socket', socket, '--type', type, '--count', String(count), '--timeout', '300', ...extra],
      /^listening on /);
    for (let i = 0; i < count; i++) {
      const sent = await execa(sender, [socket, type, `shrinking ${i}`, 'shrink'], { reject: false });
      expect(sent.exitCode, String(sent.stderr)).toBe(0);
    }
    const r = await child;
    expect({ exitCode: r.exitCode, signal: r.signal, stderr: r.stderr }).toEqual({ exitCode: 0, signal: undefined, stderr: '' });
    // Whatever the race left there: nothing, a cut text, or all of it.
    const held = String(r.stdout).split('\n').filter((l) => l.includes(' holds: '));
    expect(held).toHaveLength(count);
    held.forEach((line, i) => expect(`shrinking ${i}`.startsWith(line.replace(/^message \d+ holds: {3}/, ''))).toBe(true));
  }, 60_000);
});
