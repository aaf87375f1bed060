// iolab report's inputs beyond the charts of test/report.test.ts: bench latency's JSON charted as
// latency percentiles, and an input that is no regular file (a FIFO would block the read
// forever) refused in one line.
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCliText } from './support/cli.js';
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
    expect(html).not.toContain('us/req');
  }, 60_000);
});
