// iolab report on the JSON of real benchmark runs: which charts each input gives, one mark per
// datum (counted from the raw JSON here, not by the report's own reader), a page that loads
// nothing, and in Debian's Chromium: no console error, no request but the file, every chart's
// SVG with as many marks as its data has, axis titles, a legend, the machine and the command.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { projectRoot } from '../src/native.js';
import { runCli } from './support/cli.js';
import { shortTempDir } from './support/temp.js';
import { makeBenchInputs, type BenchInputs } from './support/bench-inputs.js';
import { chromiumPath, launchChromium } from './support/browser.js';

const tmp = shortTempDir('iolab-report-');
let inputs: BenchInputs;
let page: string;
let html: string;

type Json = Record<string, any>;
const load = (name: string): Json => JSON.parse(readFileSync(inputs.files[name], 'utf8'));

/** Job-directions that moved data, as a fio-plot style reader counts them. */
function iopsPoints(doc: Json): number {
  return doc.jobs.reduce((n: number, j: Json) => n + ['read', 'write'].filter((d) => j[d]?.iops > 0).length, 0);
}

beforeAll(async () => {
  inputs = await makeBenchInputs(tmp.path);
  page = join(tmp.path, 'report.html');
  const r = await runCli(['report', ...Object.values(inputs.files), '-o', page], { timeout: 120_000 });
  expect(r.stderr).toBe('');
  expect(r.exitCode).toBe(0);
  html = readFileSync(page, 'utf8');
}, 300_000);
afterAll(() => tmp.cleanup());

/** data-marks of each figure, by id. */
function declaredMarks(): Map<string, number> {
  return new Map([...html.matchAll(/<figure class="chart" id="([^"]+)" data-mark-type="\w+" data-marks="(\d+)">/g)].map((m) => [m[1], Number(m[2])]));
}

describe('iolab report', () => {
  it('charts every input with as many points as the JSON has figures', () => {
    const marks = declaredMarks();
    const order = Object.keys(inputs.files);
    const at = (name: string) => order.indexOf(name);
    const iops = load('iops');
    expect(marks.get(`f${at('iops')}-iops-0`)).toBe(iopsPoints(iops));
    expect(marks.get(`f${at('iops')}-p99-0`)).toBe(iopsPoints(iops));
    const echo = load('echo');
    const echoPoints = Object.values(echo.medians as Record<string, object>).reduce((n, m) => n + Object.keys(m).length, 0);
    expect(echoPoints).toBe(4);
    expect(marks.get(`f${at('echo')}-echo`)).toBe(echoPoints);
    // the servers' CPU per request, per generator: as many points as the report has cells
    const cpuPoints = Object.values(echo.byGenerator as Record<string, Record<string, object>>)
      .reduce((n, g) => n + Object.values(g).reduce((k, m) => k + Object.keys(m).length, 0), 0);
    expect(cpuPoints).toBe(4);
    expect(marks.get(`f${at('echo')}-echo-cpu`)).toBe(cpuPoints);
    expect(marks.get(`f${at('api')}-api`)).toBe(load('api').rows.filter((r: Json) => r.opsPerSec > 0 && r.messageBytes === undefined).length);
    // the channel group's rows, one bar per contender and message size (the ping-pong group's
    // rows are round trip times: charted apart, a p50 and a p99 point per path and size)
    expect(load('api').rows.filter((r: Json) => r.group === 'pingpong')).toHaveLength(12);
    const roundTrips = (doc: Json) => doc.rows.filter((r: Json) => r.group === 'pingpong' && r.rttP50Us > 0)
      .reduce((k: number, r: Json) => k + (r.rttP99Us > 0 ? 2 : 1), 0);
    expect(marks.get(`f${at('api')}-api-pingpong`)).toBe(roundTrips(load('api')));
    // bench api --groups pingpong alone: its round trips are its only chart
    expect(roundTrips(load('pingpong'))).toBe(24); // 4 paths at 3 sizes, p50 and p99
    expect([...marks.keys()].filter((k) => k.startsWith(`f${at('pingpong')}-`))).toEqual([`f${at('pingpong')}-api-pingpong`]);
    expect(marks.get(`f${at('pingpong')}-api-pingpong`)).toBe(24);
    if (inputs.files.http) {
      // bench http: a point per server and cell, whatever servers ran (fastify's where installed)
      const http = load('http');
      const cells = Object.values(http.cells as Record<string, Record<string, Json>>).flatMap((row) => Object.values(row));
      expect(cells.length).toBe(4 * Object.keys((Object.values(http.cells)[0]) as object).length);
      expect(Object.keys(Object.values(http.cells)[0] as object)).toEqual(expect.arrayContaining(['node', 'ring']));
      expect(marks.get(`f${at('http')}-http`)).toBe(cells.filter((c) => c.reqPerSec > 0).length);
      expect(marks.get(`f${at('http')}-http-cpu`)).toBe(cells.filter((c) => c.serverUsPerReq !== undefined).length);
    }
    expect(marks.get(`f${at('api')}-api-channel`)).toBe(load('api').rows.filter((r: Json) => r.opsPerSec > 0 && r.messageBytes !== undefined && r.group !== 'pingpong').length);
    expect(marks.get(`f${at('api')}-api-channel`)).toBe(40); // 10 contenders at 4 sizes
    // bench latency: p50, p99, p99.9 of reads and of writes, per engine
    const latency = load('latency');
    expect(latency.engines.map((e: Json) => e.engine)).toEqual(['sync', 'io_uring']);
    expect(marks.get(`f${at('latency')}-latency`)).toBe(latency.engines.filter((e: Json) => e.read).length * 6);
    // the percentile curve at the lowest point: every p1..p99.99 of every engine that ran there
    const pct = [...marks.keys()].filter((k) => k.startsWith(`f${at('iops')}-pct-0-`)).sort();
    expect(pct.length).toBeGreaterThan(0);
    if (inputs.files.fio) {
      const fio = load('fio');
      expect(marks.get(`f${at('fio')}-iops-0`)).toBe(iopsPoints(fio));
      expect(iopsPoints(fio)).toBe(2);
    }
    if (inputs.files.vsFio) {
      const doc = load('vsFio');
      const fioPoints = doc.vs_fio.engines.filter((e: Json) => e.fio_iops > 0).length;
      expect(marks.get(`f${at('vsFio')}-iops-0`)).toBe(iopsPoints(doc) + fioPoints);
      expect(html).toMatch(/IOPS iolab \/ fio-/);
    }
    if (inputs.files.ipc) {
      const doc = load('ipc');
      expect(marks.get(`f${at('ipc')}-ipc`)).toBe(doc.rows.length + Object.keys(doc.memcpyBytesPerSec).length);
    }
  });

  it('the ratio tables: echo\'s, bench api\'s (its round trips\' too) and bench http\'s', () => {
    expect(html).toMatch(/<caption>echo req\/s ratios<\/caption>[\s\S]*io_uring\/epoll at 2 clients/);
    expect(html).toMatch(/<caption>echo server us\/req ratios \(lower: less CPU per request\)<\/caption>[\s\S]*io_uring\/epoll at 2 clients, epoll generator/);
    expect(html).toMatch(/<caption>bench api ratios<\/caption>/);
    expect(html).toMatch(/<caption>bench api ping-pong p50 round trip ratios \(lower is faster\)<\/caption>[\s\S]*ring\.pingpong\/64 \/ c\.pingpong\/64/);
    if (inputs.files.http) {
      expect(html).toMatch(/<caption>bench http req\/s ratios \(higher is faster\)<\/caption>[\s\S]*ring\/node at 8 connections x 4 in flight/);
      expect(html).toMatch(/<caption>bench http CPU per request ratios \(lower is leaner\)<\/caption>/);
    }
  });

  it('is self-contained: no script, no link, no external source, a policy that refuses loads', () => {
    expect(html).not.toMatch(/<script|<link|<iframe|<img|@import|url\(/i);
    expect(html).not.toMatch(/\s(src|href)="(?!#)/i);
    expect(html).toContain(`content="default-src 'none'; style-src 'unsafe-inline'; img-src data:"`);
  });

  it('says machine and command for every input that records them', () => {
    const api = load('api');
    expect(html).toContain(`kernel ${api.machine.kernel}`);
    expect(html).toContain(`command: ${api.command.join(' ')}`);
  });

  it.skipIf(!chromiumPath)('renders in Chromium from file://: no console error, no request, every chart\'s marks', async () => {
    const { browser, close } = await launchChromium();
    try {
      const tab = await browser.newPage();
      const errors: string[] = [];
      const requests: string[] = [];
      tab.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
      tab.on('pageerror', (e) => errors.push(e.message));
      tab.on('request', (r) => requests.push(r.url()));
      const url = pathToFileURL(page).href;
      await tab.goto(url);
      const figures = await tab.$$eval('figure.chart', (fs) => fs.map((f) => {
        const type = f.getAttribute('data-mark-type');
        const svg = f.querySelector('svg');
        const text = [...(svg?.querySelectorAll('text') ?? [])].map((t) => t.textContent ?? '');
        return {
          id: f.id, declared: Number(f.getAttribute('data-marks')),
          drawn: svg ? svg.querySelectorAll(`g.mark-${type}.role-mark > path`).length : -1,
          axisTitles: svg ? svg.querySelectorAll('g.role-axis-title text').length : 0,
          legends: svg ? svg.querySelectorAll('g.role-legend').length : 0,
          machine: text.some((t) => t.includes('machine:')), command: text.some((t) => t.includes('command:')),
        };
      }));
      expect(errors).toEqual([]);
      expect(requests).toEqual([url]);
      expect(figures.length).toBe(declaredMarks().size);
      for (const f of figures) {
        expect(f, f.id).toMatchObject({ drawn: f.declared, axisTitles: 2, machine: true, command: true });
        expect(f.legends, f.id).toBeGreaterThan(0);
      }
      const shots = join(projectRoot, 'bench-results');
      mkdirSync(shots, { recursive: true });
      await tab.setViewportSize({ width: 1000, height: 800 });
      await tab.screenshot({ path: join(shots, 'report-test.png'), fullPage: true });
    } finally {
      await close();
    }
  }, 120_000);
});

describe('iolab report refusals', () => {
  it('a file of another shape, a non-JSON file, a missing file: one line each, nothing written', async () => {
    const other = join(tmp.path, 'other.json');
    writeFileSync(other, JSON.stringify({ hello: 'world' }));
    const text = join(tmp.path, 'notes.txt');
    writeFileSync(text, 'not json\n');
    const out = join(tmp.path, 'refused.html');
    for (const [file, why] of [[other, 'not a benchmark JSON iolab can chart'], [text, 'not JSON'], [join(tmp.path, 'gone.json'), 'no such file']]) {
      const r = await runCli(['report', file, '-o', out]);
      expect(r.exitCode).toBe(1);
      expect(String(r.stderr).startsWith(`iolab: ${file}: ${why}`)).toBe(true);
      expect(String(r.stderr).trim().split('\n')).toHaveLength(1);
      expect(existsSync(out)).toBe(false);
    }
  });

  it('an existing file needs --force; a symlink is never written through', async () => {
    const existing = join(tmp.path, 'existing.html');
    writeFileSync(existing, 'mine');
    let r = await runCli(['report', inputs.files.echo, '-o', existing]);
    expect(r.exitCode).toBe(1);
    expect(String(r.stderr)).toBe(`iolab: -o: cannot write '${existing}': it exists (--force replaces it)`);
    expect(readFileSync(existing, 'utf8')).toBe('mine');
    const target = join(tmp.path, 'target.txt');
    writeFileSync(target, 'keep me');
    const link = join(tmp.path, 'link.html');
    symlinkSync(target, link);
    r = await runCli(['report', inputs.files.echo, '-o', link]);
    expect(r.exitCode).toBe(1);
    expect(String(r.stderr)).toBe(`iolab: -o: cannot write '${link}': it is a symlink to '${target}' (--force replaces the link itself, never its target)`);
    r = await runCli(['report', inputs.files.echo, '-o', link, '--force']);
    expect(r.exitCode).toBe(0);
    expect(lstatSync(link).isFile()).toBe(true);
    expect(readFileSync(target, 'utf8')).toBe('keep me');
    expect(() => readlinkSync(link)).toThrow();
  }, 90_000); // three report runs, each rendering the echo file's two charts: 26 s on a loaded machine
});
