// The echo commands' numbers as a user types them: a value every server can honour runs as
// asked, anything else is one line naming the option the user typed, before the server
// listens; the help states the limits.
import { describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { runCliText } from './support/cli.js';
import { connectTo, echoOnce, startEchoServerCli } from './support/echo.js';

const servers = ['io_uring', 'epoll', 'node', 'ring', 'duplex'];

describe('echo server --idle-timeout', () => {
  it('beyond what every server can honour (Node\'s timers fire after 1 ms past 24.8 days) is refused, for all five', async () => {
    for (const server of servers) {
      const r = await runCliText(['echo', 'server', '--server', server, '--port', '0', '--idle-timeout', '3000000s'], { timeout: 20_000 });
      expect(r).toEqual({ exitCode: 1, stdout: '', stderr: "iolab: option '--idle-timeout <time>' argument '3000000s' is invalid. " +
        "expected a duration of at most 1000000s (11.5 days: the longest every server takes), got '3000000s'" });
    }
  });

  it('less than a millisecond is refused by name, for all five', async () => {
    for (const server of servers) {
      const r = await runCliText(['echo', 'server', '--server', server, '--port', '0', '--idle-timeout', '500us'], { timeout: 20_000 });
      expect(r).toEqual({ exitCode: 1, stdout: '', stderr: "iolab: option '--idle-timeout <time>' argument '500us' is invalid. " +
        "expected a whole number of milliseconds (1ms or more), got '500us'" });
    }
  });

  it('the longest one runs, and a connection idle for a while stays open, on every server', async () => {
    for (const server of servers) {
      const { child, port } = await startEchoServerCli(server, ['--idle-timeout', '1000000s']);
      try {
        const s = await connectTo(port);
        await sleep(100);
        expect((await echoOnce(s, [Buffer.from('still here')], 10)).toString()).toBe('still here');
        s.destroy();
      } finally {
        child.kill('SIGINT');
        const r = await child;
        expect(String(r.stdout)).toContain('served 1 connections, echoed 10 bytes');
      }
    }
  });

  it('the help states the limits', async () => {
    const help = (await runCliText(['echo', 'server', '--help'])).stdout.replace(/\s+/g, ' ');
    expect(help).toContain('whole milliseconds from 1ms up to 1000000s (11.5 days)');
  });
});

describe('echo bench', () => {
  it('--threads beyond 64 names the option typed, and the help says 64', async () => {
    const r = await runCliText(['echo', 'bench', '--threads', '1000', '-t', '1']);
    expect(r).toEqual({ exitCode: 1, stdout: '', stderr: "iolab: option '--threads <n>' argument '1000' is invalid. expected a whole number from 1 to 64, got '1000'" });
    expect((await runCliText(['echo', 'bench', '--help'])).stdout).toContain('generator threads, 1 to 64');
  });
});
