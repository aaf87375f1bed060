// Every server, run as a user runs it (`iolab echo server`): byte-exact echo of 1 B..1 MiB
// over 200 concurrent connections, the generator against it for 1 s, clean shutdown, no fds
// left behind per connection.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { runCli } from './support/cli.js';
import { echoServerNames } from '../src/echo/servers.js';
import { closed, connectTo, echoOnce, fdCountOf, startEchoServerCli, waitFor } from './support/echo.js';

describe.each(echoServerNames)('echo server --server %s', (server) => {
  it('echoes 1 B..1 MiB byte-exact over 200 concurrent connections, serves the generator, stops cleanly', async () => {
    const { child, port } = await startEchoServerCli(server);
    try {
      // Baseline once the server is fully up (its thread creates its epoll/ring fd after
      // `listening`): one connection served and closed first.
      const warm = await connectTo(port);
      await echoOnce(warm, [Buffer.from('x')], 1);
      warm.end();
      await closed(warm);
      await new Promise((r) => setTimeout(r, 100));
      const baseline = fdCountOf(child.pid!);
      const sizes = Array.from({ length: 200 }, (_, i) => Math.round(2 ** ((20 * i) / 199)));
      await Promise.all(sizes.map(async (size) => {
        const s = await connectTo(port);
        const payload = randomBytes(size);
        const back = await echoOnce(s, [payload], size);
        expect(back.length).toBe(size);
        expect(back.equals(payload)).toBe(true);
        s.end();
        await closed(s);
      }));

      // Random splits of a message, written as separate writes, come back joined and in order.
      const s = await connectTo(port);
      await fc.assert(fc.asyncProperty(fc.array(fc.uint8Array({ minLength: 1, maxLength: 3000 }), { minLength: 1, maxLength: 8 }), async (parts) => {
        const chunks = parts.map((p) => Buffer.from(p));
        const all = Buffer.concat(chunks);
        const back = await echoOnce(s, chunks, all.length);
        expect(back.equals(all)).toBe(true);
      }), { numRuns: 20 });
      s.destroy();

      const bench = await runCli(['echo', 'bench', '-a', `127.0.0.1:${port}`, '-c', '20', '-t', '1', '-l', '512']);
      expect(bench.stderr).toBe('');
      expect(bench.exitCode).toBe(0);
      const lines = String(bench.stdout).split('\n');
      expect(lines.slice(0, 3)).toEqual([`Benchmarking: 127.0.0.1:${port}`, '20 clients, running 512 bytes, 1 sec.', '']);
      expect(lines[3]).toMatch(/^Speed: \d+ request\/sec, \d+ response\/sec$/);
      const requests = Number(/^Requests: (\d+)$/.exec(lines[4])![1]);
      const responses = Number(/^Responses: (\d+)$/.exec(lines[5])![1]);
      expect(requests).toBeGreaterThan(0);
      expect(responses).toBe(requests);
      expect(lines[6]).toMatch(/^Latency: p50 [\d.]+ ms, p99 [\d.]+ ms, p99\.9 [\d.]+ ms$/);
      expect(lines[7]).toBe('Errors: 0');

      // Every connection is closed again: the server holds what it held before them.
      await waitFor(() => fdCountOf(child.pid!) <= baseline, 10_000, 'server fds back to baseline');
    } finally {
      child.kill('SIGTERM');
    }
    const result = await child;
    expect(result.exitCode).toBe(0);
    expect(result.stderr).toBe('');
    expect(String(result.stdout)).toMatch(/stopped \(SIGTERM\): served (\d+) connections, echoed (\d+) bytes$/);
    const served = Number(/served (\d+) connections/.exec(String(result.stdout))![1]);
    expect(served).toBeGreaterThanOrEqual(222);
  }, 90_000);
});
