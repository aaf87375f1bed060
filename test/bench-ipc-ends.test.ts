// How bench ipc's cells end and what they time: a receiver that falls behind as a cell ends
// still gets its end, and a round trip times the transport, not the sender's check of the reply.
import { describe, expect, it } from 'vitest';
import { runCliText } from './support/cli.js';
import { checkLeaksAfterAll } from './support/leaks.js';

checkLeaksAfterAll({ cleanup: () => {} });

describe('bench ipc: the end of a cell', { timeout: 60_000 }, () => {
  it('dgram-copy: a receiver that falls behind as a cell ends (its queue full) still gets the end marker, exit 0', async () => {
    // 64 KiB messages: a few fill the socket's buffer. The receiver waits 200 ms before each
    // read, so the sender fills the queue, gets one slot back when the first read frees it,
    // fills it, and (--duration long past) sends the end marker into a full queue that the
    // receiver does not touch for far longer than one send waits.
    const r = await runCliText(['bench', 'ipc', '--transports', 'dgram-copy', '--sizes', '64k', '--mode', 'throughput',
      '--duration', '1ms', '--rounds', '1', '--json'], { env: { IOLAB_IPC_RECEIVER_PAUSE: '200' } });
    expect(r.stderr).not.toMatch(/iolab:/);
    expect(r.exitCode).toBe(0);
    const rows = (JSON.parse(r.stdout) as { rows: { transport: string; messages: number }[] }).rows;
    expect(rows.find((x) => x.transport === 'dgram-copy')!.messages).toBeGreaterThanOrEqual(3);
  });
});

describe('bench ipc: what a round trip times', { timeout: 60_000 }, () => {
  it('pingpong round trips leave out the sender\'s check of the reply, reported apart as checkNs', async () => {
    // IOLAB_IPC_SENDER_CHECK_PAUSE makes the sender's check of each reply take 100 ms more: a
    // round trip of 4 KiB that still took that long would have the check in it (three of them:
    // --duration 1ms runs a cell's least).
    const r = await runCliText(['bench', 'ipc', '--transports', 'stream-copy,shm-queue', '--sizes', '4k', '--mode', 'pingpong',
      '--duration', '1ms', '--rounds', '1', '--json'], { env: { IOLAB_IPC_SENDER_CHECK_PAUSE: '100' } });
    expect(r.stderr).not.toMatch(/iolab:/);
    expect(r.exitCode).toBe(0);
    const rows = (JSON.parse(r.stdout) as { rows: { transport: string; messages: number; messagesPerSec: number; p50Ns: number; checkNs: number }[] }).rows;
    expect(rows).toHaveLength(2);
    for (const row of rows) {
      expect(row.messages).toBeGreaterThanOrEqual(3);
      expect(row.messagesPerSec, row.transport).toBeGreaterThan(20); // with the checks in, 10 at most
      expect(row.p50Ns, row.transport).toBeLessThan(100e6);
      expect(row.checkNs, row.transport).toBeGreaterThanOrEqual(100e6);
    }
  });
});
