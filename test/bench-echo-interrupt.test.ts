// Ctrl-C at a terminal reaches the whole foreground process GROUP, bench echo's children too.
// Sent that way at every moment of a short run (a server starting, a round measuring, the next
// server starting), it must end the run as Ctrl-C ends every run: what finished printed, the
// cut-short round marked partial, exit 130, never "exited (null) before listening" and never
// the signal counted as the clients' errors (a server that died under its clients). The defect
// showed in 2 runs of 16, so each case runs several times.
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { execa } from 'execa';
import { iolabArgv } from './support/cli.js';
import { newProcessTag, processTagVariable, processesTagged, waitFor } from './support/procs.js';
import { projectRoot } from '../src/native.js';
import { checkLeaksAfterAll } from './support/leaks.js';

const isRoot = process.getuid?.() === 0;
const hasIp = spawnSync('ip', ['netns', 'list']).status === 0;
const run = ['bench', 'echo', '--clients', '10', '--duration', '1', '--rounds', '1', '--servers', 'io_uring,epoll', '--generators', 'epoll'];

interface EchoSample { contender: string; errors: number; partial?: boolean }

/** Starts `iolab ...args` as the leader of a process group of its own (as a shell starts a job),
 * sends SIGINT to the whole group after delayMs (or once stderr matches), and returns how it ended. */
async function interruptGroup(args: string[], when: number | RegExp) {
  const tag = newProcessTag();
  const [file, argv] = iolabArgv(args);
  const child = execa(file, argv, { reject: false, cwd: projectRoot, detached: true, env: { ...process.env, [processTagVariable]: tag } });
  if (typeof when === 'number') {
    await new Promise((r) => setTimeout(r, when));
  } else {
    let seen = '';
    await new Promise<void>((resolve) => {
      child.stderr!.on('data', (d: Buffer) => {
        seen += d.toString();
        if (when.test(seen)) resolve();
      });
      void child.finally(() => resolve());
    });
  }
  try {
    process.kill(-child.pid!, 'SIGINT');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;  // it ended before: a run that was not interrupted
  }
  const r = await child;
  // every child (servers, the generator in its namespace) gone with the run
  await waitFor('the run\'s processes to end', () => processesTagged(tag).length === 0, 10_000);
  return { exitCode: r.exitCode, signal: r.signal, stdout: String(r.stdout), stderr: String(r.stderr) };
}

/** What every interrupted run must show: exit 130, the report (JSON) marked interrupted, no
 * sample with errors, no refusal about a server that died before listening. A SIGINT that came
 * while Node was still starting, before iolab took the signal, ends it as it ends any program
 * (killed by SIGINT, which a shell reports as 130), with nothing started: undefined then. */
function expectInterruptedRun(r: { exitCode?: number; signal?: string; stdout: string; stderr: string }, what: string): EchoSample[] | undefined {
  expect(r.stderr, what).not.toMatch(/before listening|iolab:/);
  if (r.signal === 'SIGINT' && r.stdout === '') return undefined;
  expect(r.exitCode, `${what}: ${r.stderr}`).toBe(130);
  const json = JSON.parse(r.stdout) as { interrupted: boolean; signal: string; errors: number; samples: EchoSample[] };
  expect({ interrupted: json.interrupted, signal: json.signal, errors: json.errors }, what).toEqual({ interrupted: true, signal: 'SIGINT', errors: 0 });
  for (const s of json.samples) expect(s.errors, `${what}: ${s.contender}`).toBe(0);
  return json.samples;
}

describe('bench echo: SIGINT to the process group', { timeout: 240_000 }, () => {
  it('at any moment of a loopback run: exit 130, what finished printed, no error counted', async () => {
    // 0.1-0.3 s: the first server starting or its round measuring; ~1.2-1.5 s: the second server starting
    const delays = [100, 150, 200, 300, 600, 1100, 1200, 1250, 1300, 1400, 1500, 2000];
    let partial = 0;
    let reported = 0;
    for (const delay of delays) {
      const samples = expectInterruptedRun(await interruptGroup([...run, '--json'], delay), `SIGINT at ${delay} ms`);
      if (samples) reported++;
      partial += samples?.filter((s) => s.partial).length ?? 0;
    }
    // the loop reached iolab's handling in most runs and did cut rounds short, not only runs
    // that never measured
    expect(reported).toBeGreaterThanOrEqual(delays.length - 4);
    expect(partial).toBeGreaterThan(0);
    // the table: the round that finished, then the interruption said (SIGINT as the next server starts)
    const table = await interruptGroup(run, /^round 1 10 clients io_uring .*req\/s, p50 .* ms$/m);
    expect(table.exitCode).toBe(130);
    expect(table.stdout).toMatch(/^io_uring\s+10\s+epoll\s/m);
    expect(table.stdout).toMatch(/^interrupted \(SIGINT\): partial/m);
  });

  it.skipIf(!isRoot || !hasIp)('with --netns (root, iproute2), at 2.8 s and around it', async () => {
    // two rounds: every delay falls inside the run (namespaces made, servers starting, rounds measuring)
    for (const delay of [2500, 2800, 2800, 3100]) {
      expectInterruptedRun(await interruptGroup([...run, '--rounds', '2', '--netns', '--json'], delay), `--netns, SIGINT at ${delay} ms`);
    }
  });
});

checkLeaksAfterAll({ cleanup: () => {} });
