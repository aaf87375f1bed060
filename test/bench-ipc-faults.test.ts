// bench ipc when things go wrong: a transport that delivers wrong bytes (the fault knob), bad
// input, a receiver that dies mid-run, Ctrl-C, io_uring refused. Each ends with one `iolab:`
// line (or the partial table), the right exit code, and nothing left behind.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { readdirSync } from 'node:fs';
import { native } from '../src/native.js';
import { transportNames } from '../src/ipc/transports.js';
import { iolabArgv, runCliText } from './support/cli.js';
import { buildSeccompRefuser, shortTempDir } from './support/temp.js';
import { newProcessTag, processesTagged, processTagVariable, waitFor } from './support/procs.js';

// bench ipc's shared memory is memfds, which have no name; what a run could leave in /dev/shm
// would carry "ipc" in its name (other tests on this machine create objects there meanwhile).
const devShm = () => readdirSync('/dev/shm').filter((n) => n.includes('ipc')).sort();
const iolabLines = (stderr: string) => stderr.split('\n').filter((l) => l.startsWith('iolab: '));

/** Starts a long run whose processes carry a fresh tag; resolves once round 1 has finished. */
async function startLongRun(extra: string[] = []) {
  const tag = newProcessTag();
  const [file, argv] = iolabArgv(['bench', 'ipc', '--sizes', '64,4k', '--transports', 'stream-copy,shm-queue,dgram-copy',
    '--duration', '20ms', '--rounds', '1000', ...extra]);
  // its own process group, so a test can signal the group as a terminal's Ctrl-C does
  const child = execa(file, argv, { reject: false, detached: true, env: { [processTagVariable]: tag } });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  await waitFor('round 1 to finish', () => stderr.includes('round 1/1000 done'), 30_000);
  return { child, tag };
}

describe('bench ipc: a transport that delivers wrong bytes fails the run', { timeout: 120_000 }, () => {
  for (const transport of transportNames) {
    it(`${transport}, both modes`, async () => {
      for (const mode of ['throughput', 'pingpong']) {
        const r = await runCliText(['bench', 'ipc', '--transports', transport, '--sizes', '4k', '--mode', mode, '--duration', '20ms', '--rounds', '1'],
          { env: { IOLAB_IPC_FAULT: '2' } });
        expect(r.exitCode, mode).toBe(1);
        expect(r.stdout).toBe('');
        expect(iolabLines(r.stderr)).toEqual([
          expect.stringMatching(new RegExp(`^iolab: ${transport} delivered wrong bytes: message 2 \\(4096 bytes\\) differs at byte 2048: ` +
            `expected 0x[0-9a-f]{2}, got 0x[0-9a-f]{2} \\(${mode}, round 1\\)$`)),
        ]);
      }
    });
  }

  it('a stale message (the previous one\'s stamps) is named as such', async () => {
    for (const [transport, mode] of [['shm-queue', 'throughput'], ['fd-per-message', 'pingpong']]) {
      const r = await runCliText(['bench', 'ipc', '--transports', transport, '--sizes', '64k', '--mode', mode, '--duration', '20ms', '--rounds', '1'],
        { env: { IOLAB_IPC_FAULT: 'stale:2' } });
      expect(r.exitCode).toBe(1);
      expect(r.stderr).toMatch(new RegExp(`^iolab: ${transport} delivered wrong bytes: message 2 \\(65536 bytes\\) differs at byte 3 ` +
        `\\(the stamp there is message 1's\\): expected 0x02, got 0x01 \\(${mode}, round 1\\)$`));
    }
  });

  it('shm-queue with one slot (a message over half its 8 MiB budget): every byte right, a stale one caught (asked for by its old name, shm-ring)', async () => {
    const args = ['bench', 'ipc', '--transports', 'shm-ring', '--sizes', '5m', '--mode', 'throughput', '--duration', '20ms', '--rounds', '1'];
    const good = await runCliText([...args, '--check', 'full', '--json']);
    expect(good.exitCode).toBe(0);
    expect((JSON.parse(good.stdout) as { rows: { messages: number }[] }).rows[0].messages).toBeGreaterThan(2);
    expect((JSON.parse(good.stdout) as { rows: { transport: string }[] }).rows[0].transport).toBe('shm-queue');
    const stale = await runCliText(args, { env: { IOLAB_IPC_FAULT: 'stale:2' } });
    expect(stale.exitCode).toBe(1);
    expect(stale.stderr).toMatch(/^iolab: shm-queue delivered wrong bytes: message 2 \(5242880 bytes\) differs at byte 3 \(the stamp there is message 1's\)/);
  });

  it('in the sampled page of a large shm-queue message, and without the knob the same run passes', async () => {
    const args = ['bench', 'ipc', '--transports', 'shm-queue', '--sizes', '1m', '--mode', 'throughput', '--duration', '20ms', '--rounds', '1'];
    const bad = await runCliText(args, { env: { IOLAB_IPC_FAULT: '5' } });
    expect(bad.exitCode).toBe(1);
    // message 5 of 256 pages: the page compared in full is page 5, its middle is byte 5*4096+2048
    expect(bad.stderr).toMatch(/^iolab: shm-queue delivered wrong bytes: message 5 \(1048576 bytes\) differs at byte 22528: /);
    const good = await runCliText(args);
    expect(good.exitCode).toBe(0);
  });
});

describe('bench ipc: bad input is one line, a non-zero exit, nothing started', { timeout: 60_000 }, () => {
  const bad = async (args: string[], line: RegExp) => {
    const before = devShm();
    const r = await runCliText(['bench', 'ipc', '--duration', '20ms', '--rounds', '1', ...args]);
    expect(r.exitCode).not.toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr.split('\n')).toEqual([expect.stringMatching(line)]);
    expect(devShm()).toEqual(before);
  };

  it('--sizes 0', () => bad(['--sizes', '0'], /^iolab: option '--sizes <list>' argument '0' is invalid\. expected a size >= 8 \(bytes; k, m, g, t suffixes\), got '0'$/));

  it('one transport at one size it cannot carry', () =>
    bad(['--transports', 'dgram-copy', '--sizes', '1m'], /^iolab: dgram-copy at 1 MiB: a dgram-copy message can be at most [\d,]+ bytes here \(the socket's send buffer\)$/));

  it('a size beyond free memory, naming the limit', () =>
    bad(['--sizes', '64,4t'], /^iolab: --sizes 64,4T: .+ at 4 TiB needs [\d.]+ TiB of memory; [\d.]+ [GMT]iB is available \(MemAvailable in \/proc\/meminfo\)$/));

  it('the receiving process started by hand without its control socket', async () => {
    // fd 3 of a Node process is one of Node's own: it must be refused, not used or closed
    const r = await runCliText(['bench', 'ipc', 'peer', '--control-fd', '3']);
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toBe('iolab: fd 3 is not the control socket bench ipc passes (a seqpacket socket)');
  });

  it('an unknown transport, mode or check', async () => {
    await bad(['--transports', 'carrier-pigeon'], /^iolab: --transports: unknown transport 'carrier-pigeon' \(known: stream-copy, .*io_uring-stream\)$/);
    await bad(['--mode', 'sideways'], /^iolab: --mode: expected throughput, pingpong or both, got 'sideways'$/);
    await bad(['--check', 'some'], /^iolab: --check: expected sampled or full, got 'some'$/);
  });
});

describe('bench ipc: interrupted and broken runs', { timeout: 120_000 }, () => {
  it('a receiver that dies mid-run: the sender says so, exit 1, nothing left', async () => {
    const before = devShm();
    const { child, tag } = await startLongRun();
    const peer = processesTagged(tag).find((p) => p.cmdline.includes('bench ipc peer'));
    expect(peer).toBeDefined();
    process.kill(peer!.pid, 'SIGKILL');
    const r = await child;
    expect(r.exitCode).toBe(1);
    expect(iolabLines(r.stderr)).toEqual([expect.stringMatching(
      new RegExp(`^iolab: the receiving process \\(pid ${peer!.pid}\\) was killed by SIGKILL during .+ at .+ \\(round \\d+\\); the run stopped$`))]);
    expect(r.stderr).not.toMatch(/\n\s+at /); // no stack
    expect(processesTagged(tag)).toEqual([]);
    expect(devShm()).toEqual(before);
  });

  it('Ctrl-C (SIGINT to the process group): the finished cells as a partial table, cleaned up, exit 130', async () => {
    const before = devShm();
    const { child, tag } = await startLongRun();
    process.kill(-child.pid!, 'SIGINT');
    const r = await child;
    expect(r.exitCode).toBe(130);
    expect(r.stdout).toMatch(/^bench ipc: .*, PARTIAL: interrupted by SIGINT after \d+ of 14000 cells$/m);
    expect(r.stdout).toMatch(/^shm-queue +64 B +[\d,]+ +[\d.]+ [kMG]?B\/s +[\d.]+x$/m);
    expect(processesTagged(tag)).toEqual([]);
    expect(devShm()).toEqual(before);
  });

  it('SIGTERM to the sender alone, with --json: the partial results in JSON', async () => {
    const { child, tag } = await startLongRun(['--json']);
    child.kill('SIGTERM');
    const r = await child;
    expect(r.exitCode).toBe(130);
    const report = JSON.parse(r.stdout);
    expect(report.partial).toMatchObject({ interruptedBy: 'SIGTERM', cellsPlanned: 14000 });
    expect(report.rows.length).toBeGreaterThan(0);
    expect(processesTagged(tag)).toEqual([]);
  });
});

describe('bench ipc with io_uring refused', { timeout: 60_000 }, () => {
  let dir: ReturnType<typeof shortTempDir>;
  let refuse: string;
  beforeAll(() => {
    dir = shortTempDir('iolab-ipc-');
    refuse = buildSeccompRefuser(dir.path);
  });
  afterAll(() => dir.cleanup());

  const refused = (...args: string[]) => {
    const [file, argv] = iolabArgv(['bench', 'ipc', '--sizes', '4k', '--duration', '20ms', '--rounds', '1', ...args]);
    return execa(refuse, ['EPERM', file, ...argv], { reject: false });
  };

  it('says unavailable for io_uring-stream and runs the rest', async () => {
    const r = await refused('--transports', 'stream-copy,io_uring-stream');
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/^stream-copy +4 KiB /m);
    expect(r.stdout).toMatch(/^io_uring-stream +unavailable: io_uring_setup refused: Operation not permitted$/m);
  });

  it('is one line when io_uring-stream is all that was asked for (by its old name, uring-stream)', async () => {
    const r = await refused('--transports', 'uring-stream');
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toBe('iolab: io_uring-stream is unavailable: io_uring_setup refused: Operation not permitted');
  });
});
