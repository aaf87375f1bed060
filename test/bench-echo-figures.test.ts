// bench echo's figures from one generator result: CPU per request only where requests were
// answered (a run that answered none has no cost per request, and 0 would read as the best).
import { describe, expect, it } from 'vitest';
import { sampleOf, type EchoBenchOptions } from '../src/bench/echo-run.js';
import { buildEchoResults, formatEchoResults } from '../src/bench/echo.js';
import type { EchoLoadResult } from '../src/native-types.js';

const result = (responses: number): EchoLoadResult => ({
  requests: responses, responses, bytes: responses * 512, connected: 10,
  errors: { connect: 0, reset: 0, shortEcho: 0, mismatch: 0, timeout: 0 }, connectErrno: 0, stoppedEarly: false,
  elapsedNs: 1e9, cpuNs: 2e8, serverCpuNs: 4e8, latencyNs: { p50: 1e5, p99: 2e5, p999: 3e5, max: 4e5 },
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
