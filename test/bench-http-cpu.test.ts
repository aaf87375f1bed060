// bench http's CPU per request against the same server's CPU read here from /proc, in seconds
// by the machine's own clock tick (getconf CLK_TCK): the figure a user compares servers by is
// the server's CPU over the measured window, divided by the requests, in microseconds. A unit
// off by ten either way (ticks taken for milliseconds, or for tenths of a second) passed every
// other test.
import { afterAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from './support/cli.js';
import { newProcessTag, processTagVariable, processesTagged } from './support/procs.js';
import { shortTempDir } from './support/temp.js';

const ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());

/** The CPU seconds (user + system, every thread) pid used so far. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond;
}

interface Sample { connections: number; requests: number; serverUsPerReq?: number }

describe('bench http: the server\'s CPU per request', () => {
  const tmp = shortTempDir('iolab-http-cpu-');
  afterAll(() => tmp.cleanup());

  it("is the server's CPU over the window, per request, in microseconds: what /proc says of the same process", async () => {
    const tag = newProcessTag();
    // (the progress lines come without --json; the JSON goes to --output)
    const out = join(tmp.path, 'http.json');
    const bench = runCli(['bench', 'http', '--servers', 'node', '--connections', '4,8', '--in-flight', '4', '--duration', '2', '--rounds', '1', '--output', out],
      { env: { ...process.env, [processTagVariable]: tag } });
    // the server's CPU when each cell's line comes (a cell's window is from the line before it)
    const atLine: number[] = [];
    let server: number | undefined;
    const find = setInterval(() => {
      server ??= processesTagged(tag).find((p) => / bench http serve /.test(` ${p.cmdline} `))?.pid;
    }, 10);
    let progress = '';
    bench.stderr!.on('data', (d: Buffer) => {
      progress += d;
      const lines = progress.split('\n').filter((l) => /^round 1 \d+ conn x 4 node:/.test(l)).length;
      while (atLine.length < lines && server !== undefined) atLine.push(cpuSeconds(server));
    });
    const r = await bench;
    clearInterval(find);
    expect(r.exitCode, String(r.stderr)).toBe(0);
    expect(atLine, `${progress} / server ${server}`).toHaveLength(2);
    const second = (JSON.parse(readFileSync(out, 'utf8')) as { samples: Sample[] }).samples.find((s) => s.connections === 8)!;
    const reported = (second.serverUsPerReq! * second.requests) / 1e6;
    const measured = atLine[1] - atLine[0];
    // the server works a second or so of its two; the windows differ by the few ms between wrk's
    // end and the line, and /proc counts in ticks (10 ms here)
    expect(measured).toBeGreaterThan(0.05);
    expect(Math.abs(reported - measured)).toBeLessThan(0.05 + 0.25 * measured);
  }, 120_000);
});
