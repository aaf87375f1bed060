// bench api's table after a run cut short: a contender the run never reached is "not reached",
// not "unavailable", and a goal gets no verdict from the rounds that finished.
import { describe, expect, it } from 'vitest';
import { formatApiResults, type ApiResults } from '../src/bench/api.js';

const options = { rounds: 3, durationMs: 100, fileSize: 1 << 20, groups: ['read'] };

function results(partial?: string): ApiResults {
  return {
    rows: [
      { contender: 'iolab.readvSync', inflight: 1, opsPerSec: 900_000, jsCpuNsPerOp: 1000 },
      { contender: 'fs.readvSync', inflight: 1, opsPerSec: partial ? null : 1_000_000, ...(partial ? {} : { jsCpuNsPerOp: 1000 }) },
    ],
    ratios: partial ? [] : [{ name: 'iolab.readvSync@1 / fs.readvSync@1', of: 'iolab.readvSync@1', over: 'fs.readvSync@1', ratio: 0.9, goal: 1 }],
    rounds: { 'iolab.readvSync@1': [900_000], ...(partial ? {} : { 'fs.readvSync@1': [1_000_000] }) },
    rtt: {},
    rttRatios: [],
    ...(partial ? { partial } : {}),
  };
}

describe('bench api after Ctrl-C', () => {
  it('a contender it never reached is "not reached", not "unavailable"', () => {
    const text = formatApiResults(results('interrupted by SIGINT'), options).join('\n');
    expect(text).toMatch(/^fs\.readvSync +1 +not reached/m);
    expect(text).not.toContain('unavailable');
  });

  it('a goal gets no verdict from a run cut short', () => {
    const cut = results('interrupted by SIGINT');
    cut.ratios = [{ name: 'a / b', of: 'a', over: 'b', ratio: 0.5, goal: 1 }];
    const text = formatApiResults(cut, options).join('\n');
    expect(text).toContain('a / b = 0.50x  (goal >= 1.0x: not judged, the run was cut short)');
    expect(text).not.toContain('not met');
  });

  it('a whole run still judges its goals', () => {
    expect(formatApiResults(results(), options).join('\n')).toContain('iolab.readvSync@1 / fs.readvSync@1 = 0.90x  (goal >= 1.0x: not met)');
  });
});
