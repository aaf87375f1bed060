// bench echo's figures from one generator result: CPU per request and latency only where requests were
// answered (a run that answered none has no cost per request, and 0 would read as the best).
import { describe, expect, it } from 'vitest';
import { sampleOf, type EchoBenchOptions } from '../src/bench/echo-run.js';
import { buildEchoResults, formatEchoResults } from '../src/bench/echo.js';
import type { EchoLoadResult } from '../src/native-types.js';

const result = (responses: number, p50Ns = 1e5): EchoLoadResult => ({
  requests: responses, responses, bytes: responses * 512, connected: 10,
  errors: { connect: 0, reset: 0, shortEcho: 0, mismatch: 0, timeout: 0 }, connectErrno: 0, stoppedEarly: false,
  elapsedNs: 1e9, cpuNs: 2e8, serverCpuNs: 4e8, latencyNs: { p50: p50Ns, p99: 2e5, p999: 3e5, max: 4e5 },
});

const options: EchoBenchOptions = { clients: [10], durationSec: 1, rounds: 2, length: 512, servers: ['io_uring'], generators: ['epoll'], netns: false };

describe('bench echo: CPU per request', () => {
  it('is CPU over the window / the responses counted in it', () => {
    const s = sampleOf(10, 0, 'io_uring', 'epoll', result(100_000));
    expect(s.serverUsPerReq).toBeCloseTo(4, 9);
    expect(s.generatorUsPerReq).toBeCloseTo(2, 9);
  });

  it('is absent, not 0, for a run that answered nothing; the cell has no median of it then', () => {
    const none = sampleOf(10, 1, 'io_uring', 'epoll', result(0));
    expect(none).not.toHaveProperty('serverUsPerReq');
    expect(none).not.toHaveProperty('generatorUsPerReq');
    const results = buildEchoResults(options, { samples: [sampleOf(10, 0, 'io_uring', 'epoll', result(100_000)), none] });
    expect(results.byGenerator.epoll['10'].io_uring).toEqual({ reqPerSec: 50_000 });
  });

  it('is absent from a run that answered nothing, as its latency is', () => {
    const none = sampleOf(10, 1, 'io_uring', 'epoll', result(0));
    expect(none).not.toHaveProperty('p50Ms');
    expect(sampleOf(10, 0, 'io_uring', 'epoll', result(10))).toMatchObject({ p50Ms: 0.1, p99Ms: 0.2 });
  });
});

describe('bench echo: the latency goal at 1 client', () => {
  const at1 = (p50: Record<string, number>) => buildEchoResults({ ...options, clients: [1], rounds: 1, servers: Object.keys(p50) as EchoBenchOptions['servers'] },
    { samples: Object.entries(p50).map(([server, us]) => sampleOf(1, 1, server, 'epoll', result(1000, us * 1e3))) });

  it('met: ring within 1.2x io_uring and at or below node, with the ratios printed', () => {
    const r = at1({ ring: 30, io_uring: 26, node: 30 });
    expect(r.latencyGoals).toEqual([{ generator: 'epoll', clients: 1, p50Ms: { ring: 0.03, io_uring: 0.026, node: 0.03 },
      ratios: { 'ring/io_uring': expect.closeTo(30 / 26, 9), 'ring/node': 1 }, parts: [{ pair: 'ring/io_uring', atMost: 1.2, met: true }, { pair: 'ring/node', atMost: 1, met: true }], met: true }]);
    expect(formatEchoResults(r)).toContain("latency goal at 1 client, epoll generator: ring p50 0.030 ms = 1.15x io_uring's 0.026 ms (goal <= 1.2x: met), 1.00x node's 0.030 ms (goal <= 1.0x: met)");
  });

  it('missed: says so for the part that was missed', () => {
    const r = at1({ ring: 40, io_uring: 26, node: 50 });
    expect(r.latencyGoals[0].met).toBe(false);
    expect(formatEchoResults(r)).toContain("1.54x io_uring's 0.026 ms (goal <= 1.2x: NOT met), 0.80x node's 0.050 ms (goal <= 1.0x: met)");
  });

  it('a peer that did not run: not shown met; no ring server, no goal', () => {
    const r = at1({ ring: 20, node: 50 });
    expect(r.latencyGoals[0]).toMatchObject({ met: false, parts: [{ pair: 'ring/node', met: true }] });
    expect(formatEchoResults(r)).toContain('io_uring not run, 0.40x node');
    expect(at1({ io_uring: 20, node: 50 }).latencyGoals).toEqual([]);
  });
});

describe('bench echo: the table\'s notes', () => {
  it('one server: no ratios header, for there is nothing to compare', () => {
    const text = formatEchoResults(buildEchoResults(options, { samples: [sampleOf(10, 0, 'io_uring', 'epoll', result(100_000))] }));
    expect(text).not.toContain('ratios');
  });

  it('two servers: the ratios', () => {
    const both = { ...options, servers: ['io_uring', 'epoll'] } as EchoBenchOptions;
    const text = formatEchoResults(buildEchoResults(both, { samples: [sampleOf(10, 0, 'io_uring', 'epoll', result(100_000)),
      sampleOf(10, 0, 'epoll', 'epoll', result(50_000))] }));
    expect(text).toContain('server us/req ratios');
    expect(text).toContain('epoll generator, 10 clients: io_uring/epoll 0.50x');
  });

  it('interrupted between runs: no "* marks" line when no run was cut short', () => {
    const text = formatEchoResults(buildEchoResults(options, { samples: [sampleOf(10, 0, 'io_uring', 'epoll', result(100_000))], interruptedBy: 'SIGINT' }));
    expect(text).toContain('interrupted (SIGINT): partial; runs after it did not start');
    expect(text).not.toContain('* marks');
    const cut = { ...sampleOf(10, 1, 'io_uring', 'epoll', result(1000)), partial: true };
    const withCut = formatEchoResults(buildEchoResults(options, { samples: [sampleOf(10, 0, 'io_uring', 'epoll', result(100_000)), cut], interruptedBy: 'SIGINT' }));
    expect(withCut).toContain('interrupted (SIGINT): partial — * marks a run cut short (its figures over the time it ran); runs after it did not start');
  });
});
