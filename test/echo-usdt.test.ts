// The echo servers' USDT probes (provider iolab): echo_accept(fd) for every connection the C
// servers accept, echo_close(fd) for every one they close. The probes'
// .note.stapsdt entries are in the addon for anyone to read; counting them with bpftrace
// needs root (a visible skip otherwise).
import { describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { addonPath } from '../src/native.js';
import { closed, connectTo, echoOnce, startEchoServerCli } from './support/echo.js';

const addon = addonPath();
/** Tools run without the sanitizer runtime that the ASan suite preloads into node's children. */
const plainEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'LD_PRELOAD'));
const bpftrace = (await execa('bpftrace', ['--version'], { reject: false, env: plainEnv, extendEnv: false }).catch(() => ({ exitCode: 1 }))).exitCode === 0;
const root = process.getuid?.() === 0;

describe('echo USDT probes', { timeout: 120_000 }, () => {
  it('are in the addon: iolab:echo_accept and iolab:echo_close, one argument (the fd) each', async () => {
    const notes = String((await execa('readelf', ['-n', addon], { env: plainEnv, extendEnv: false })).stdout);
    const probes = [...notes.matchAll(/Provider: (\S+)\s+Name: (\S+)\s+Location: \S+, Base: \S+, Semaphore: \S+\s+Arguments: (.*)/g)]
      .filter((m) => m[1] === 'iolab' && m[2].startsWith('echo_'))
      .map((m) => [m[2], m[3].trim().split(/\s+/).length]);
    expect(probes.sort()).toEqual([['echo_accept', 1], ['echo_close', 1]]);
  });

  it.runIf(bpftrace && root).each(['io_uring', 'epoll'])('fire once per connection accepted and closed by the %s server, with its fd', async (server) => {
    const { child, port } = await startEchoServerCli(server, ['--max-conns', '3']);
    try {
      // Only this server's process: other test files run echo servers too.
      const pid = child.pid!;
      const script = 'BEGIN { printf("attached\\n"); } ' +
        `usdt:${addon}:iolab:echo_accept /pid == ${pid}/ { @accepted = count(); @open[arg0] = 1; } ` +
        `usdt:${addon}:iolab:echo_close /pid == ${pid} && @open[arg0] == 1/ { @closed = count(); delete(@open[arg0]); } ` +
        'END { clear(@open); }';
      const tracer = execa('bpftrace', ['-e', script], { reject: false, all: true, buffer: true, env: plainEnv, extendEnv: false });
      let seen = '';
      await new Promise<void>((resolve, reject) => {
        tracer.all?.on('data', (chunk: Buffer) => {
          seen += chunk.toString();
          if (seen.includes('attached\n')) resolve();
        });
        tracer.then(() => reject(new Error(`bpftrace ended: ${seen}`)), reject);
      });
      // 5 connections at once, 3 served and 2 refused (accepted and closed at once): 5 and 5.
      const sockets = await Promise.all(Array.from({ length: 5 }, () => connectTo(port)));
      await new Promise((r) => setTimeout(r, 300));
      for (const s of sockets) {
        if (!s.destroyed && !s.readableEnded) await echoOnce(s, [Buffer.from('x')], 1).catch(() => {});
        s.end();
      }
      await Promise.all(sockets.map(closed));
      await new Promise((r) => setTimeout(r, 300));
      tracer.kill('SIGINT');
      const out = String((await tracer).all);
      expect(out).toMatch(/^@accepted: 5$/m);
      expect(out).toMatch(/^@closed: 5$/m);
    } finally {
      child.kill('SIGTERM');
      await child;
    }
  });
});
