// One rule for every benchmark's goals (src/bench/goals.ts): a run cut short judges none. Its
// figures are those of the rounds that finished, fewer and perhaps of some contenders only, so
// bench http's and bench echo's goals say `not judged` (null in the JSON), as bench api's do.
import { describe, expect, it } from 'vitest';
import type { HttpBenchOptions } from '../src/bench/http.js';
import { buildHttpResults, formatHttpResults, type HttpSample } from '../src/bench/http-results.js';
import { sampleOf, type EchoBenchOptions } from '../src/bench/echo-run.js';
import { buildEchoResults, formatEchoResults } from '../src/bench/echo.js';
import type { EchoLoadResult } from '../src/native-types.js';

const httpOptions: HttpBenchOptions = { connections: [1, 100], inFlight: [1], durationSec: 1, rounds: 3, servers: ['node', 'ring'], threads: 2 };
const httpSample = (server: 'node' | 'ring', connections: number, reqPerSec: number, partial = false): HttpSample => ({
  round: 1, server, connections, inFlight: 1, reqPerSec, requests: reqPerSec, p50Us: 50, p99Us: 90, serverUsPerReq: server === 'ring' ? 5 : 10, errors: 0,
  ...(partial ? { partial: true } : {}),
});
// the ring at 1 connection below its goal (0.5x node), at 100 above it: a whole run says so
const httpSamples = (partial: boolean) => [httpSample('node', 1, 20_000), httpSample('ring', 1, 10_000), httpSample('node', 100, 50_000),
  httpSample('ring', 100, 100_000, partial)];

describe('bench http\'s goals', () => {
  it('a whole run judges them', () => {
    const r = buildHttpResults(httpOptions, { samples: httpSamples(false) });
    expect(r.goals.map((g) => g.met)).toEqual([false, true]);
    const text = formatHttpResults(r);
    expect(text).toMatch(/^1 x 1: ring\/node req\/s 0\.50x .*: not met$/m);
    expect(text).toMatch(/^100 x 1: ring\/node req\/s 2\.00x .*: met$/m);
  });

  it('a run interrupted judges none: the figures of its rounds, no verdict', () => {
    const r = buildHttpResults(httpOptions, { samples: httpSamples(true), interruptedBy: 'SIGINT' });
    expect(r.goals.map((g) => g.met)).toEqual([null, null]);
    const text = formatHttpResults(r);
    expect(text).toMatch(/^1 x 1: ring\/node req\/s 0\.50x .*: not judged, the run was cut short$/m);
    expect(text).toMatch(/^100 x 1: ring\/node req\/s 2\.00x .*: not judged, the run was cut short$/m);
    expect(text).not.toMatch(/: (not )?met$/m);
  });
});

const echoResult = (p50Us: number, stoppedEarly = false): EchoLoadResult => ({
  requests: 1000, responses: 1000, bytes: 512_000, connected: 1, errors: { connect: 0, reset: 0, shortEcho: 0, mismatch: 0, timeout: 0 }, connectErrno: 0,
  stoppedEarly, elapsedNs: 1e9, cpuNs: 2e8, serverCpuNs: 4e8, latencyNs: { p50: p50Us * 1e3, p99: 2e5, p999: 3e5, max: 4e5 },
});
const echoOptions: EchoBenchOptions = { clients: [1], durationSec: 1, rounds: 1, length: 512, servers: ['ring', 'io_uring', 'node'], generators: ['epoll'], netns: false };

describe('bench echo\'s latency goal', () => {
  const samples = (cut: boolean) => [sampleOf(1, 1, 'io_uring', 'epoll', echoResult(26)), sampleOf(1, 1, 'node', 'epoll', echoResult(50)),
    sampleOf(1, 1, 'ring', 'epoll', echoResult(40, cut))];

  it('a whole run judges it', () => {
    const r = buildEchoResults(echoOptions, { samples: samples(false) });
    expect(r.latencyGoals[0]).toMatchObject({ met: false, parts: [{ pair: 'ring/io_uring', met: false }, { pair: 'ring/node', met: true }] });
    expect(formatEchoResults(r)).toContain("(goal <= 1.2x: NOT met), 0.80x node's 0.050 ms (goal <= 1.0x: met)");
  });

  it('a run interrupted judges none', () => {
    const r = buildEchoResults(echoOptions, { samples: samples(true), interruptedBy: 'SIGTERM' });
    expect(r.latencyGoals[0]).toMatchObject({ met: null, parts: [{ pair: 'ring/io_uring', met: null }, { pair: 'ring/node', met: null }] });
    const text = formatEchoResults(r);
    expect(text).toContain("1.54x io_uring's 0.026 ms (goal <= 1.2x: not judged, the run was cut short), " +
      "0.80x node's 0.050 ms (goal <= 1.0x: not judged, the run was cut short)");
    expect(text).not.toMatch(/NOT met|: met\)/);
  });
});
