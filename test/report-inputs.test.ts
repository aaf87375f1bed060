// iolab report's inputs beyond the charts of test/report.test.ts: bench latency's JSON charted as
// latency percentiles, testIOPS mode's (bench iops FILE -m=rRD) as IOPS per engine, an
// interrupted bench iops run marked partial as every interrupted run is, the same file given
// twice refused, and an input that is no regular file (a FIFO would block the read forever)
// refused in one line.
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { execa } from 'execa';
import { randomBytes } from 'node:crypto';
import { existsSync, linkSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readBenchJson } from '../src/report/inputs.js';
import { iolabArgv, runCliText } from './support/cli.js';
import { waitFor } from './support/procs.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';

const tmp = shortTempDir('iolab-rinputs-');
const at = (name: string) => join(tmp.path, name);

describe('report: bench latency JSON', () => {
  it('charts the read and write latency percentiles of every engine that ran', async () => {
    const infile = at('in.txt');
    expect((await runCliText(['gen', infile, '--size', '64k'])).exitCode).toBe(0);
    const json = at('latency.json');
    const bench = await runCliText(['bench', 'latency', '--engine', 'sync,psync', '--count', '8', '--no-direct',
      '--infile', infile, '--outfile', at('out.dat'), '--output', json]);
    expect(bench.exitCode).toBe(0);
    const doc = JSON.parse(readFileSync(json, 'utf8'));
    const page = at('latency.html');
    const r = await runCliText(['report', json, '-o', page], { timeout: 120_000 });
    expect(r).toEqual({ exitCode: 0, stderr: '', stdout: `wrote ${page}: 1 chart(s) from 1 file(s)` });
    const html = readFileSync(page, 'utf8');
    // one point per engine, direction and percentile the JSON holds (p50, p99, p99.9; mean apart)
    const points = doc.engines.length * 2 * 3;
    expect(html).toContain(`<figure class="chart" id="f0-latency" data-mark-type="symbol" data-marks="${points}">`);
    expect(html).toContain('storage latency (bench latency)');
    expect(html).toContain('command: iolab bench latency --engine sync,psync');
  }, 180_000);
});

describe('report: bench iops runs', () => {
  it('testIOPS mode\'s JSON (bench iops FILE -m=rRD --json): IOPS per engine at QD 64', async () => {
    const data = at('testiops.dat');
    writeFileSync(data, randomBytes(1 << 20));
    const bench = await runCliText(['bench', 'iops', data, '-m=rRD', '--runtime', '1', '--direct=0', '--json']);
    expect(bench.exitCode).toBe(0);
    const json = at('testiops.json');
    writeFileSync(json, bench.stdout);
    const ran = JSON.parse(bench.stdout).engines.filter((e: { iops?: number }) => e.iops !== undefined).length;
    const page = at('testiops.html');
    const r = await runCliText(['report', json, '-o', page]);
    expect(r).toEqual({ exitCode: 0, stderr: '', stdout: `wrote ${page}: 1 chart(s) from 1 file(s)` });
    expect(readFileSync(page, 'utf8')).toContain(`<figure class="chart" id="f0-iops-0" data-mark-type="symbol" data-marks="${ran}">`);
  }, 120_000);

  it('an interrupted run (Ctrl-C) is charted marked partial: the section, every chart, the row cut short', async () => {
    const data = at('interrupted.dat');
    const json = at('interrupted.json');
    const [file, argv] = iolabArgv(['bench', 'iops', '--filename', data, '--size', '1m', '--rw', 'randread', '--ioengine', 'psync,libaio',
      '--runtime', '20s', '--time_based', '--output', json]);
    const child = execa(file, argv, { reject: false });
    await waitFor('the laid-out file', () => existsSync(data), 60_000);
    await new Promise((r) => setTimeout(r, 1500));  // into the first engine's run
    child.kill('SIGINT');
    expect((await child).exitCode).toBe(130);
    const page = at('interrupted.html');
    const r = await runCliText(['report', json, '-o', page]);
    expect(r.exitCode).toBe(0);
    const html = readFileSync(page, 'utf8');
    expect(html).toContain(`${json} (partial: interrupted)</h2>`);
    expect(html).toContain('PARTIAL: interrupted; the figures cover what finished');
    expect(html).toContain('psync (partial)');
  }, 120_000);
});

describe('report: the same file twice', () => {
  it('is refused, by its name or another path to it, before anything is read or written', async () => {
    const json = at('twice.json');
    writeFileSync(json, JSON.stringify({ rows: [{ contender: 'iolab.readvSync', inflight: 1, opsPerSec: 1000 }], ratios: [] }));
    const link = at('twice-link.json');
    linkSync(json, link);
    const page = at('twice.html');
    expect(await runCliText(['report', json, json, '-o', page]))
      .toEqual({ exitCode: 1, stdout: '', stderr: `iolab: ${json}: given twice; name each file once` });
    expect(await runCliText(['report', json, link, '-o', page]))
      .toEqual({ exitCode: 1, stdout: '', stderr: `iolab: ${link}: the same file as ${json}, given before; name each file once` });
    expect(existsSync(page)).toBe(false);
  });
});

describe('report: inputs that are not regular files', () => {
  it('a FIFO: one line naming it, at once, nothing written', async () => {
    const fifo = at('fifo.json');
    execFileSync('mkfifo', [fifo]);
    const page = at('fifo.html');
    // the timeout only ends a run that blocks on the FIFO: a fixed iolab never meets it
    const r = await runCliText(['report', fifo, '-o', page], { timeout: 20_000 });
    expect(r).toEqual({ exitCode: 1, stdout: '', stderr: `iolab: ${fifo}: a FIFO (named pipe), not a regular file; name a benchmark JSON file` });
    expect(existsSync(page)).toBe(false);
    expect(readdirSync(tmp.path).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });
});

checkLeaksAfterAll(tmp);

describe('report: bench echo JSON from before the generators were keyed', () => {
  it('charts req/s of the servers (the generator references apart) and no CPU chart', async () => {
    const json = at('old-echo.json');
    writeFileSync(json, JSON.stringify({ length: 512, duration: 10, rounds: 1, engines: ['uring', 'epoll'], netns: false,
      samples: [], medians: { 100: { uring: 185859, epoll: 143407, generator: 134346, 'thread-per-conn': 125892 }, 1000: { uring: 177567, epoll: 172966 } },
      ratios: { 100: { 'uring/epoll': 1.3, 'generator/thread-per-conn': 1.07 }, 1000: { 'uring/epoll': 1.03 } }, errors: 0, interrupted: false }));
    const page = at('old-echo.html');
    const r = await runCliText(['report', json, '-o', page]);
    expect(r).toEqual({ exitCode: 0, stderr: '', stdout: `wrote ${page}: 1 chart(s) from 1 file(s)` });
    const html = readFileSync(page, 'utf8');
    expect(html).toContain('<figure class="chart" id="f0-echo" data-mark-type="symbol" data-marks="4">');
    expect(html).toMatch(/<caption>echo req\/s ratios<\/caption>[\s\S]*generator\/thread-per-conn at 100 clients/);
    // its servers under their names of today: uring is io_uring
    expect(html).toMatch(/io_uring\/epoll at 100 clients/);
    expect(html).not.toMatch(/(?<!io_)uring\/epoll/);
    expect(html).not.toContain('us/req');
  }, 60_000);
});

describe('report: the keys and names of bench echo and bench ipc JSON, old and new', () => {
  it('reads the servers under `servers` (today) or `engines` (before), old server and transport names as today\'s', () => {
    const medians = { 100: { io_uring: 185859, epoll: 143407 } };
    const today = readBenchJson('echo.json', { servers: ['io_uring', 'epoll'], medians, ratios: {} });
    const before = readBenchJson('old.json', { engines: ['uring', 'epoll'], medians: { 100: { uring: 185859, epoll: 143407 } }, ratios: {} });
    for (const input of [today, before]) {
      expect(input).toMatchObject({ kind: 'echo', points: [{ server: 'io_uring', clients: 100, reqPerSec: 185859 }, { server: 'epoll', clients: 100, reqPerSec: 143407 }] });
    }
    const ipc = readBenchJson('ipc.json', { rows: [{ transport: 'shm-ring', mode: 'throughput', messageBytes: 64, bytesPerSec: 1e9 },
      { transport: 'uring-stream', mode: 'throughput', messageBytes: 64, bytesPerSec: 1e8 }], memcpyBytesPerSec: { 64: 2e9 } });
    expect(ipc).toMatchObject({ kind: 'ipc', rows: [{ transport: 'shm-queue' }, { transport: 'io_uring-stream' }] });
  });
});
