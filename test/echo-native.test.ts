// The native servers and generators in-process: what the CLI builds on, with the addon's
// live-object counters and this process's fd count checked after shutdown.
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { listenTcp } from '../src/echo/listen.js';
import { native } from '../src/native.js';
import { openFdCount, settledLiveObjects, zeroLiveObjects } from './support/leaks.js';
import { closed, connectTo, echoOnce } from './support/echo.js';

afterEach(async () => {
  expect(await settledLiveObjects()).toEqual(zeroLiveObjects);
});

describe.each(['uring', 'epoll'] as const)('native %s server', (engine) => {
  it('echoes, serves both generators with zero errors, and leaves nothing open after stop', async () => {
    const before = openFdCount();
    const server = native.echoStartServer(engine, { host: '127.0.0.1', port: 0 });
    let s: Awaited<ReturnType<typeof connectTo>> | undefined;
    try {
      expect(native.liveObjects().nativeServers).toBe(1);
      s = await connectTo(server.port);
      const msg = randomBytes(70_000);
      expect((await echoOnce(s, [msg], msg.length)).equals(msg)).toBe(true);

      for (const mode of ['epoll', 'uring', 'threads'] as const) {
        const r = await native.echoRunLoad({ host: '127.0.0.1', port: server.port, clients: 8, length: 100, durationMs: 300, mode }).done;
        expect(r.errors).toEqual({ connect: 0, reset: 0, shortEcho: 0, mismatch: 0, timeout: 0 });
        expect(r.connected).toBe(8);
        expect(r.responses).toBe(r.requests);
        expect(r.responses).toBeGreaterThan(0);
        expect(r.latencyNs.p50).toBeGreaterThan(0);
        expect(r.latencyNs.p99).toBeGreaterThanOrEqual(r.latencyNs.p50);
      }
      // 64 KiB messages: each echo comes back in several reads, each checked at its own offset
      for (const mode of ['epoll', 'uring', 'threads'] as const) {
        const r = await native.echoRunLoad({ host: '127.0.0.1', port: server.port, clients: 2, length: 65536, durationMs: 200, mode }).done;
        expect(r.errors, mode).toEqual({ connect: 0, reset: 0, shortEcho: 0, mismatch: 0, timeout: 0 });
        expect(r.responses, mode).toBeGreaterThan(0);
      }
      // stop() with a client still connected closes it too.
      server.stop();
      const stats = await server.done;
      await closed(s);
      expect(stats.connections).toBe(31);
      expect(stats.refused).toBe(0);
      expect(stats.bytesEchoed).toBeGreaterThanOrEqual(msg.length);
      server.stop(); // harmless once stopped
    } finally {
      // a failure above still stops the server and closes the client, so it cannot spread into
      // the next tests' leak checks
      server.stop();
      s?.destroy();
    }
    await server.done;
    expect(openFdCount()).toBe(before);
  });

  it('keeps lagging readers in order: 4 MiB written before reading a byte', async () => {
    // uring: 16 provided buffers only, so three laggers also run the buffer ring dry (ENOBUFS).
    const server = native.echoStartServer(engine, { host: '127.0.0.1', port: 0, buffers: 16 });
    try {
      const laggers = await Promise.all([0, 1, 2].map(() => connectTo(server.port)));
      await Promise.all(laggers.map(async (s) => {
        const data = randomBytes(4 << 20);
        s.pause();
        s.write(data);
        await new Promise((r) => setTimeout(r, 200)); // the server's sends back up meanwhile
        s.resume();
        const got = await echoOnce(s, [], data.length);
        expect(got.length).toBe(data.length);
        expect(got.equals(data)).toBe(true);
        s.destroy();
      }));
    } finally {
      server.stop();
    }
    const stats = await server.done;
    expect(stats.bytesEchoed).toBe(3 * (4 << 20));
    if (engine === 'uring') {
      expect(stats.recvPauses).toBeGreaterThan(0);
      expect(stats.bufferWaits).toBeGreaterThan(0);
    }
  }, 30_000);
});

describe('native echo arguments', () => {
  it('throws Node-style errors for bad arguments and taken ports', async () => {
    expect(() => native.echoStartServer('bogus' as 'uring', { host: '127.0.0.1', port: 0 })).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }));
    expect(() => native.echoStartServer('epoll', { host: 'not-an-ip', port: 0 })).toThrow(
      expect.objectContaining({ code: 'EINVAL', syscall: 'inet_pton' }));
    expect(() => native.echoRunLoad({ host: '127.0.0.1', port: 70000 })).toThrow(
      expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }));
    const a = listenTcp('127.0.0.1', 0, 16);
    try {
      expect(() => native.echoStartServer('uring', { host: '127.0.0.1', port: a.port })).toThrow(
        expect.objectContaining({ code: 'EADDRINUSE', syscall: 'bind' }));
    } finally {
      native.close(a.fd);
    }
  });
});
