// `iolab echo bench` measures the time it ran: a full run divides by the measured window (not
// -t), and a run stopped by SIGINT/SIGTERM says it was interrupted, in text and JSON, exit 130.
import { createServer, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './support/cli.js';
import { establishedTo, startEchoServerCli, waitFor } from './support/echo.js';

let server: Awaited<ReturnType<typeof startEchoServerCli>>;
beforeAll(async () => {
  server = await startEchoServerCli('epoll');
});
afterAll(async () => {
  server.child.kill('SIGTERM');
  await server.child;
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until the generator's 10 clients are connected (its window has begun), then ms more. */
async function runningFor(ms: number): Promise<void> {
  await waitFor(() => establishedTo(server.port) >= 10, 20_000, 'the generator connected');
  await sleep(ms);
}

describe('echo bench: elapsed time and interruption', () => {
  it('a full run reports the measured window, not -t, and Speed is per measured second', async () => {
    const r = await runCli(['echo', 'bench', '-a', `127.0.0.1:${server.port}`, '-c', '10', '-t', '2', '--json']);
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    const out = JSON.parse(String(r.stdout));
    expect(out.interrupted).toBe(false);
    expect(out.elapsedNs).toBeGreaterThanOrEqual(2e9);
    expect(out.elapsedNs).toBeLessThan(2.5e9);
    expect(out.elapsedNs).not.toBe(2e9); // measured, not the duration copied
    const text = await runCli(['echo', 'bench', '-a', `127.0.0.1:${server.port}`, '-c', '10', '-t', '1']);
    expect(text.exitCode).toBe(0);
    expect(String(text.stdout)).not.toContain('Interrupted');
  });

  it.each(['SIGINT', 'SIGTERM'] as const)('%s 1 s into -t 10: text says interrupted, Speed is over the time it ran, exit 130', async (signal) => {
    const child = runCli(['echo', 'bench', '-a', `127.0.0.1:${server.port}`, '-c', '10', '-t', '10']);
    await runningFor(1000);
    const t0 = performance.now();
    child.kill(signal);
    const r = await child;
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(r.exitCode).toBe(130);
    expect(r.stderr).toBe('');
    const out = String(r.stdout);
    const m = new RegExp(`^Interrupted \\(${signal}\\) after ([\\d.]+) of 10 sec: partial, the speed is over the time it ran$`, 'm').exec(out);
    expect(m, out).not.toBeNull();
    const elapsed = Number(m![1]);
    expect(elapsed).toBeGreaterThan(0.5);
    expect(elapsed).toBeLessThan(3);
    const speed = Number(/^Speed: (\d+) request\/sec/m.exec(out)![1]);
    const requests = Number(/^Requests: (\d+)$/m.exec(out)![1]);
    expect(requests).toBeGreaterThan(0);
    // Speed = requests / the elapsed time printed (to its two decimals), not requests / 10.
    expect(Math.abs(speed * elapsed - requests) / requests).toBeLessThan(0.02);
  });

  it('--json of an interrupted run: interrupted, the signal and the measured elapsedNs', async () => {
    const child = runCli(['echo', 'bench', '-a', `127.0.0.1:${server.port}`, '-c', '10', '-t', '10', '--json']);
    await runningFor(1000);
    child.kill('SIGINT');
    const r = await child;
    expect(r.exitCode).toBe(130);
    const out = JSON.parse(String(r.stdout));
    expect(out).toMatchObject({ interrupted: true, signal: 'SIGINT', stoppedEarly: true, duration: 10 });
    expect(out.elapsedNs).toBeGreaterThan(0.5e9);
    expect(out.elapsedNs).toBeLessThan(3e9);
    expect(out.requests).toBeGreaterThan(0);
  });
});

describe('echo bench: the window ends for every thread before any connection closes', () => {
  // The server's CPU is read as the last generator thread's window ends; a thread that closed
  // its connections as soon as its own window ended would have the server's teardown of them
  // counted in that window. Here one connection's echo is held 1.5 s (within the 2 s grace), so
  // its thread's window ends 0.5 s after the other's: the other's connection must close after.
  it.each(['epoll', 'io_uring', 'threads'])('--client %s: the fast connection closes after the slow echo went out', async (mode) => {
    const events: string[] = [];
    let accepted = 0;
    const srv = createServer((s) => {
      s.setNoDelay(true);
      const slow = accepted++ === 1;
      s.on('data', (d) => {
        if (!slow) return void s.write(d);
        setTimeout(() => { events.push('slow echo'); s.write(d); }, 1500);
      });
      s.on('end', () => { events.push(slow ? 'slow closed' : 'fast closed'); s.end(); });
      s.on('error', () => {});
    });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    try {
      const port = (srv.address() as AddressInfo).port;
      const r = await runCli(['echo', 'bench', '-a', `127.0.0.1:${port}`, '-c', '2', '-t', '1', '--threads', '2', '--client', mode, '--json']);
      expect(r.exitCode, String(r.stderr)).toBe(0);
      await waitFor(() => events.length === 3, 5000, 'both connections closed');
      expect(events.indexOf('slow echo')).toBeLessThan(events.indexOf('fast closed'));
    } finally {
      await new Promise((r) => srv.close(r));
    }
  });
});
