// `iolab bench http` through the CLI, with wrk (a load generator in C that iolab did not write)
// as the client: the JSON's cells, ratios and goals; the table; Ctrl-C mid-run (what finished,
// marked partial, the servers stopped and reaped, exit 130); the errors a user meets.
import { describe, expect, it } from 'vitest';
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
    expect(json.goals.map((g) => g.text.split(':')[0])).toEqual(['1 connection']); // 8 connections is below the goals' 100
    expect(json.command).toContain('http');
  }, 120_000);

  it('prints the table, then on SIGINT what finished, marked partial, stops its servers and exits 130', async () => {
    const tag = newProcessTag();
    const bench = runCli(['bench', 'http', '--servers', 'node,ring', '--connections', '1', '--in-flight', '1', '--duration', '2', '--rounds', '3'],
      { env: { ...process.env, [processTagVariable]: tag } });
    let progress = '';
    bench.stderr!.on('data', (d: Buffer) => (progress += d));
    await waitFor('the first run', () => /round 1 1 conn x 1 \w+:/.test(progress), 60_000);
    bench.kill('SIGINT');
    const r = await bench;
    expect(r.exitCode).toBe(130);
    expect(String(r.stdout)).toMatch(/interrupted by SIGINT: partial/);
    expect(String(r.stdout)).toMatch(/^1 x 1 +(node|ring)/m);
    await waitFor('its servers gone', () => processesTagged(tag).length === 0, 10_000);
  }, 120_000);

  it('refuses an unknown server and a bad list in one line', async () => {
    const r = await runCliText(['bench', 'http', '--servers', 'node,apache']);
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toMatch(/^iolab: --servers: expected a comma-separated list of node, ring, fastify, fastify-ring, got 'node,apache'$/);
    const n = await runCliText(['bench', 'http', '--connections', '0']);
    expect(n.stderr).toMatch(/^iolab: .*--connections/);
  });

  it('says in one line that wrk is needed where it is not on PATH', async () => {
    const r = await runCliText(['bench', 'http', '--duration', '1'], { env: { ...process.env, PATH: '/nonexistent' }, extendEnv: false });
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toBe('iolab: bench http needs wrk on PATH (Debian: apt-get install wrk)');
  });
});
