// `iolab bench http` through the CLI, with wrk (a load generator in C that iolab did not write)
// as the client: the JSON's cells, ratios and goals; the table; Ctrl-C mid-run (what finished,
// marked partial, the servers stopped and reaped, exit 130); the errors a user meets; --workers:
// the servers of several processes, their CPU summed, the spread over the workers.
import { describe, expect, it } from 'vitest';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, runCliText } from './support/cli.js';
import { newProcessTag, processTagVariable, processesTagged, waitFor } from './support/procs.js';

interface Cell { reqPerSec: number; p50Us: number; p99Us?: number; serverUsPerReq?: number }

describe('bench http', () => {
  it('measures node:http on node and on the Ring under wrk: req/s, p50 <= p99, CPU per request, ratios and goals', async () => {
    const r = await runCliText(['bench', 'http', '--servers', 'node,ring', '--connections', '1,8', '--in-flight', '1,4', '--duration', '1', '--rounds', '1', '--json']);
    expect(r.exitCode, r.stderr).toBe(0);
    const json = JSON.parse(r.stdout) as { cells: Record<string, Record<string, Cell>>; ratios: Record<string, Record<string, { reqPerSec: number }>>; goals: { text: string; met: boolean }[]; samples: unknown[]; errors: number; machine: unknown; command: string[] };
    expect(Object.keys(json.cells).sort()).toEqual(['1 x 1', '1 x 4', '8 x 1', '8 x 4']);
    for (const row of Object.values(json.cells)) {
      expect(Object.keys(row).sort()).toEqual(['node', 'ring']);
      for (const c of Object.values(row)) {
        expect(c.reqPerSec).toBeGreaterThan(0);
        expect(c.p50Us).toBeGreaterThan(0);
        if (c.p99Us !== undefined) expect(c.p50Us).toBeLessThanOrEqual(c.p99Us); // wrk 4.1 gives none at times
        expect(c.serverUsPerReq).toBeGreaterThan(0);
      }
    }
    // one connection, one request at a time: the Ring's wait is microseconds, not the ~16 ms
    // of a late wake-up (a p50 of 14 ms or more would be that)
    expect(json.cells['1 x 1'].ring.p50Us).toBeLessThan(5000);
    expect(json.samples).toHaveLength(8);
    expect(json.errors).toBe(0);
    expect(json.ratios['8 x 4']['ring/node'].reqPerSec).toBeGreaterThan(0);
    expect(json.goals.map((g) => g.text.split(':')[0])).toEqual(['1 x 1', '1 x 4', '8 x 1', '8 x 4']); // a goal for every cell
    expect(json.command).toContain('http');
  }, 120_000);


  it('--workers: node:http and onRing under node:cluster and onRing with reusePort, at 1 and 2 workers: CPU of every process, the spread per worker, ratios to node:cluster', async () => {
    const r = await runCliText(['bench', 'http', '--workers', '--connections', '8', '--in-flight', '1', '--duration', '1', '--rounds', '1', '--json']);
    expect(r.exitCode, r.stderr).toBe(0);
    type WorkerCell = Cell & { spread: { connections: [number, number]; requests: [number, number] } };
    const json = JSON.parse(r.stdout) as { workers: number[]; clusterScheduling: string; cells: Record<string, Record<string, WorkerCell>>; ratios: Record<string, Record<string, { reqPerSec: number }>>;
      samples: { workers: number; perWorker: { pid: number; connections: number; requests: number }[]; requests: number }[]; errors: number; goals: unknown[] };
    expect(json.workers).toEqual([1, 2]);
    expect(json.clusterScheduling).toBe('rr'); // node:cluster's default here
    expect(Object.keys(json.cells).sort()).toEqual(['1 worker, 8 x 1', '2 workers, 8 x 1']);
    for (const row of Object.values(json.cells)) {
      expect(Object.keys(row).sort()).toEqual(['node-cluster', 'ring-cluster', 'ring-reuseport']);
      for (const c of Object.values(row)) {
        expect(c.reqPerSec).toBeGreaterThan(0);
        expect(c.serverUsPerReq).toBeGreaterThan(0);
        expect(c.spread.requests[0]).toBeLessThanOrEqual(c.spread.requests[1]);
      }
    }
    for (const s of json.samples) {
      expect(s.perWorker).toHaveLength(s.workers); // one count per worker, each its own process
      expect(new Set(s.perWorker.map((w) => w.pid)).size).toBe(s.workers);
      // every request wrk counted was answered by one of the workers (wrk's first connection
      // may have asked nothing)
      expect(s.perWorker.reduce((n, w) => n + w.requests, 0)).toBeGreaterThanOrEqual(s.requests);
    }
    expect(Object.keys(json.ratios['2 workers, 8 x 1']).sort()).toEqual(['ring-cluster/node-cluster', 'ring-reuseport/node-cluster']);
    expect(json.goals).toEqual([]);
    expect(json.errors).toBe(0);
  }, 180_000);

  it('--workers 3 --servers ring-reuseport: any count; the table has the spread columns', async () => {
    const r = await runCliText(['bench', 'http', '--workers', '3', '--servers', 'ring-reuseport', '--connections', '12', '--in-flight', '1', '--duration', '1', '--rounds', '1']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^workers, conns x in flight +server +req\/s +p50 us +p99 us +server us\/req +conns\/worker +req\/worker$/m);
    expect(r.stdout).toMatch(/^3 workers, 12 x 1 +ring-reuseport +\d+ +\d+ +\d+ +[\d.]+ +\d+-\d+ +\d+-\d+$/m);
  }, 120_000);

  it.each([
    ['', ['--servers', 'node,ring', '--connections', '1'], /round 1 1 conn x 1 \w+:/, /^1 x 1 +(node|ring)/m],
    [' (--workers: every process of its servers)', ['--workers', '2', '--connections', '4'], /round 1 2 worker\(s\) 4 conn x 1 [\w-]+:/, /^2 workers, 4 x 1 +[\w-]+/m],
  ])('prints the table, then on SIGINT what finished, marked partial, stops its servers%s and exits 130', async (_, args, firstRun, row) => {
    const tag = newProcessTag();
    const bench = runCli(['bench', 'http', ...args, '--in-flight', '1', '--duration', '2', '--rounds', '3'], { env: { ...process.env, [processTagVariable]: tag } });
    let progress = '';
    bench.stderr!.on('data', (d: Buffer) => (progress += d));
    await waitFor('the first run', () => firstRun.test(progress), 60_000);
    bench.kill('SIGINT');
    const r = await bench;
    expect(r.exitCode).toBe(130);
    expect(String(r.stdout)).toMatch(/interrupted by SIGINT: partial/);
    expect(String(r.stdout)).toMatch(row);
    await waitFor('its servers gone', () => processesTagged(tag).length === 0, 10_000);
  }, 120_000);

  it('refuses an unknown server and a bad list in one line', async () => {
    const r = await runCliText(['bench', 'http', '--servers', 'node,apache']);
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toMatch(/^iolab: --servers: expected a comma-separated list of node, ring, fastify, fastify-ring, got 'node,apache'$/);
    const w = await runCliText(['bench', 'http', '--workers', '2', '--servers', 'node']);
    expect(w.stderr).toBe("iolab: --servers: expected a comma-separated list of node-cluster, ring-cluster, ring-reuseport (the servers of --workers), got 'node'");
    expect((await runCliText(['bench', 'http', '--workers', '0'])).stderr).toMatch(/^iolab: .*--workers/);
    const n = await runCliText(['bench', 'http', '--connections', '0']);
    expect(n.stderr).toMatch(/^iolab: .*--connections/);
  });

  it('alternates the servers each round, and says why wrk failed from its status and last line (a stand-in wrk on PATH)', async () => {
    // the stand-in answers at once with the line iolab's Lua makes wrk print, or fails as wrk does
    const bin = mkdtempSync(join(tmpdir(), 'iolab-fake-wrk-'));
    try {
      writeFileSync(join(bin, 'wrk'), `#!/bin/sh
[ "$1" = -v ] && { echo 'wrk 4.1.0 (a stand-in)'; exit 0; }
if [ "$WRK_FAILS" = signal ]; then echo 'killed' >&2; kill -KILL $$; fi
if [ -n "$WRK_FAILS" ]; then echo 'a first line' >&2; echo 'unable to connect to 127.0.0.1 Connection refused' >&2; exit 3; fi
echo 'Running 1s test'
echo '{"requests":2000,"durationUs":1000000,"p50Us":50,"p99Us":90,"errors":0}'
`);
      chmodSync(join(bin, 'wrk'), 0o755);
      const env = { ...process.env, PATH: `${bin}:${process.env.PATH}` };
      const args = ['bench', 'http', '--servers', 'node,ring', '--connections', '1', '--in-flight', '1', '--duration', '1'];
      const ok = await runCliText([...args, '--rounds', '6', '--json'], { env });
      expect(ok.exitCode, ok.stderr).toBe(0);
      const samples = (JSON.parse(ok.stdout) as { samples: { round: number; server: string; reqPerSec: number }[] }).samples;
      expect(samples.map((x) => `${x.round} ${x.server}`)).toEqual(['1 node', '1 ring', '2 ring', '2 node', '3 node', '3 ring', '4 ring', '4 node', '5 node', '5 ring', '6 ring', '6 node']);
      // each of the 12 servers let go of the run's Ctrl-C signal once it exited: Node warns at 11 listeners
      expect(ok.stderr).not.toMatch(/MaxListenersExceeded/);
      expect(samples.every((x) => x.reqPerSec === 2000)).toBe(true);
      const failed = await runCliText(args, { env: { ...env, WRK_FAILS: '1' } });
      expect(failed.exitCode).toBe(1);
      expect(failed.stderr).toBe('iolab: wrk failed (status 3): unable to connect to 127.0.0.1 Connection refused');
      const killed = await runCliText(args, { env: { ...env, WRK_FAILS: 'signal' } });
      expect(killed.stderr).toBe('iolab: wrk failed (SIGKILL): killed');
      // --workers: the progress line gives each worker's share (none here: the stand-in asks nothing)
      const spread = await runCliText(['bench', 'http', '--workers', '2', '--servers', 'node-cluster', '--connections', '2', '--in-flight', '1', '--duration', '1', '--rounds', '1'], { env });
      expect(spread.exitCode, spread.stderr).toBe(0);
      expect(spread.stderr).toMatch(/round 1 2 worker\(s\) 2 conn x 1 node-cluster: 2000 req\/s, .*per worker 0 conn 0 req \/ 0 conn 0 req/);
      // what a user reads in the help: each option says what it takes
      const help = await runCliText(['bench', 'http', '--help']);
      const words = (text: string) => new RegExp(text.split(' ').join('\\s+'));
      expect(help.stdout).toMatch(words('--in-flight <list> requests in flight per connection: 1, or more pipelined by wrk'));
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  });

  it('a run whose wrk fails stops every server it started before it rejects (runHttpBench called in a process that lives on)', async () => {
    const bin = mkdtempSync(join(tmpdir(), 'iolab-fake-wrk-'));
    const saved = { path: process.env.PATH, tag: process.env[processTagVariable] };
    const tag = newProcessTag();
    try {
      writeFileSync(join(bin, 'wrk'), `#!/bin/sh\n[ "$1" = -v ] && { echo 'wrk 4.1.0 (a stand-in)'; exit 0; }\necho 'unable to connect' >&2; exit 3\n`);
      chmodSync(join(bin, 'wrk'), 0o755);
      process.env.PATH = `${bin}:${saved.path}`;
      process.env[processTagVariable] = tag; // the servers inherit it
      const { runHttpBench } = await import('../src/bench/http.js');
      const run = runHttpBench({ connections: [1], inFlight: [1], durationSec: 1, rounds: 1, servers: ['node', 'ring'], threads: 1 }, () => {});
      await expect(run).rejects.toThrow('wrk failed (status 3): unable to connect');
      expect(processesTagged(tag)).toEqual([]);
    } finally {
      process.env.PATH = saved.path;
      if (saved.tag === undefined) delete process.env[processTagVariable];
      else process.env[processTagVariable] = saved.tag;
      for (const p of processesTagged(tag)) process.kill(p.pid, 'SIGKILL');
      rmSync(bin, { recursive: true, force: true });
    }
  });

  it('says in one line that wrk is needed where it is not on PATH', async () => {
    const r = await runCliText(['bench', 'http', '--duration', '1'], { env: { ...process.env, PATH: '/nonexistent' }, extendEnv: false });
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toBe('iolab: bench http needs wrk on PATH (Debian: apt-get install wrk)');
  });
});
