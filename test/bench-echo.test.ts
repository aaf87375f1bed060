// `iolab bench echo` through the CLI: the report's JSON (measured time, machine, command line),
// Ctrl-C (the finished rows and the partial one printed, the servers killed and reaped, exit
// 130), and --netns: two namespaces joined by a veth pair, removed on every way out.
import { execFileSync, spawnSync } from 'node:child_process';
import { execa } from 'execa';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { iolabArgv, runCli } from './support/cli.js';
import { runCliAs } from './support/demo.js';
import { newProcessTag, processTagVariable, processesTagged, waitFor } from './support/procs.js';
import { shortTempDir } from './support/temp.js';
import { closed, connectTo, echoOnce, establishedTo, processCpuTicks, socketCountOf } from './support/echo.js';
import { cpuTicks } from '../src/procfs.js';
import { projectRoot } from '../src/native.js';

const isRoot = process.getuid?.() === 0;
const hasIp = spawnSync('ip', ['-V']).status === 0;

/** Our namespaces and links (every bench echo --netns name starts with iolab). */
function iolabNetworkState(): { netns: string[]; links: string[] } {
  const netns = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' }).split('\n').map((l) => l.split(' ')[0]).filter((n) => n.startsWith('iolab-'));
  const links = execFileSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' }).split('\n').map((l) => l.split(': ')[1]?.split('@')[0] ?? '').filter((n) => n.startsWith('iolab'));
  return { netns: netns.sort(), links: links.sort() };
}

/** What a run (its pid) left behind: its namespaces (named with the owning pid, so another
 * suite's runs on this machine at the same time don't count), and links that were not there
 * before. */
function networkLeftBy(pid: number | undefined, before: { links: string[] }): { netns: string[]; links: string[] } {
  const now = iolabNetworkState();
  return { netns: now.netns.filter((n) => n.startsWith(`iolab-${pid}-`)), links: now.links.filter((l) => !before.links.includes(l)) };
}

/** The TCP port pid listens on (its one listening socket), from /proc/<pid>/net/tcp. */
function listeningPortOf(pid: number): number {
  for (const line of readFileSync(`/proc/${pid}/net/tcp`, 'utf8').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f[3] === '0A' && f[1]?.startsWith('0100007F:')) {
      const inode = f[9];
      const ours = readdirSync(`/proc/${pid}/fd`).some((fd) => { try { return readlinkSync(`/proc/${pid}/fd/${fd}`) === `socket:[${inode}]`; } catch { return false; } });
      if (ours) return parseInt(f[1].split(':')[1], 16);
    }
  }
  throw new Error(`pid ${pid} listens on no loopback TCP port`);
}

/** Whether this kernel has tc netem: tried on lo inside a namespace of its own. */
const hasNetem = ((): boolean => {
  if (!isRoot || !hasIp) return false;
  const ns = `iolab-probe-${randomBytes(4).toString('hex')}`;
  if (spawnSync('ip', ['netns', 'add', ns]).status !== 0) return false;
  try {
    return spawnSync('tc', ['-n', ns, 'qdisc', 'add', 'dev', 'lo', 'root', 'netem', 'delay', '1ms']).status === 0;
  } finally {
    spawnSync('ip', ['netns', 'del', ns]);
  }
})();

const quick = ['--clients', '10', '--duration', '1', '--rounds', '1', '--generators', 'epoll'];

/** Starts bench echo with a process tag; resolves the result, and lets the test act on stderr lines. */
function startBench(args: string[], env: Record<string, string> = {}) {
  const tag = newProcessTag();
  const child = runCli(['bench', 'echo', ...args], { env: { ...process.env, ...env, [processTagVariable]: tag } });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  return { child, tag, stderrSoFar: () => stderr };
}

describe('bench echo', () => {
  it('--json: samples over the measured time, the machine and the command line; --output writes the same (old spellings: --engines, uring)', async () => {
    const tmp = shortTempDir('iolab-bench-echo-');
    try {
      const out = join(tmp.path, 'echo.json');
      const r = await runCli(['bench', 'echo', ...quick, '--engines', 'epoll,uring', '--json', '--output', out]);
      expect(r.exitCode).toBe(0);
      const json = JSON.parse(String(r.stdout));
      expect(json).toMatchObject({ netns: false, interrupted: false, errors: 0, servers: ['epoll', 'io_uring'], command: ['iolab', 'bench', 'echo', ...quick, '--engines', 'epoll,uring', '--json', '--output', out] });
      expect(json).not.toHaveProperty('engines');
      expect(json.samples.map((s: { contender: string }) => s.contender).sort()).toEqual(['epoll', 'io_uring']);
      expect(json.machine).toMatchObject({ kernel: expect.any(String), cores: expect.any(Number) });
      expect(json.samples).toHaveLength(2);
      for (const s of json.samples) {
        expect(s.elapsedNs).toBeGreaterThanOrEqual(1e9);
        expect(s.elapsedNs).not.toBe(1e9);
        expect(s.reqPerSec).toBeCloseTo(s.responses / (s.elapsedNs / 1e9), 3);
        expect(s.partial).toBeUndefined();
      }
      expect(JSON.parse(readFileSync(out, 'utf8')).samples).toEqual(json.samples);
    } finally {
      tmp.cleanup();
    }
  });

  it('CPU per request: server and generator us/req per server under each generator, over the window the responses are counted in; the ratios printed are of server us/req', async () => {
    const tmp = shortTempDir('iolab-bench-echo-');
    try {
      const out = join(tmp.path, 'echo.json');
      const r = await runCli(['bench', 'echo', '--clients', '10', '--duration', '1', '--rounds', '1', '--servers', 'epoll,io_uring',
        '--generators', 'epoll,threads', '--output', out]);
      expect(r.exitCode, String(r.stderr)).toBe(0);
      const json = JSON.parse(readFileSync(out, 'utf8'));
      expect(json.generators).toEqual(['epoll', 'threads']);
      expect(json.samples).toHaveLength(4);
      for (const s of json.samples) {
        expect(s.responses).toBeGreaterThan(0);
        expect(s.serverUsPerReq).toBeGreaterThan(0);
        expect(s.generatorUsPerReq).toBeGreaterThan(0);
        // the CPU per second of window and the responses of the same window give the same figure
        expect(s.serverUsPerReq).toBeCloseTo(s.serverCpu * s.elapsedNs / 1e3 / s.responses, 6);
        expect(s.generatorUsPerReq).toBeCloseTo(s.clientCpu * s.elapsedNs / 1e3 / s.responses, 6);
        expect(json.byGenerator[s.generator]['10'][s.contender]).toEqual({ serverUsPerReq: s.serverUsPerReq, generatorUsPerReq: s.generatorUsPerReq,
          reqPerSec: s.reqPerSec, p50Ms: s.p50Ms, p99Ms: s.p99Ms });
      }
      const table = String(r.stdout);
      for (const g of ['epoll', 'threads']) {
        const cells = json.byGenerator[g]['10'];
        const usRatio = cells.io_uring.serverUsPerReq / cells.epoll.serverUsPerReq;
        expect(json.usPerReqRatios[g]['10']['io_uring/epoll']).toBeCloseTo(usRatio, 9);
        expect(json.reqPerSecRatios[g]['10']['io_uring/epoll']).toBeCloseTo(cells.io_uring.reqPerSec / cells.epoll.reqPerSec, 9);
        expect(table).toContain(`${g} generator, 10 clients: io_uring/epoll ${usRatio.toFixed(2)}x`);
        for (const e of ['epoll', 'io_uring']) {
          expect(table).toMatch(new RegExp(`^${e}\\s+10\\s+${g}\\s+${cells[e].serverUsPerReq.toFixed(2)}\\s+${cells[e].generatorUsPerReq.toFixed(2)}\\s+${Math.round(cells[e].reqPerSec)}\\s`, 'm'));
        }
      }
      expect(table).toContain('server us/req ratios (lower is better');
      // what older results held: req/s under the first generator, and the two generators compared on the epoll server
      expect(json.medians['10']).toEqual({ epoll: json.byGenerator.epoll['10'].epoll.reqPerSec, io_uring: json.byGenerator.epoll['10'].io_uring.reqPerSec });
      expect(json.ratios['10']['generator/thread-per-conn']).toBeCloseTo(json.byGenerator.epoll['10'].epoll.reqPerSec / json.byGenerator.threads['10'].epoll.reqPerSec, 9);
    } finally {
      tmp.cleanup();
    }
  }, 60_000);

  it("the TypeScript servers' rows beside the C io_uring one: node, ring and duplex (node:stream on the Ring), with ring/io_uring, duplex/ring and duplex/node ratios", async () => {
    const tmp = shortTempDir('iolab-bench-echo-');
    const out = join(tmp.path, 'echo.json');
    let r: Awaited<ReturnType<typeof runCli>>;
    let json;
    try {
      r = await runCli(['bench', 'echo', '--clients', '10', '--duration', '1', '--rounds', '1', '--servers', 'node,ring,duplex,io_uring', '--generators', 'epoll', '--output', out]);
      expect(r.exitCode, String(r.stderr)).toBe(0);
      json = JSON.parse(readFileSync(out, 'utf8'));
    } finally {
      tmp.cleanup();
    }
    expect(json).toMatchObject({ servers: ['node', 'ring', 'duplex', 'io_uring'], errors: 0 });
    const cells = json.byGenerator.epoll['10'];
    for (const e of ['node', 'ring', 'duplex', 'io_uring']) {
      expect(cells[e].reqPerSec).toBeGreaterThan(0);
      expect(cells[e].serverUsPerReq).toBeGreaterThan(0);
    }
    const ratios = json.usPerReqRatios.epoll['10'];
    expect(ratios['duplex/ring']).toBeCloseTo(cells.duplex.serverUsPerReq / cells.ring.serverUsPerReq, 9);
    expect(ratios['duplex/node']).toBeCloseTo(cells.duplex.serverUsPerReq / cells.node.serverUsPerReq, 9);
    expect(ratios['ring/io_uring']).toBeCloseTo(cells.ring.serverUsPerReq / cells.io_uring.serverUsPerReq, 9);
    expect(Object.keys(ratios)).toEqual(['io_uring/node', 'ring/node', 'ring/io_uring', 'duplex/ring', 'duplex/node']);
    const table = String(r.stdout);
    expect(table).toMatch(/^server\s+clients\s+generator\s+server us\/req/m);
    for (const e of ['node', 'ring', 'duplex', 'io_uring']) {
      const c = cells[e];
      expect(table).toMatch(new RegExp(`^${e}\\s+10\\s+epoll\\s+${c.serverUsPerReq.toFixed(2)}\\s+${c.generatorUsPerReq.toFixed(2)}\\s+${Math.round(c.reqPerSec)}\\s`, 'm'));
    }
    const x = (k: string) => `${k} ${ratios[k].toFixed(2)}x`;
    expect(table).toContain(`epoll generator, 10 clients: ${['io_uring/node', 'ring/node', 'ring/io_uring', 'duplex/ring', 'duplex/node'].map(x).join(', ')}`);
  }, 60_000);

  it('latency beside throughput: p50 and p99 per server in the table and the JSON; at 1 client the goal line, ring against io_uring and node', async () => {
    const tmp = shortTempDir('iolab-bench-echo-');
    const out = join(tmp.path, 'echo.json');
    let r: Awaited<ReturnType<typeof runCli>>;
    let json;
    try {
      r = await runCli(['bench', 'echo', '--clients', '1,10', '--duration', '1', '--rounds', '1', '--servers', 'ring,io_uring,node', '--generators', 'epoll', '--output', out]);
      expect(r.exitCode, String(r.stderr)).toBe(0);
      json = JSON.parse(readFileSync(out, 'utf8'));
    } finally {
      tmp.cleanup();
    }
    const table = String(r.stdout);
    expect(table).toMatch(/^server\s+clients\s+generator\s+server us\/req\s+generator us\/req\s+req\/s\s+p50 ms\s+p99 ms\s/m);
    expect(json.samples).toHaveLength(6);
    for (const s of json.samples) {
      expect(s.p50Ms).toBeGreaterThan(0);
      expect(s.p50Ms).toBeLessThanOrEqual(s.p99Ms);
      const c = json.byGenerator.epoll[String(s.clients)][s.contender];
      expect([c.p50Ms, c.p99Ms]).toEqual([s.p50Ms, s.p99Ms]); // one round: the median is the round's
      expect(table).toMatch(new RegExp(`^${s.contender}\\s+${s.clients}\\s+epoll\\s+\\S+\\s+\\S+\\s+${Math.round(c.reqPerSec)}\\s+${c.p50Ms.toFixed(3)}\\s+${c.p99Ms.toFixed(3)}\\s`, 'm'));
    }
    const one = json.byGenerator.epoll['1'];
    // a Ring wait settles in microseconds: the ~14 ms late wake-up DEFER_TASKRUN gave is far above this
    expect(one.ring.p50Ms).toBeLessThan(5);
    expect(json.p50Ratios.epoll['1']['ring/io_uring']).toBeCloseTo(one.ring.p50Ms / one.io_uring.p50Ms, 9);
    const goal = json.latencyGoals[0];
    expect(json.latencyGoals).toHaveLength(1);
    expect(goal).toMatchObject({ generator: 'epoll', clients: 1, p50Ms: { ring: one.ring.p50Ms, io_uring: one.io_uring.p50Ms, node: one.node.p50Ms } });
    expect(goal.parts.map((p: { pair: string; atMost: number }) => [p.pair, p.atMost])).toEqual([['ring/io_uring', 1.2], ['ring/node', 1]]);
    for (const p of goal.parts) expect(p.met).toBe(goal.ratios[p.pair] <= p.atMost);
    expect(goal.met).toBe(goal.parts.every((p: { met: boolean }) => p.met));
    const word = (pair: string) => (goal.ratios[pair] <= (pair === 'ring/node' ? 1 : 1.2) ? 'met' : 'NOT met');
    expect(table).toContain(`latency goal at 1 client, epoll generator: ring p50 ${one.ring.p50Ms.toFixed(3)} ms = ` +
      `${goal.ratios['ring/io_uring'].toFixed(2)}x io_uring's ${one.io_uring.p50Ms.toFixed(3)} ms (goal <= 1.2x: ${word('ring/io_uring')}), ` +
      `${goal.ratios['ring/node'].toFixed(2)}x node's ${one.node.p50Ms.toFixed(3)} ms (goal <= 1.0x: ${word('ring/node')})`);
  }, 60_000);

  it('SIGINT during the second run: prints the finished row and the partial one, kills and reaps its servers, exit 130', async () => {
    const signal = 'SIGINT';
    const bench = startBench(['--clients', '10', '--duration', '4', '--rounds', '2', '--servers', 'epoll,io_uring', '--generators', 'epoll']);
    await waitFor('the first run to finish', () => /round 1 10 clients epoll/.test(bench.stderrSoFar()), 20_000);
    const server = await waitFor('the second server', () => processesTagged(bench.tag).find((p) => p.cmdline.includes('--server io_uring')), 10_000);
    // the io_uring server's connections are direct descriptors, no fds of the server: count them on its port.
    const connected = () => { try { return establishedTo(listeningPortOf(server.pid)) >= 10; } catch { return false; } }; // not listening yet
    await waitFor('its 10 clients', connected, 20_000);
    await new Promise((r) => setTimeout(r, 500));
    const t0 = performance.now();
    bench.child.kill(signal);
    const r = await bench.child;
    expect(performance.now() - t0).toBeLessThan(3000);
    expect(r.exitCode).toBe(130);
    const out = String(r.stdout);
    expect(out).toMatch(/^epoll\s+10\s+epoll\s+[\d.]+/m);
    expect(out).toMatch(/^io_uring \(partial\)\s+10\s+epoll\s+[\d.]+ .*\*$/m);
    expect(out).toContain(`interrupted (${signal}): partial`);
    expect(processesTagged(bench.tag)).toEqual([]); // every server it started is gone
  }, 40_000);

  it('server CPU is the window\'s: load on the server before the window opens is not in it', async () => {
    // IOLAB_ECHO_LOAD_HOLD holds the generator, its clients connected, until the file exists;
    // meanwhile this test loads the server for 1 s with clients of its own. The server's CPU in
    // the JSON must fit in what it used from the end of that load until it exited.
    const tmp = shortTempDir('iolab-bench-echo-');
    const hold = join(tmp.path, 'window-may-open');
    try {
      const bench = startBench(['--clients', '10', '--duration', '1', '--rounds', '1', '--servers', 'epoll', '--generators', 'epoll', '--json'],
        { IOLAB_ECHO_LOAD_HOLD: hold });
      const server = await waitFor('the server', () => processesTagged(bench.tag).find((p) => p.cmdline.includes('echo server')), 20_000);
      const sockets = socketCountOf(server.pid);
      await waitFor('the generator\'s 10 clients (it holds now)', () => socketCountOf(server.pid) >= sockets + 10, 20_000);
      const port = listeningPortOf(server.pid);
      const ours = await Promise.all(Array.from({ length: 4 }, () => connectTo(port)));
      const until = performance.now() + 1000;
      await Promise.all(ours.map(async (s) => { while (performance.now() < until) await echoOnce(s, [Buffer.alloc(512, 7)], 512); }));
      await Promise.all(ours.map((s) => { s.destroy(); return closed(s); }));
      const afterOurLoad = processCpuTicks(server.pid);
      writeFileSync(hold, '');
      let last = afterOurLoad;
      while (processesTagged(bench.tag).some((p) => p.pid === server.pid)) {
        last = Math.max(last, cpuTicks(server.pid) ?? last);
        await new Promise((r) => setTimeout(r, 10));
      }
      const r = await bench.child;
      expect(r.exitCode).toBe(0);
      const sample = JSON.parse(String(r.stdout)).samples[0] as { serverCpu: number; elapsedNs: number };
      const serverCpuTicks = (sample.serverCpu * sample.elapsedNs / 1e9) * 100;
      // /proc/PID/stat truncates utime and stime to a tick each, so each reading is short by up
      // to 2 ticks and a difference of two readings by as much (the JSON's clock is exact)
      expect(serverCpuTicks).toBeLessThanOrEqual(last - afterOurLoad + 2);
    } finally {
      tmp.cleanup();
    }
  }, 60_000);

  it('SIGKILL of bench echo: its echo server dies with it', async () => {
    const bench = startBench(['--clients', '10', '--duration', '20', '--rounds', '1', '--servers', 'epoll', '--generators', 'epoll']);
    const server = await waitFor('the server', () => processesTagged(bench.tag).find((p) => p.cmdline.includes('echo server')), 20_000);
    const sockets = socketCountOf(server.pid);
    await waitFor('its 10 clients (it is listening and serving)', () => socketCountOf(server.pid) >= sockets + 10, 20_000);
    bench.child.kill('SIGKILL');
    await bench.child;
    await waitFor('every process it started to be gone', () => processesTagged(bench.tag).length === 0, 10_000);
  }, 40_000);
});

/** Until the generator in its namespace holds its clients' sockets: it is measuring, not still starting up. */
async function generatorConnected(tag: string, clients: number): Promise<void> {
  const generator = await waitFor('the generator in its namespace', () => processesTagged(tag).find((p) => p.cmdline.includes('echo bench')), 20_000);
  await waitFor(`its ${clients} connections`, () => socketCountOf(generator.pid) >= clients, 20_000);
}

describe.skipIf(!isRoot || !hasIp)('bench echo --netns (root, iproute2)', () => {
  it('runs server and generator in two namespaces over a veth pair and removes both', async () => {
    const before = iolabNetworkState();
    const child = runCli(['bench', 'echo', ...quick, '--servers', 'io_uring', '--netns', '--json']);
    const r = await child;
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    const json = JSON.parse(String(r.stdout));
    expect(json).toMatchObject({ netns: true, errors: 0, link: { serverAddress: '10.201.0.1', clientAddress: '10.201.0.2', mtu: 1500 } });
    expect(json.link.serverNamespace).toMatch(new RegExp(`^iolab-${child.pid}-[0-9a-f]{8}-server$`)); // the owning pid (see the SIGKILL test)
    expect(json.samples.every((s: { responses: number }) => s.responses > 0)).toBe(true);
    expect(networkLeftBy(child.pid, before)).toEqual({ netns: [], links: [] });
  }, 60_000);

  it('Ctrl-C mid-run: partial row, exit 130, namespaces and link removed', async () => {
    const before = iolabNetworkState();
    const bench = startBench(['--clients', '10', '--duration', '10', '--rounds', '1', '--servers', 'epoll', '--generators', 'epoll', '--netns']);
    await generatorConnected(bench.tag, 10);
    await new Promise((r) => setTimeout(r, 500));
    bench.child.kill('SIGINT');
    const r = await bench.child;
    expect(r.exitCode).toBe(130);
    expect(String(r.stdout)).toMatch(/^epoll \(partial\)\s+10\s+epoll\s+[\d.]+/m);
    expect(processesTagged(bench.tag)).toEqual([]);
    expect(networkLeftBy(bench.child.pid, before)).toEqual({ netns: [], links: [] });
  }, 60_000);

  it('a server killed mid-run: errors, exit 1, namespaces and link removed', async () => {
    const before = iolabNetworkState();
    const bench = startBench(['--clients', '10', '--duration', '3', '--rounds', '1', '--servers', 'epoll', '--generators', 'epoll', '--netns']);
    const server = await waitFor('the server', () => processesTagged(bench.tag).find((p) => p.cmdline.includes('echo server')), 20_000);
    await generatorConnected(bench.tag, 10);
    await new Promise((r) => setTimeout(r, 300));
    process.kill(server.pid, 'SIGKILL');
    const r = await bench.child;
    expect(r.exitCode).toBe(1);
    expect(String(r.stdout)).toMatch(/errors: \d+ \(see --json\)/);
    expect(processesTagged(bench.tag)).toEqual([]);
    expect(networkLeftBy(bench.child.pid, before)).toEqual({ netns: [], links: [] });
  }, 60_000);

  it('SIGKILL mid-run: server and generator die with it; the next --netns run removes its namespaces', async () => {
    const bench = startBench(['--clients', '10', '--duration', '20', '--rounds', '1', '--servers', 'epoll', '--generators', 'epoll', '--netns']);
    try {
      await generatorConnected(bench.tag, 10);
      // its own, by the pid in their names: another suite's runs on this machine make theirs meanwhile
      const ours = iolabNetworkState().netns.filter((n) => n.startsWith(`iolab-${bench.child.pid}-`));
      expect(ours).toHaveLength(2);
      bench.child.kill('SIGKILL');
      await bench.child;
      await waitFor('every process it started to be gone', () => processesTagged(bench.tag).length === 0, 10_000);
      expect(iolabNetworkState().netns).toEqual(expect.arrayContaining(ours)); // nothing removes them at SIGKILL
      const next = await runCli(['bench', 'echo', ...quick, '--servers', 'epoll', '--netns', '--json']);
      expect(next.exitCode).toBe(0);
      expect(iolabNetworkState().netns.filter((n) => ours.includes(n))).toEqual([]);
    } finally {
      bench.child.kill('SIGKILL'); // after a failure above: the run is not left for its 20 s
    }
  }, 90_000);

  it.skipIf(!hasNetem)('--netem delay=200us,rate=10gbit shapes the link and says so', async () => {
    const before = iolabNetworkState();
    const child = runCli(['bench', 'echo', ...quick, '--servers', 'epoll', '--netns', '--netem', 'delay=200us,rate=10gbit', '--json']);
    const r = await child;
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(String(r.stdout)).link.netem).toEqual({ delay: '200us', rate: '10gbit' });
    expect(networkLeftBy(child.pid, before)).toEqual({ netns: [], links: [] });
  }, 60_000);

  it.skipIf(hasNetem)('--netem on a kernel without netem: one line, exit 2, nothing left behind', async () => {
    const before = iolabNetworkState();
    const child = runCli(['bench', 'echo', ...quick, '--servers', 'epoll', '--netns', '--netem', 'delay=200us,rate=10gbit']);
    const r = await child;
    expect({ exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr }).toEqual({
      exitCode: 2, stdout: '', stderr: 'iolab: --netem: tc could not add netem: this kernel has no netem qdisc (sch_netem)' });
    expect(networkLeftBy(child.pid, before)).toEqual({ netns: [], links: [] });
  });

  it('without iproute2 on PATH: one line, exit 2', async () => {
    const r = await runCli(['bench', 'echo', ...quick, '--netns'], { env: { ...process.env, PATH: '/nonexistent' } });
    expect({ exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr }).toEqual({
      exitCode: 2, stdout: '', stderr: "iolab: --netns needs iproute2's ip command, which was not found" });
  });
});

describe('bench echo --netns, refused', () => {
  // runCliAs loads the CLI as root and then drops to the uid where that uid cannot read the
  // checkout (a clone under a 0700 folder), so this runs wherever the suite runs as root.
  it.skipIf(process.geteuid?.() !== 0)('as a user other than root: one line, exit 2', async () => {
    const r = await runCliAs(['bench', 'echo', ...quick, '--netns'], { uid: 65534 });
    expect({ exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr }).toEqual({
      exitCode: 2, stdout: '', stderr: 'iolab: --netns needs root (it creates network namespaces and a veth pair)' });
  });

  it('an unknown server, and --engines with --servers: one line, exit 1', async () => {
    const r = await runCli(['bench', 'echo', '--servers', 'epoll,uringx']);
    expect({ exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr }).toEqual({
      exitCode: 1, stdout: '', stderr: "iolab: unknown server 'uringx' (known: io_uring, epoll, node, ring, duplex)" });
    const both = await runCli(['bench', 'echo', '--servers', 'epoll', '--engines', 'epoll']);
    expect({ exitCode: both.exitCode, stdout: both.stdout, stderr: both.stderr }).toEqual({
      exitCode: 1, stdout: '', stderr: 'iolab: --engines is the old name of --servers: give one of them' });
  });

  it('an unknown generator: one line naming the known ones, exit 1', async () => {
    const r = await runCli(['bench', 'echo', '--generators', 'epoll,threadz']);
    expect({ exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr }).toEqual({
      exitCode: 1, stdout: '', stderr: "iolab: unknown generator 'threadz' (known: epoll, threads, io_uring)" });
  });

  it('--netem without --netns, and a bad --netem: usage errors, one line, exit 1 as every other', async () => {
    const a = await runCli(['bench', 'echo', '--netem', 'delay=1ms']);
    expect({ exitCode: a.exitCode, stderr: a.stderr }).toEqual({ exitCode: 1, stderr: 'iolab: --netem needs --netns (it shapes the veth link between the namespaces)' });
    const b = await runCli(['bench', 'echo', '--netns', '--netem', 'delay=fast']);
    expect(b.exitCode).toBe(1);
    expect(b.stderr).toBe("iolab: --netem: expected key=value pairs of delay, jitter, rate, loss (e.g. delay=200us,rate=10gbit), got 'delay=fast'");
  });
});

describe('bench echo: the open-file limit', () => {
  it('raises its soft limit to the hard one (the servers it starts inherit it)', async () => {
    // Node itself raises the soft limit as it starts, so it is lowered here after the start
    const child = execa(process.execPath, ['--input-type=module', '-e', `
      import { register } from 'tsx/esm/api';
      register();
      const { native } = await import('./src/native.ts');
      console.log('ready');
      process.stdin.once('data', () => {
        console.log(JSON.stringify([native.echoOpenFileLimit(), native.echoOpenFileLimit(true)]));
        process.exit(0);
      });`], { cwd: projectRoot, reject: false });
    await new Promise<void>((resolve) => child.stdout!.on('data', (d: Buffer) => { if (d.toString().includes('ready')) resolve(); }));
    execFileSync('prlimit', ['--pid', String(child.pid), '--nofile=256:4096']);
    child.stdin!.write('go\n');
    const r = await child;
    expect(JSON.parse(String(r.stdout).trim().split('\n').pop()!)).toEqual([{ soft: 256, hard: 4096 }, { soft: 4096, hard: 4096 }]);
  });

  it('under a hard limit too low for the largest client count: one line naming it and how to raise it, exit 2, no server started', async () => {
    const tag = newProcessTag();
    const [file, argv] = iolabArgv(['bench', 'echo', '--clients', '100,1000', '--duration', '1', '--rounds', '1']);
    const r = await execa('prlimit', ['--nofile=512:512', '--', file, ...argv], { cwd: projectRoot, reject: false, env: { ...process.env, [processTagVariable]: tag } });
    expect({ exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr }).toEqual({ exitCode: 2, stdout: '',
      stderr: 'iolab: --clients 1000 needs 1064 open files in the server and in the generator, above the hard open-file limit (RLIMIT_NOFILE 512); ' +
        'raise it (as root: ulimit -Hn 1064, or nofile in /etc/security/limits.conf) or run at most 448 clients' });
    expect(processesTagged(tag)).toEqual([]);
  });

  it('a soft limit below the client count and a hard one above it: runs, server and generator each holding every client', async () => {
    const [file, argv] = iolabArgv(['bench', 'echo', '--clients', '300', '--duration', '1', '--rounds', '1', '--servers', 'epoll', '--generators', 'epoll', '--json']);
    const r = await execa('prlimit', ['--nofile=128:4096', '--', file, ...argv], { cwd: projectRoot, reject: false });
    expect(r.exitCode, String(r.stderr)).toBe(0);
    const [s] = JSON.parse(String(r.stdout)).samples;
    expect(s).toMatchObject({ clients: 300, errors: 0 });
    expect(s.responses).toBeGreaterThan(0);
  }, 60_000);
});
