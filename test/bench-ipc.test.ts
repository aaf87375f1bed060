// bench ipc moves correct bytes over every transport in both modes, reports them in the table
// and the JSON, and leaves nothing behind (fds, native jobs, the receiving process).
import { describe, expect, it } from 'vitest';
import { native } from '../src/native.js';
import { transportNames } from '../src/ipc/transports.js';
import { planRun } from '../src/ipc/plan.js';
import { runPlan } from '../src/ipc/run.js';
import { runCliText } from './support/cli.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { childrenOf, newProcessTag, processesTagged, processTagVariable } from './support/procs.js';

// Sizes that are no multiple of 8 or of a page on purpose: the stamps and the tail word must fit.
const sizes = [8, 100, 4097, 64 << 10, 1 << 20];

interface Row { transport: string; mode: string; messageBytes: number; messages: number; bytesPerSec: number; messagesPerSec: number;
  p50Ns: number | null; p99Ns: number | null; p999Ns: number | null; checkNs: number | null; memcpyRatio: number | null }
interface Report { memcpyBytesPerSec: Record<string, number>; rows: Row[]; check: string; machine: { kernel: string }; command: string[];
  skipped: { transport: string; mode: string; messageBytes: number; status: string; reason: string }[] }

checkLeaksAfterAll({ cleanup: () => {} });

describe('bench ipc', { timeout: 120_000 }, () => {
  it('moves correct bytes over every transport in both modes, JSON with every field', async () => {
    const tag = newProcessTag();
    const r = await runCliText(['bench', 'ipc', '--sizes', sizes.join(','), '--duration', '20ms', '--rounds', '1', '--json'],
      { env: { [processTagVariable]: tag } });
    expect(r.stderr).toMatch(/^round 1\/1 done in [\d.]+ s$/); // progress; nothing else
    expect(r.exitCode).toBe(0);
    const report = JSON.parse(r.stdout) as Report;
    expect(Object.keys(report.memcpyBytesPerSec).map(Number).sort((a, b) => a - b)).toEqual(sizes);
    expect(report.check).toBe('sampled');
    expect(report.machine.kernel).toBeTruthy();
    expect(report.command.slice(0, 3)).toEqual(['iolab', 'bench', 'ipc']);
    for (const transport of transportNames) {
      for (const mode of ['throughput', 'pingpong']) {
        for (const size of sizes) {
          const row = report.rows.find((x) => x.transport === transport && x.mode === mode && x.messageBytes === size);
          const skip = report.skipped.find((x) => x.transport === transport && x.mode === mode && x.messageBytes === size);
          if (skip) {
            // only the datagram sockets have a per-message limit, and it is below 1 MiB here
            expect(['dgram-copy', 'seqpacket-copy']).toContain(transport);
            expect(skip).toMatchObject({ status: 'skipped', reason: expect.stringMatching(/can be at most [\d,]+ bytes here/) });
            continue;
          }
          expect(row, `${transport} ${mode} ${size}`).toBeDefined();
          expect(row!.messages).toBeGreaterThanOrEqual(3);
          expect(row!.bytesPerSec).toBeCloseTo(row!.messagesPerSec * size, -3);
          if (mode === 'pingpong') {
            expect(row!.p50Ns).toBeGreaterThan(0);
            expect(row!.p99Ns).toBeGreaterThanOrEqual(row!.p50Ns!);
            expect(row!.p999Ns).toBeGreaterThanOrEqual(row!.p99Ns!);
            expect(row!.checkNs).toBeGreaterThan(0);
            expect(row!.memcpyRatio).toBeNull();
          } else {
            expect(row!.p50Ns).toBeNull();
            expect(row!.checkNs).toBeNull();
            expect(row!.memcpyRatio).toBeCloseTo(row!.bytesPerSec / report.memcpyBytesPerSec[size], 6);
          }
        }
      }
    }
    expect(processesTagged(tag)).toEqual([]);
  });

  it('--check full compares every byte of every message', async () => {
    const r = await runCliText(['bench', 'ipc', '--sizes', '100,70000', '--duration', '20ms', '--rounds', '1', '--check', 'full', '--json']);
    expect(r.stderr).toMatch(/^round 1\/1 done in [\d.]+ s$/);
    expect(r.exitCode).toBe(0);
    const report = JSON.parse(r.stdout) as Report;
    expect(report.check).toBe('full');
    expect(report.rows.length).toBe(transportNames.length * 2 * 2);
  });

  it('prints the table: memcpy first at each size, every transport\'s ratio to it, skipped cells with the reason', async () => {
    const r = await runCliText(['bench', 'ipc', '--sizes', '4k,1m', '--duration', '20ms', '--rounds', '2', '--transports', 'stream-copy,dgram-copy,shm-queue']);
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toMatch(/^round 1\/2 done in [\d.]+ s\nround 2\/2 done in [\d.]+ s$/);
    const lines = r.stdout.split('\n');
    expect(lines[0]).toMatch(/median of 2 alternated round\(s\), 20 ms per cell, every message checked \(sampled\)$/);
    const at = (t: string, size: string) => lines.filter((l) => l.startsWith(`${t} `) && l.includes(` ${size} `));
    expect(at('memcpy', '4 KiB')[0]).toMatch(/1\.00x$/);
    for (const t of ['stream-copy', 'dgram-copy', 'shm-queue']) expect(at(t, '4 KiB')[0]).toMatch(/ \d+\.\d\dx$/);
    expect(lines).toContain('dgram-copy   1 MiB: skipped, a dgram-copy message can be at most ' +
      `${native.ipcLargestMessage('dgram-copy').toLocaleString('en-US')} bytes here (the socket's send buffer)`);
    expect(r.stdout).toMatch(/^shm-queue\/stream-copy throughput: 4 KiB [\d.]+x, 1 MiB [\d.]+x$/m);
    expect(r.stdout).toMatch(/pingpong \(a message there and back\)\ntransport +size +round trips\/s +p50 +p99 +p99\.9\n/);
  });

  it('runs in this process with no fd, native job or process left behind', async () => {
    const plan = planRun({ transports: [...transportNames], sizes: [64, 8192], modes: ['throughput', 'pingpong'],
      durationMs: 10, rounds: 2, checkFull: false });
    let ticks = 0;
    const timer = setInterval(() => ticks++, 5); // the loops run off the JS thread
    const run = await runPlan(plan);
    clearInterval(timer);
    expect(run.interruptedBy).toBeUndefined();
    expect(run.samples.length).toBe(plan.cellsPerRound * 2);
    expect(ticks).toBeGreaterThan(0);
    expect(childrenOf(process.pid)).toEqual([]); // the receiving process has exited
  });
});
