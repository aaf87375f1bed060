// The echo servers' USDT probes (provider iolab): echo_accept(fd) for every connection the C
// servers accept, echo_close(fd) for every one they close. The probes'
// .note.stapsdt entries are in the addon for anyone to read; counting them with bpftrace
// needs root (a visible skip otherwise).
import { describe, expect, it } from 'vitest';
import { addonPath } from '../src/native.js';
import { closed, connectTo, echoOnce, startEchoServerCli } from './support/echo.js';
import { startBpftrace, traceUnavailable, usdtProbes, within } from './support/trace.js';

const addon = addonPath();

describe('echo USDT probes', { timeout: 120_000 }, () => {
  it('are in the addon: iolab:echo_accept and iolab:echo_close, one argument (the fd) each', async () => {
    expect(await usdtProbes('iolab', 'echo_')).toEqual([['echo_accept', 1], ['echo_close', 1]]);
  });

  it.runIf(!traceUnavailable()).each(['io_uring', 'epoll'])('fire once per connection accepted and closed by the %s server, with its fd', async (server) => {
    const { child, port } = await within(20_000, 'the echo server starting', startEchoServerCli(server, ['--max-conns', '3']));
    try {
      // Only this server's process: other test files run echo servers too.
      const pid = child.pid!;
      const tracer = await startBpftrace(
        `usdt:${addon}:iolab:echo_accept /pid == ${pid}/ { @accepted = count(); @open[arg0] = 1; } ` +
        `usdt:${addon}:iolab:echo_close /pid == ${pid} && @open[arg0] == 1/ { @closed = count(); delete(@open[arg0]); } ` +
        'END { clear(@open); }');
      let out = '';
      try {
        // 5 connections at once, 3 served and 2 refused (accepted and closed at once): 5 and 5.
        const sockets = await within(10_000, 'connecting 5 clients', Promise.all(Array.from({ length: 5 }, () => connectTo(port))));
        await new Promise((r) => setTimeout(r, 300));
        for (const s of sockets) {
          if (!s.destroyed && !s.readableEnded) await within(10_000, 'one echo', echoOnce(s, [Buffer.from('x')], 1).catch(() => {}));
          s.end();
        }
        await within(10_000, 'the server closing every connection', Promise.all(sockets.map(closed)));
        await new Promise((r) => setTimeout(r, 300));
      } finally {
        out = await tracer.finish();
      }
      expect(out).toMatch(/^@accepted: 5$/m);
      expect(out).toMatch(/^@closed: 5$/m);
    } finally {
      child.kill('SIGTERM');
      await within(10_000, 'the echo server exiting on SIGTERM', child);
    }
  });
});
