// `iolab bench api` through the CLI (very short runs: the shape of the output, not speed), and
// the C floor of its fd-message group (native benchFdMessages): it really passes fds (an fd that
// cannot be passed fails the run with the errno), runs off the JS thread and leaves nothing
// behind; and the C part of the ping-pong group (pingpongEcho and pingpongLoop).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, mkdirSync, openSync, readdirSync, readFileSync, statSync, writeFileSync, writeSync, type Stats } from 'node:fs';
import { execa } from 'execa';
import { join } from 'node:path';
import { native, projectRoot } from '../src/native.js';
import { openFdCount, settledLiveObjects, zeroLiveObjects } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';
import { iolabArgv, runCli } from './support/cli.js';
import { createRequire } from 'node:module';
import { newProcessTag, processesTagged, processTagVariable } from './support/procs.js';

/** Whether usocket (a devDependency with a native part) loads under this Node. */
const usocketLoads = (() => {
  try {
    createRequire(import.meta.url)('usocket');
    return true;
  } catch {
    return false;
  }
})();

/** What must not change of a file bench api only reads. */
const pick = (st: Stats) => ({ size: st.size, mode: st.mode, ino: st.ino, mtimeMs: st.mtimeMs });

let dir: { path: string; cleanup: () => void };
beforeAll(() => { dir = shortTempDir('iolab-bench-api-'); });
afterAll(() => dir.cleanup());

/** `iolab bench api ...args`, SIGINTed once its stderr says `after`; its result. */
async function interruptedAfter(args: string[], after: string, env: Record<string, string>) {
  const [file, argv] = iolabArgv(['bench', 'api', ...args]);
  const child = execa(file, argv, { reject: false, env });
  let stderr = '';
  await new Promise<void>((resolve) => child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    if (stderr.includes(after)) resolve();
  }));
  child.kill('SIGINT');
  return child;
}

describe('iolab bench api', () => {
  it('--json prints one object with a row per contender', async () => {
    const out = join(dir.path, 'api.json');
    const run = await runCli(['bench', 'api', '--rounds', '1', '--duration', '10ms', '--size', '1m', '--json', '--output', out]);
    expect(run.stderr).toBe('');
    expect(run.exitCode).toBe(0);
    const report = JSON.parse(String(run.stdout));
    const pingpongRows = (size: number) => ['c.pingpong', 'ring.pingpong', 'net.pingpong', 'channel.pingpong'].map((c) => `${c}/${size}`);
    const channelRows = (size: number) => ['channel', 'channel.zeroCopy', 'channel.worker', 'process.send', 'net.unix', 'zeromq', 'sab.worker', 'c.shm-ring', 'MessagePort', 'memcpy'].map((c) => `${c}/${size}`);
    expect(report.rows.map((r: { contender: string; inflight: number; messageBytes?: number }) =>
      r.messageBytes === undefined ? `${r.contender}@${r.inflight}` : `${r.contender}/${r.messageBytes}`)).toEqual([
      'iolab.readvSync@1', 'fs.readvSync@1', 'ring.readv@1', 'fs.promises.readv@1', 'fs.read@1',
      'ring.readv@32', 'fs.promises.readv@32', 'fs.read@32', 'ring.readvBatch@32', 'ring.sendmsg@32', 'ring.sendmsgBatch@32', 'c.sendmsg@1',
      'iolab.sendmsg@1', 'usocket@32', ...channelRows(64), ...channelRows(1024), ...channelRows(64 << 10), ...channelRows(1 << 20), ...pingpongRows(64), ...pingpongRows(1024), ...pingpongRows(65536),
    ]);
    for (const row of report.rows) {
      // usocket is a native addon built for the Node that installed it: under another Node line
      // (CI's second run) its row says why it cannot be loaded, and the rest runs
      if (row.contender === 'usocket' && !usocketLoads) expect(row.unavailable).toMatch(/^usocket cannot be loaded/);
      else expect(row.opsPerSec).toBeGreaterThan(0);
    }
    if (usocketLoads) {
      expect(report.ratios.map((r: { name: string }) => r.name)).toEqual(expect.arrayContaining([
        'iolab.sendmsg@1 / usocket@32', 'ring.sendmsg@32 / usocket@32', 'ring.sendmsgBatch@32 / usocket@32',
      ]));
    }
    expect(report.machine).toBeDefined();
    expect(report.ratios.find((r: { name: string }) => r.name === 'ring.readv@32 / fs.promises.readv@32').goal).toBe(3);
    expect(JSON.parse(readFileSync(out, 'utf8')).rounds['ring.readv@32']).toHaveLength(1);
  }, 60_000); // every contender once (1 round of 10 ms each: the least it can do), its peers and workers started: 11.3 s beside a second suite, within 3x of the 30 s default

  it('where usocket cannot be loaded its row says unavailable and the rest runs', async () => {
    const blocker = join(projectRoot, 'test/fixtures/without-usocket.cjs');
    const run = await runCli(['bench', 'api', '--rounds', '1', '--duration', '5ms', '--size', '256k', '--only', 'iolab.sendmsg,usocket'],
      { env: { NODE_OPTIONS: `--require ${blocker}` } });
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toMatch(/^usocket\s+32\s+unavailable\s*$/m);
    expect(run.stdout).toMatch(/^usocket: usocket cannot be loaded: Cannot find module 'usocket'$/m);
    expect(run.stdout).toMatch(/^iolab\.sendmsg\s+1\s+[\d,]+/m);
    expect(run.stdout).not.toMatch(/usocket@32 =/); // no ratio over a row that did not run
    const json = await runCli(['bench', 'api', '--rounds', '1', '--duration', '5ms', '--size', '256k', '--only', 'usocket', '--json'],
      { env: { NODE_OPTIONS: `--require ${blocker}` } });
    expect(JSON.parse(String(json.stdout)).rows).toEqual([
      { contender: 'usocket', inflight: 32, opsPerSec: null, unavailable: "usocket cannot be loaded: Cannot find module 'usocket'" },
    ]);
  });

  it('Ctrl-C: the rounds that finished as a partial table, the temp file removed, exit 130', async () => {
    const tmpdir = join(dir.path, 'tmp');
    mkdirSync(tmpdir);
    const run = await interruptedAfter(['--rounds', '100', '--duration', '50ms', '--size', '256k', '--only', 'iolab.readvSync,fs.readvSync'], 'round 2/100 done', { TMPDIR: tmpdir });
    expect(run.exitCode).toBe(130);
    expect(run.stdout).toMatch(/^partial: interrupted by SIGINT; the rows hold the rounds that finished$/m);
    expect(run.stdout).toMatch(/^iolab\.readvSync\s+1\s+[\d,]+/m);
    expect(readdirSync(tmpdir).filter((n) => n.startsWith('iolab-'))).toEqual([]); // the page-cached test file is gone (tsx keeps its cache there)
  });

  it('the channel group: the channel beside process.send, a corked net.unix, zeromq, MessagePort, a SharedArrayBuffer ring, a C ring and memcpy at 64 B to 1 MiB, with the goals; its peers gone after', async () => {
    const tag = newProcessTag();
    const run = await runCli(['bench', 'api', '--groups', 'channel', '--rounds', '1', '--duration', '20ms', '--json'], { env: { [processTagVariable]: tag } });
    expect(run.stderr).toBe('');
    expect(run.exitCode).toBe(0);
    const report = JSON.parse(String(run.stdout));
    expect(report.rows).toHaveLength(40);
    for (const row of report.rows) {
      expect([64, 1024, 64 << 10, 1 << 20]).toContain(row.messageBytes);
      expect(row.opsPerSec).toBeGreaterThan(0);
      expect(row.bytesPerSec).toBe(row.opsPerSec * row.messageBytes);
    }
    expect(Object.keys(report.rounds)).toContain('channel/1m');
    const goals = Object.fromEntries(report.ratios.filter((r: { goal?: number }) => r.goal).map((r: { name: string; goal: number }) => [r.name, r.goal]));
    expect(goals).toMatchObject({ 'channel/64 / c.shm-ring/64': 0.25, 'channel/64k / c.shm-ring/64k': 0.8,
      'channel.worker/64 / sab.worker/64': 1, 'channel/1m / memcpy/1m': 0.5 });
    for (const s of ['64', '1k', '64k', '1m']) {
      // 2x whichever process peer was fastest in the run, ahead of the other two
      const peers = ['net.unix', 'zeromq', 'process.send'].map((p) => goals[`channel/${s} / ${p}/${s}`]);
      expect(peers.sort(), s).toEqual([1, 1, 2]);
      const rate = (c: string) => report.rows.find((r: { contender: string; messageBytes: number }) => `${r.contender}/${r.messageBytes}` === `${c}/${{ 64: 64, '1k': 1024, '64k': 65536, '1m': 1 << 20 }[s]}`).opsPerSec;
      const best = ['net.unix', 'zeromq', 'process.send'].sort((a, b) => rate(b) - rate(a))[0];
      expect(goals[`channel/${s} / ${best}/${s}`], s).toBe(2);
    }
    expect(Object.keys(goals)).toHaveLength(4 * 6 + 1); // channel/channel.zeroCopy: no goal, the copy's cost
    expect(processesTagged(tag)).toEqual([]); // the receiving process ended with the run
    const table = await runCli(['bench', 'api', '--groups', 'channel', '--rounds', '1', '--duration', '10ms', '--only', 'channel/64,net.unix']);
    expect(table.exitCode).toBe(0);
    expect(table.stdout).toMatch(/^contender\s+message\s+messages\/s \(median\)\s+min\s+max\s+JS-thread CPU\/msg\s+bytes\/s$/m);
    expect(table.stdout).toMatch(/^channel\s+64 B\s+[\d,]+\s+[\d,]+\s+[\d,]+\s+[\d.]+(ns|us)\s+[\d.]+ [kMG]?B\/s$/m);
    expect(table.stdout).toMatch(/^net\.unix\s+1 MiB\s+[\d,]+/m);
    expect(table.stdout).toMatch(/^channel\/64 \/ net\.unix\/64 = \d+\.\d\dx {2}\(goal >= 2\.0x: (met|not met)\)$/m);
  }, 90_000); // 10 s beside a second suite: seven peers started, two runs

  it.each(['channel/64', 'channel.worker/1m', 'process.send/64', 'net.unix/1m', 'MessagePort/64', 'zeromq/64', 'sab.worker/1m'])(
    'the channel group checks every message: one wrong byte on the %s row fails the run with one line', async (only) => {
      const run = await runCli(['bench', 'api', '--groups', 'channel', '--rounds', '1', '--duration', '10ms', '--only', only], { env: { IOLAB_API_FAULT: '3' } });
      const [contender, size] = only.split('/');
      expect(run.stderr).toMatch(new RegExp(`^iolab: ${contender.replace('.', '\\.')} at ${size === '64' ? '64 B' : '1 MiB'} delivered wrong bytes: message 3 differs at byte \\d+: expected 0x[0-9a-f]+, got 0x[0-9a-f]+$`));
      expect(run.exitCode).toBe(1);
    });

  it('Ctrl-C in the channel group: the finished rounds, marked partial, its peers gone, exit 130', async () => {
    const tag = newProcessTag();
    const run = await interruptedAfter(['--groups', 'channel', '--rounds', '100', '--duration', '20ms'], 'round 1/100 done', { [processTagVariable]: tag });
    expect(run.exitCode).toBe(130);
    expect(run.stdout).toMatch(/^partial: interrupted by SIGINT; the rows hold the rounds that finished$/m);
    expect(run.stdout).toMatch(/^channel\s+64 B\s+[\d,]+/m);
    expect(processesTagged(tag)).toEqual([]);
  });

  it('the ping-pong group: p50 <= p99 round trips for the Ring, net, the channel and the C floor at 64 B, 1 KiB and 64 KiB, with ratios; its peer gone after', async () => {
    const tag = newProcessTag();
    const out = join(dir.path, 'pingpong.json');
    const run = await runCli(['bench', 'api', '--groups', 'pingpong', '--rounds', '2', '--round-trips', '200', '--output', out], { env: { [processTagVariable]: tag } });
    expect(run.exitCode, String(run.stderr)).toBe(0);
    expect(processesTagged(tag)).toEqual([]); // the echoing child ended with the group
    const report = JSON.parse(readFileSync(out, 'utf8'));
    expect(report.options.roundTrips).toBe(200);
    const names = ['c.pingpong', 'ring.pingpong', 'net.pingpong', 'channel.pingpong'];
    expect(report.rows.map((r: { contender: string; messageBytes: number }) => `${r.contender}/${r.messageBytes}`))
      .toEqual([64, 1024, 65536].flatMap((size) => names.map((c) => `${c}/${size}`)));
    const table = String(run.stdout);
    expect(table).toMatch(/^contender\s+message\s+p50 RTT us\s+p99 RTT us\s+p50 min-max\s+round trips\/s\s+JS-thread CPU\/RTT$/m);
    for (const row of report.rows) {
      expect(row).toMatchObject({ group: 'pingpong', inflight: 1 });
      expect(row.rttP50Us).toBeGreaterThan(0);
      expect(row.rttP50Us).toBeLessThanOrEqual(row.rttP99Us);
      expect(row.opsPerSec).toBeGreaterThan(0);
      // far below the ~14 ms a Ring wait took before the wake-up was fixed (DEFER_TASKRUN's late eventfd signal)
      if (row.messageBytes === 64) expect(row.rttP50Us).toBeLessThan(5000);
      const key = `${row.contender}/${row.messageBytes === 64 ? '64' : row.messageBytes === 1024 ? '1k' : '64k'}`;
      expect(report.rtt[key].p50Us).toHaveLength(2);
      expect(row.rttP50Us).toBeCloseTo((report.rtt[key].p50Us[0] + report.rtt[key].p50Us[1]) / 2, 9);
      const size = row.messageBytes === 64 ? '64 B' : row.messageBytes === 1024 ? '1 KiB' : '64 KiB';
      expect(table).toMatch(new RegExp(`^${row.contender.replace('.', '\\.')}\\s+${size}\\s+${row.rttP50Us.toFixed(1)}\\s+${row.rttP99Us.toFixed(1)}\\s`, 'm'));
    }
    const p50 = (k: string) => report.rows.find((r: { contender: string; messageBytes: number }) => `${r.contender}/${r.messageBytes}` === k).rttP50Us;
    const ratio = report.rttRatios.find((r: { name: string }) => r.name === 'ring.pingpong/64 / c.pingpong/64');
    expect(ratio.ratio).toBeCloseTo(p50('ring.pingpong/64') / p50('c.pingpong/64'), 9);
    expect(table).toContain(`ring.pingpong/64 / c.pingpong/64 = ${ratio.ratio.toFixed(2)}x`);
    expect(report.rttRatios).toHaveLength(15);
    // the channel's round-trip goals: level with node:net, within 1.5x the C loop
    expect(report.rttRatios.filter((r: { goal?: number }) => r.goal).map((r: { name: string; goal: number }) => [r.name, r.goal]))
      .toEqual([['channel.pingpong/64 / c.pingpong/64', 1.5], ['channel.pingpong/64 / net.pingpong/64', 1]]);
    expect(table).toMatch(/^channel\.pingpong\/64 \/ net\.pingpong\/64 = \d+\.\d\dx {2}\(goal <= 1\.0x: (met|not met)\)$/m);
  });

  it('Ctrl-C in the ping-pong group: the finished rounds, marked partial, its peer gone, exit 130', async () => {
    const tag = newProcessTag();
    const run = await interruptedAfter(['--groups', 'pingpong', '--rounds', '100', '--round-trips', '50', '--only', 'ring.pingpong/64,c.pingpong/64'],
      'ping-pong round 1/100 done', { [processTagVariable]: tag });
    expect(run.exitCode).toBe(130);
    expect(run.stdout).toMatch(/^partial: interrupted by SIGINT; the rows hold the rounds that finished$/m);
    expect(run.stdout).toMatch(/^ring\.pingpong\s+64 B\s+[\d.]+\s+[\d.]+/m);
    expect(processesTagged(tag)).toEqual([]);
  });

  it('prints a table, and refuses bad input with one line', async () => {
    const run = await runCli(['bench', 'api', '--rounds', '1', '--duration', '5ms', '--size', '256k', '--only', 'ring.readv@32,fs.read@32', '--output', join(dir.path, 'b.json')]);
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toMatch(/^contender\s+in flight\s+ops\/s \(median\)\s+min\s+max\s+JS-thread CPU\/op$/m);
    expect(run.stdout).toMatch(/^ring\.readv\s+32\s+[\d,]+\s+[\d,]+\s+[\d,]+\s+[\d.]+(ns|us)$/m);
    expect(run.stdout).toMatch(/^ring\.readv@32 \/ fs\.read@32 = \d+\.\d\dx {2}\(goal >= 1\.5x: (met|not met)\)$/m);
    const bad = await runCli(['bench', 'api', '--rounds', '0']);
    expect(bad.stderr).toBe("iolab: option '--rounds <n>' argument '0' is invalid. expected a whole number >= 1, got '0'");
    expect(bad.exitCode).not.toBe(0);
    const group = await runCli(['bench', 'api', '--groups', 'read,nope']);
    expect(group.stderr).toBe("iolab: option '--groups <list>' argument 'read,nope' is invalid. expected groups of read, fd, channel, pingpong, got 'read,nope'");
    expect(group.exitCode).not.toBe(0);
    const none = await runCli(['bench', 'api', '--only', 'nothing', '--size', '64k', '--output', join(dir.path, 'c.json')]);
    expect(none.stderr).toMatch(/^iolab: --only: no contender named 'nothing' \(known: iolab\.readvSync, .*\)$/);
    expect(none.exitCode).toBe(1);
  });
});

describe('bench api --file', () => {
  it("reads the user's file (strace sees it opened) and leaves it as it was, still there", async () => {
    const f = join(dir.path, 'user-data.bin');
    writeFileSync(f, randomBytes(64 << 10));
    chmodSync(f, 0o444);
    const before = { ...pick(statSync(f)), bytes: readFileSync(f).toString('base64') };
    const log = join(dir.path, 'strace.log');
    const [node, argv] = iolabArgv(['bench', 'api', '--file', f, '--rounds', '1', '--duration', '5ms', '--only', 'iolab.readvSync,ring.readv', '--json']);
    const run = await execa('strace', ['-f', '-qq', '-e', 'trace=openat', '-o', log, node, ...argv], { reject: false, cwd: projectRoot });
    expect(run.exitCode).toBe(0);
    const report = JSON.parse(String(run.stdout));
    expect(report.options.file).toBe(f);
    expect(report.rows.map((r: { opsPerSec: number }) => r.opsPerSec > 0)).toEqual([true, true, true]);
    // opened read-only for the contenders, never for writing, never created
    const opens = readFileSync(log, 'utf8').split('\n').filter((l) => l.includes(`"${f}"`));
    expect(opens.length).toBeGreaterThan(0);
    for (const line of opens) expect(line).toMatch(/O_RDONLY/);
    expect({ ...pick(statSync(f)), bytes: readFileSync(f).toString('base64') }).toEqual(before);
  });

  it('a folder, a FIFO, a device, a file under one block, a missing file: one line each, at once', async () => {
    const folder = join(dir.path, 'folder');
    mkdirSync(folder);
    const fifo = join(dir.path, 'data.fifo');
    execFileSync('mkfifo', [fifo]);
    const small = join(dir.path, 'small.bin');
    writeFileSync(small, 'x'.repeat(100));
    const missing = join(dir.path, 'missing.bin');
    const what = 'a regular file to read';
    for (const [file, line] of [
      [folder, `${folder}: is a folder; name ${what}`],
      [fifo, `${fifo}: a FIFO (named pipe), not a regular file; name ${what}`],
      ['/dev/null', `/dev/null: a character device, not a regular file; name ${what}`],
      [small, `${small} is smaller than one 4 KiB block`],
      [missing, `${missing}: no such file`],
    ]) {
      // the timeout only ends a run that waits on the FIFO: a fixed iolab never meets it
      const r = await runCli(['bench', 'api', '--file', file, '--rounds', '1', '--duration', '5ms', '--only', 'iolab.readvSync'], { timeout: 20_000 });
      expect({ exitCode: r.exitCode, stdout: String(r.stdout), stderr: String(r.stderr) }, file).toEqual({ exitCode: 1, stdout: '', stderr: `iolab: ${line}` });
    }
    expect(statSync(fifo).isFIFO()).toBe(true);
  });
});

describe('bench api: the C floor of the fd-message group (benchFdMessages)', () => {
  it('passes fds for about the given time and closes every fd it received', async () => {
    const fdsBefore = openFdCount();
    const passed = openSync(`${projectRoot}/readv.c`, 'r');
    let ticks = 0;
    const timer = setInterval(() => ticks++, 5); // the JS thread stays free while it runs
    const r = await native.benchFdMessages(passed, 100);
    clearInterval(timer);
    closeSync(passed);
    expect(r.messages).toBeGreaterThan(1000);
    expect(r.seconds).toBeGreaterThanOrEqual(0.1);
    expect(ticks).toBeGreaterThan(0);
    expect(openFdCount()).toBe(fdsBefore);
    expect(await settledLiveObjects()).toEqual(zeroLiveObjects);
  });

  it('rejects with the errno when the fd cannot be passed', async () => {
    await expect(native.benchFdMessages(987654, 10)).rejects.toMatchObject({ code: 'EBADF', syscall: 'sendmsg' });
    expect(() => native.benchFdMessages(-1, 10)).toThrow(RangeError);
    expect(await settledLiveObjects()).toEqual(zeroLiveObjects);
  });
});

describe('bench api: the C part of the ping-pong group (pingpongEcho, pingpongLoop)', () => {
  it('exactly the round trips asked for, each timed (p50 <= p99), off the JS thread; the echo ends when its peer closes', async () => {
    const fdsBefore = openFdCount();
    const [a, b] = native.socketpair('stream');
    const echo = native.pingpongEcho(b);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1); // the JS thread stays free while they run
    for (const messageBytes of [64, 65536]) {
      const r = await native.pingpongLoop(a, { messageBytes, roundTrips: 500, durationMs: 0 });
      expect(r.roundTrips).toBe(500);
      expect(r.p50Ns).toBeGreaterThan(0);
      expect(r.p50Ns).toBeLessThanOrEqual(r.p99Ns);
    }
    clearInterval(timer);
    expect(ticks).toBeGreaterThan(0);
    native.close(a);
    await echo;
    native.close(b);
    expect(openFdCount()).toBe(fdsBefore);
    expect(await settledLiveObjects()).toEqual(zeroLiveObjects);
  });

  it('an echo that differs from what was sent fails the loop; bad arguments throw before anything starts', async () => {
    const [a, b] = native.socketpair('stream');
    writeSync(b, Buffer.alloc(64)); // a stale "echo" waiting before the first send
    await expect(native.pingpongLoop(a, { messageBytes: 64, roundTrips: 1, durationMs: 0 })).rejects.toMatchObject({ code: 'EBADMSG', syscall: 'pingpong check' });
    native.close(b);
    await expect(native.pingpongLoop(a, { messageBytes: 64, roundTrips: 1, durationMs: 0 })).rejects.toMatchObject({ code: 'EPIPE' });
    expect(() => native.pingpongLoop(a, { messageBytes: 0, durationMs: 0 })).toThrow(RangeError);
    expect(() => native.pingpongEcho(-1)).toThrow(RangeError);
    native.close(a);
    expect(await settledLiveObjects()).toEqual(zeroLiveObjects);
  });
});
