// iolab trace for real: bpftrace attaches to this kernel's tracepoints, the command runs, the
// counts are the command's own; on every way out nothing stays attached.
import { describe, expect, it } from 'vitest';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, runCliText } from './support/cli.js';
import { runCliAs } from './support/demo.js';
import { shortTempDir } from './support/temp.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import {
  alive, bpftraceChildren, childrenOf, commandName, leftoverDynamicProbes, processState, traceUnavailable, until,
} from './support/trace.js';
import { cliPath } from './support/cli.js';
import { execa } from 'execa';
import { projectRoot } from '../src/native.js';
import { newProcessTag, processesTagged, processTagVariable } from './support/procs.js';
import { addonUsdtNames, bpftraceBinary } from '../src/trace/probes.js';
import { usdtProbes } from '../src/trace/usdt.js';

const skip = traceUnavailable();
const tmp = shortTempDir('iolab-trace-');
checkLeaksAfterAll(tmp);

interface TraceJson {
  pid: number;
  exitCode: number;
  partial: boolean;
  ops: { opcode: string; count: number; inline: number; async: number; cqes: number; p50Ns: number | null }[];
  syscalls: { syscall: string; count: number; resultSum: number; threads: number }[];
  usdt: { probe: string; count: number }[];
  ringStages: { opcode: string; stage: string; count: number; p50Ns: number | null }[];
}

const usdtCount = (t: TraceJson, probe: string) => t.usdt.find((u) => u.probe === probe)?.count ?? 0;

/** The trace's JSON: all of stdout, one line (the command's own output goes to stderr). Node
 * 22 and later's libuv batches its epoll_ctl calls through an io_uring of its own
 * (IORING_OP_EPOLL_CTL): the trace shows those as it shows every io_uring op of the process;
 * these tests count the command's own, so they are left out here. */
function traceJson(stdout: string): TraceJson {
  expect(stdout.trimEnd(), 'one line').not.toContain('\n');
  const t = JSON.parse(stdout) as TraceJson;
  return { ...t, ops: t.ops.filter((o) => o.opcode !== 'EPOLL') };
}

/** bpftrace processes still running with a program filtered to pid. */
function bpftraceFor(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (cmd.startsWith('/') && cmd.includes('bpftrace') && cmd.includes(`@procs[${pid}] = 1;`)) out.push(Number(entry));
    } catch { /* gone */ }
  }
  return out;
}

function expectNothingAttached(pid: number): void {
  expect(bpftraceFor(pid)).toEqual([]);
  expect(leftoverDynamicProbes()).toEqual([]);
}

/** Starts `trace -- bench iops` on a 30 s io_uring job and waits until bpftrace and the traced
 * command both run. */
async function traceLongIops(name: string) {
  const file = join(tmp.path, name);
  const child = execa(process.execPath, [cliPath, 'trace', '--', 'bench', 'iops', '--filename', file, '--size', '8m',
    '--ioengine', 'io_uring', '--runtime', '30', '--time_based'], { reject: false, cwd: projectRoot });
  const tracer = child.pid!;
  let bpftrace = 0;
  let command = 0;
  await until(() => {
    bpftrace = bpftraceChildren(tracer)[0] ?? 0;
    command = childrenOf(tracer).find((c) => commandName(c) !== 'bpftrace') ?? 0;
    return bpftrace !== 0 && command !== 0 && !['T', ''].includes(processState(command));
  }, 30_000, 'the traced command to run');
  return { file, child, bpftrace, command };
}

describe.skipIf(skip !== undefined)(`iolab trace${skip ? ` (skipped: ${skip})` : ''}`, () => {
  it('counts the one READV of readv --io-uring, inline; --json: stdout is the JSON alone, the command\'s output on stderr', async () => {
    const r = await runCli(['trace', '--json', '--', 'readv', 'readv.c', '--io-uring'], { timeout: 60_000 });
    expect(r.stderr).not.toMatch(/^iolab:/m);
    expect(r.exitCode).toBe(0);
    expect(String(r.stderr)).toMatch(/^Read \d+ bytes:\nbuf1: /m);
    const t = traceJson(String(r.stdout));
    expect(t.ops.filter((o) => o.opcode === 'READV')).toMatchObject([{ count: 1, async: 0 }]);
    expect(t.ops.reduce((n, o) => n + o.count, 0)).toBe(1);
    expect(t.ops[0].p50Ns).toBeGreaterThan(0);
    // the Ring's side of the same op, stage by stage
    for (const probe of ['ring_queue', 'ring_submit', 'ring_complete', 'ring_settle']) expect(usdtCount(t, probe), probe).toBe(1);
    expect(t.ringStages.filter((r) => r.opcode === 'READV').map((r) => [r.stage, r.count])).toEqual(
      ['queue-submit', 'submit-kernel', 'kernel', 'kernel-reap', 'reap-settle', 'total'].map((stage) => [stage, 1]));
    const stage = (name: string) => t.ringStages.find((r) => r.stage === name)!.p50Ns!;
    expect(stage('total')).toBeGreaterThanOrEqual(stage('kernel'));
    expectNothingAttached(t.pid);
  }, 60_000);

  it('counts the 3,000 io_uring reads of bench iops --number_ios 3000; the layout shows as pwrite64', async () => {
    const file = join(tmp.path, 'uring.dat');
    // 12 MiB: room for 3,000 blocks (number_ios ends at the size, as fio's)
    const r = await runCli(['trace', '--json', '--', 'bench', 'iops', '--filename', file, '--size', '12m',
      '--ioengine', 'io_uring', '--number_ios', '3000'], { timeout: 90_000 });
    expect(r.exitCode, String(r.stderr)).toBe(0);
    const t = traceJson(String(r.stdout));
    const reads = t.ops.filter((o) => /^READ/.test(o.opcode)).reduce((n, o) => n + o.count, 0);
    expect(reads).toBe(3000);
    const layout = t.syscalls.find((s) => s.syscall === 'pwrite64');
    expect(layout?.resultSum).toBe(12 << 20);
    expect(usdtCount(t, 'io_issue')).toBe(3000);
    expect(usdtCount(t, 'io_complete')).toBe(3000);
    expectNothingAttached(t.pid);
  }, 90_000);

  it('times the syscalls of psync and libaio: every pread64 and io_submit', async () => {
    const file = join(tmp.path, 'sync.dat');
    const r = await runCli(['trace', '--json', '--', 'bench', 'iops', '--filename', file, '--size', '8m',
      '--ioengine', 'psync,libaio', '--number_ios', '1000'], { timeout: 90_000 });
    expect(r.exitCode, String(r.stderr)).toBe(0);
    const t = traceJson(String(r.stdout));
    expect(t.ops).toEqual([]);
    const call = (name: string) => t.syscalls.find((s) => s.syscall === name);
    expect(call('pread64')?.count).toBeGreaterThanOrEqual(1000);
    expect(call('io_submit')).toMatchObject({ count: 1000, resultSum: 1000 });
    expectNothingAttached(t.pid);
  }, 90_000);

  it('follows the processes the command forks: bench echo\'s io_uring server, its multishot accept and recv CQEs', async () => {
    const r = await runCli(['trace', '--json', '--', 'bench', 'echo', '--clients', '4', '--duration', '1', '--rounds', '1',
      '--servers', 'io_uring', '--generators', 'epoll'], { timeout: 90_000 });
    expect(r.exitCode, String(r.stderr)).toBe(0);
    const t = traceJson(String(r.stdout));
    expect(usdtCount(t, 'echo_accept')).toBe(4);
    expect(usdtCount(t, 'echo_close')).toBe(4);
    const op = (name: string) => t.ops.find((o) => o.opcode === name);
    // one multishot accept: a CQE per connection (posted without the request) and its last
    expect(op('ACCEPT')).toMatchObject({ count: 1 });
    expect(op('ACCEPT')!.cqes).toBeGreaterThanOrEqual(4);
    expect(op('RECV')!.count).toBe(4);
    expect(op('RECV')!.cqes).toBeGreaterThan(4);
    expectNothingAttached(t.pid);
  }, 90_000);

  it('a failing command: its error passes through, its exit status is kept, the trace still prints', async () => {
    const r = await runCli(['trace', '--json', '--', 'readv', join(tmp.path, 'missing.txt'), '--io-uring'], { timeout: 60_000 });
    expect(r.exitCode).toBe(1);
    expect(String(r.stderr)).toMatch(/^iolab: .*missing\.txt/m);
    const t = traceJson(String(r.stdout));
    expect(t.exitCode).toBe(1);
    expect(t.ops).toEqual([]);
    expectNothingAttached(t.pid);
  }, 60_000);

  it('Ctrl-C: the command is interrupted, the trace so far is printed as partial, exit 130, nothing left', async () => {
    const { file, child, bpftrace, command } = await traceLongIops('int.dat');
    // its reads have begun once the file is laid out (a loaded machine can take a while)
    await until(() => existsSync(file) && statSync(file).size === 8 << 20, 60_000, 'the layout');
    await new Promise((r) => setTimeout(r, 1500));
    child.kill('SIGINT');
    const r = await child;
    expect(r.exitCode).toBe(130);
    expect(String(r.stdout)).toMatch(/interrupted: partial/);
    expect(String(r.stdout)).toMatch(/^READ\s+[1-9]/m);
    expect(alive(bpftrace)).toBe(false);
    expect(alive(command)).toBe(false);
    expectNothingAttached(command);
  }, 90_000);

  it('kill -9 of iolab trace: the traced command and every process below it die with it; bpftrace ends too', async () => {
    // bench echo under trace: its servers are its children, the generator runs in it
    const tag = newProcessTag();
    const child = execa(process.execPath, [cliPath, 'trace', '--', 'bench', 'echo', '--servers', 'epoll', '--generators', 'epoll',
      '--clients', '1', '--duration', '3600', '--rounds', '1'], { reject: false, cwd: projectRoot, env: { [processTagVariable]: tag } });
    const tracer = child.pid!;
    let command = 0;
    await until(() => {
      command = childrenOf(tracer).find((c) => commandName(c) !== 'bpftrace') ?? 0;
      return command !== 0 && childrenOf(command).length > 0; // its server started
    }, 60_000, 'the traced bench echo to start its server');
    const tree = processesTagged(tag).map((p) => p.pid);
    expect(tree.length).toBeGreaterThanOrEqual(3); // bpftrace, bench echo, its server
    child.kill('SIGKILL');
    // (not `await child`: a traced command left running would hold its stdout open, and that waits for it)
    try {
      await until(() => processesTagged(tag).length === 0, 30_000, 'the processes of the trace to end');
    } finally {
      const left = processesTagged(tag);
      for (const p of left) process.kill(p.pid, 'SIGKILL'); // a failing run leaves nothing running
      await child;
      expect(left).toEqual([]);
    }
    expectNothingAttached(command);
  }, 120_000);

  it('bpftrace dying mid-run stops the command, says so in one line, exits non-zero, nothing left', async () => {
    const { child, bpftrace, command } = await traceLongIops('kill.dat');
    process.kill(bpftrace, 'SIGKILL');
    const r = await child;
    expect(r.exitCode).not.toBe(0);
    expect(String(r.stderr)).toMatch(/^iolab: bpftrace stopped while tracing .*the command was stopped$/m);
    expect(alive(command)).toBe(false);
    expectNothingAttached(command);
  }, 90_000);
});

describe.skipIf(skip !== undefined)(`the addon's USDT probes${skip ? ` (skipped: ${skip})` : ''}`, () => {
  it('bpftrace -l lists exactly the probes docs/trace.md documents', async () => {
    const listed = await addonUsdtNames(bpftraceBinary()!);
    const doc = readFileSync(join(projectRoot, 'docs/trace.md'), 'utf8');
    const section = doc.slice(doc.indexOf('## USDT probes in the addon'), doc.indexOf('\n## ', doc.indexOf('## USDT probes in the addon') + 5));
    const documented = [...section.matchAll(/^\| `(\w+)` \|/gm)].map((m) => m[1]).sort();
    expect(documented.length).toBeGreaterThan(0);
    expect(listed).toEqual(documented);
    expect(listed).toEqual(usdtProbes.map((p) => p.name).sort());
  });
});

describe('iolab trace refusals', () => {
  it.skipIf(process.geteuid?.() !== 0)('as uid 65534: one line says tracing needs root, the command does not run', async () => {
    const r = await runCliAs(['trace', '--', 'readv', 'readv.c'], { uid: 65534, gid: 65534 });
    expect(r.exitCode).not.toBe(0);
    expect(String(r.stderr).trim()).toMatch(/^iolab: tracing needs root \(or CAP_BPF and CAP_PERFMON\)[^\n]*$/);
    expect(String(r.stdout)).toBe('');
  });

  it.skipIf(skip !== undefined)('a bpftrace that fails before attaching: one line, the command never runs', async () => {
    const r = await runCli(['trace', '--', 'readv', 'readv.c'], { env: { IOLAB_BPFTRACE: '/bin/false' } });
    expect(r.exitCode).toBe(1);
    expect(String(r.stderr)).toMatch(/^iolab: bpftrace could not list the probes: [^\n]*$/);
    expect(String(r.stdout)).toBe('');
  });

  // Checked before bpftrace starts (it takes seconds to attach): the command's usage error
  // alone, no trace printed.
  it.each([
    [['frobnicate'], "iolab: unknown command 'frobnicate'"],
    [['readv', 'readv.c', '--sizes', '0'], /^iolab: option '--sizes <list>' argument '0' is invalid\. [^\n]*$/],
    [['bench', 'iops', '--bogus'], "iolab: unknown option '--bogus'"],
  ])('a bad command line %j: its usage error alone, before any tracing', async (args, message) => {
    const r = await runCliText(['trace', '--json', '--', ...args]);
    expect(r.stdout).toBe('');
    if (typeof message === 'string') expect(r.stderr).toBe(message);
    else expect(r.stderr).toMatch(message);
    expect(r.exitCode).toBe(1);
  });

  it('a command is required after --', async () => {
    const r = await runCli(['trace']);
    expect(r.exitCode).not.toBe(0);
    expect(String(r.stderr).trim()).toMatch(/^iolab: missing required argument/);
  });
});
