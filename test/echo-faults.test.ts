// Bad input and faults: port in use, bad addresses, too many clients for the fd limit, the
// server vanishing mid-run, misbehaving clients, and a flood of connections over --max-conns.
import { createServer, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { runCli, startCli } from './support/cli.js';
import { echoServerNames } from '../src/echo/servers.js';
import { closed, connectTo, echoOnce, establishedTo, fdCountOf, startEchoServerCli, waitFor } from './support/echo.js';

describe('echo bench: bad input', () => {
  it('rejects a malformed address in one line', async () => {
    const r = await runCli(['echo', 'bench', '-a', 'localhost']);
    expect(r.exitCode).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe("iolab: invalid address 'localhost': expected HOST:PORT (e.g. 127.0.0.1:9999)");
  });

  it('rejects an unresolvable host in one line', async () => {
    const r = await runCli(['echo', 'bench', '-a', 'no-such-host.invalid:9999', '-t', '1']);
    expect(r.exitCode).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^iolab: cannot resolve 'no-such-host\.invalid' \(E[A-Z_]+\)$/);
  });

  it('refuses --number above the open-file limit before connecting, naming the limit', async () => {
    const r = await runCli(['echo', 'bench', '-a', '127.0.0.1:1', '-c', '1000000', '-t', '1']);
    expect(r.exitCode).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^iolab: --number 1000000 is above what the open-file limit allows \(RLIMIT_NOFILE \d+, minus 64 reserved\); use at most \d+ or raise it with ulimit -n$/);
  });

  it('says in one stderr line that no connection could be made when nothing listens, exit 1, no report', async () => {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as { port: number }).port;
    await new Promise((r) => probe.close(r));
    for (const client of ['epoll', 'io_uring', 'threads']) {
      const r = await runCli(['echo', 'bench', '-a', `127.0.0.1:${port}`, '-c', '3', '-t', '1', '--client', client]);
      expect(r.exitCode).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr).toBe(`iolab: no connection could be made to 127.0.0.1:${port} (ECONNREFUSED: connection refused)`);
    }
  });
});

describe.each(echoServerNames)('echo server --server %s: faults', (server) => {
  it('says in one line that the port is in use', async () => {
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const port = (taken.address() as { port: number }).port;
    try {
      const r = await runCli(['echo', 'server', '--server', server, '--port', String(port)]);
      expect(r.exitCode).toBe(1);
      expect(r.stdout).toBe('');
      expect(String(r.stderr).split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(new RegExp(`^iolab: cannot listen \\(server ${server}\\): .*EADDRINUSE.*${port}`));
    } finally {
      await new Promise((r) => taken.close(r));
    }
  });

  it('survives a 1 MiB burst, a half-close, a reset and an idle client; the generator sees the server vanish', async () => {
    const { child, port } = await startEchoServerCli(server);
    let idle: Socket | undefined;
    try {
      idle = await connectTo(port); // connects and sends nothing, for the whole test

      const big = await connectTo(port);
      const mib = randomBytes(1 << 20);
      expect((await echoOnce(big, [mib], mib.length)).equals(mib)).toBe(true);
      big.destroy();

      // Half-close: everything sent before our FIN comes back, then the server closes.
      const half = await connectTo(port);
      const part = randomBytes(200_000);
      const got: Buffer[] = [];
      half.on('data', (d: Buffer) => got.push(d));
      const ended = new Promise<void>((r) => half.once('end', () => r()));
      half.end(part);
      await ended;
      expect(Buffer.concat(got).equals(part)).toBe(true);
      await closed(half);

      // Reset mid-stream: the server drops that connection only.
      const reset = await connectTo(port);
      reset.write(randomBytes(300_000));
      await new Promise((r) => setTimeout(r, 20));
      reset.resetAndDestroy();

      const after = await connectTo(port);
      const msg = randomBytes(5000);
      expect((await echoOnce(after, [msg], msg.length)).equals(msg)).toBe(true);
      after.destroy();

      // The server vanishes during a run: errors, a non-zero exit, no hang.
      // Both generators meet this: the io_uring one for the io_uring-based servers.
      const client = server === 'io_uring' || server === 'ring' || server === 'duplex' ? 'io_uring' : 'epoll';
      const bench = runCli(['echo', 'bench', '-a', `127.0.0.1:${port}`, '-c', '10', '-t', '4', '--client', client]);
      // Its 10 clients and the idle one: the server must vanish mid-run, not before the connects.
      await waitFor(() => establishedTo(port) >= 11, 20_000, 'the generator connected');
      await new Promise((r) => setTimeout(r, 300));
      child.kill('SIGKILL');
      const started = Date.now();
      const r = await bench;
      expect(Date.now() - started).toBeLessThan(8000);
      expect(r.exitCode).toBe(1);
      const errors = Number(/^Errors: (\d+)/m.exec(String(r.stdout))![1]);
      expect(errors).toBeGreaterThan(0);
    } finally {
      idle?.destroy();
      child.kill('SIGKILL');
    }
  }, 60_000);

  it('accepts and cleanly closes connections over --max-conns (5,000 at once, 100 allowed)', async () => {
    const { child, port } = await startEchoServerCli(server, ['--max-conns', '100']);
    const sockets: Socket[] = [];
    try {
      let refused = 0;
      let failed = 0;
      await Promise.all(Array.from({ length: 5000 }, () => new Promise<void>((resolve) => {
        connectTo(port).then((s) => {
          sockets.push(s);
          s.once('end', () => {
            refused++;
            s.destroy();
          });
          s.on('error', () => failed++);
          resolve();
        }, () => {
          failed++;
          resolve();
        });
      })));
      await waitFor(() => refused + failed >= 4900, 30_000, 'refused connections to be closed');
      await new Promise((r) => setTimeout(r, 200));
      expect(failed).toBe(0); // closed cleanly (FIN), never reset
      expect(refused).toBe(4900);
      const kept = sockets.filter((s) => !s.destroyed);
      expect(kept).toHaveLength(100);
      const msg = Buffer.from('still served');
      expect((await echoOnce(kept[0], [msg], msg.length)).equals(msg)).toBe(true);
      for (const s of sockets) s.destroy();
      child.kill('SIGTERM');
      const r = await child;
      expect(r.exitCode).toBe(0);
      expect(String(r.stdout)).toMatch(/served 100 connections, refused 4900 over --max-conns, echoed 12 bytes$/);
    } finally {
      for (const s of sockets) s.destroy();
      child.kill('SIGKILL');
    }
  }, 90_000);
});

describe('echo server --json', () => {
  it('prints a listening object and, on SIGINT, what it served', async () => {
    const { child, firstLine } = await startCli(['echo', 'server', '--server', 'epoll', '--port', '0', '--json'], /listening/);
    try {
      const ready = JSON.parse(firstLine);
      expect(ready).toMatchObject({ event: 'listening', server: 'epoll', host: '127.0.0.1' });
      const s = await connectTo(ready.port);
      await echoOnce(s, [Buffer.from('abc')], 3);
      s.end();
      await closed(s);
      await waitFor(() => fdCountOf(child.pid!) > 0);
      child.kill('SIGINT');
      const r = await child;
      expect({ exitCode: r.exitCode, signal: r.signal, stderr: r.stderr, stdout: r.stdout }).toEqual({ exitCode: 0, signal: undefined, stderr: '', stdout: expect.stringContaining('stopped') });
      const last = JSON.parse(String(r.stdout).trim().split('\n').pop()!);
      expect(last).toMatchObject({ event: 'stopped', signal: 'SIGINT', connections: 1, refused: 0, bytesEchoed: 3 });
    } finally {
      child.kill('SIGKILL'); // after a failure above; a no-op once it exited
    }
  });
});
