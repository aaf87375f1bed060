// The uring server's probed kernel features (direct descriptors, a registered ring fd,
// NO_SQARRAY; bundles and incremental buffers probed, not used): each reported, and each one's
// fallback serving the same bytes when it is turned off as an older kernel would refuse it.
import { randomBytes } from 'node:crypto';
import type { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { native, type EchoUringFeature } from '../src/native.js';
import { openFdCount, settledLiveObjects, zeroLiveObjects } from './support/leaks.js';
import { closed, connectTo, echoOnce } from './support/echo.js';
import { runCliText, startCli } from './support/cli.js';

afterEach(async () => {
  expect(await settledLiveObjects()).toEqual(zeroLiveObjects);
});

const used: EchoUringFeature[] = ['noSqArray', 'registeredRingFd', 'directDescriptors'];
const probedOnly: EchoUringFeature[] = ['recvBundle', 'incrementalBuffers'];

describe.each([
  ['every feature the kernel has', [] as EchoUringFeature[]],
  ['direct descriptors off (plain fds)', ['directDescriptors'] as EchoUringFeature[]],
  ['every feature off (the fallbacks of a 5.x kernel)', [...used, ...probedOnly]],
])('uring server, %s', (_name, off) => {
  it('reports each feature, echoes byte-exact, refuses over maxConns, closes idle peers, and leaves nothing open', async () => {
    const before = openFdCount();
    const server = native.echoStartServer('uring', { host: '127.0.0.1', port: 0, maxConns: 20, idleTimeoutMs: 3000, uringFeaturesOff: off });
    const sockets: Socket[] = [];
    try {
      const direct = !off.includes('directDescriptors');
      const clients = await Promise.all(Array.from({ length: 20 }, () => connectTo(server.port)));
      sockets.push(...clients);
      const msgs = clients.map((_, i) => randomBytes(1 + i * 5000));
      const back = await Promise.all(clients.map((s, i) => echoOnce(s, [msgs[i]], msgs[i].length)));
      back.forEach((b, i) => expect(b.equals(msgs[i])).toBe(true));
      // Direct descriptors live in the ring's table, not in this process's fds: beside the
      // clients' own 20, the server's 20 connections add none (3 s before the idle timeout).
      const serverSideFds = openFdCount() - before - clients.length;
      if (direct) expect(serverSideFds).toBeLessThan(5); // the ring and its eventfd, no sockets
      else expect(serverSideFds).toBeGreaterThanOrEqual(20);

      // One over maxConns: accepted and closed at once (a FIN, not a reset).
      const extra = await connectTo(server.port);
      sockets.push(extra);
      await closed(extra);
      // Every client goes quiet: the idle timeout closes them all.
      await Promise.all(clients.map((s) => closed(s)));

      const late = await connectTo(server.port);
      sockets.push(late);
      const msg = randomBytes(100_000);
      expect((await echoOnce(late, [msg], msg.length)).equals(msg)).toBe(true);
      server.stop();
      const stats = await server.done;
      await closed(late);
      expect(stats).toMatchObject({ connections: 21, refused: 1, idleClosed: 20 });
      expect(openFdCount()).toBe(before);

      for (const f of [...used, ...probedOnly]) {
        const state = stats.features![f]!;
        if (off.includes(f)) expect(state).toEqual({ accepted: false, reason: 'turned off (IOLAB_ECHO_URING_OFF)' });
        else if (probedOnly.includes(f)) expect(state.accepted).toBe(false);
        // Accepted, or refused with the kernel's errno (a kernel older than the feature).
        else if (!state.accepted) expect(state).toMatchObject({ reason: 'refused by the kernel', errno: expect.stringMatching(/^E/) });
      }
      expect(stats.setup.includes('direct descriptors')).toBe(direct && stats.features!.directDescriptors!.accepted);
      expect(stats.setup.includes('NO_SQARRAY')).toBe(stats.features!.noSqArray!.accepted);
    } finally {
      server.stop(); // after a failure above (harmless once stopped)
      for (const c of sockets) c.destroy();
    }
  }, 30_000);

  it('keeps lagging readers in order through their queues and a dry buffer ring', async () => {
    const server = native.echoStartServer('uring', { host: '127.0.0.1', port: 0, buffers: 16, uringFeaturesOff: off });
    try {
      const laggers = await Promise.all([0, 1].map(() => connectTo(server.port)));
      await Promise.all(laggers.map(async (s) => {
        const data = randomBytes(2 << 20);
        s.pause();
        s.write(data);
        await new Promise((r) => setTimeout(r, 200));
        s.resume();
        expect((await echoOnce(s, [], data.length)).equals(data)).toBe(true);
        s.destroy();
      }));
      const r = await native.echoRunLoad({ host: '127.0.0.1', port: server.port, clients: 50, length: 512, durationMs: 300 }).done;
      expect(r.errors).toEqual({ connect: 0, reset: 0, shortEcho: 0, mismatch: 0, timeout: 0 });
      expect(r.responses).toBe(r.requests);
    } finally {
      server.stop();
    }
    const stats = await server.done;
    expect(stats.bytesEchoed).toBeGreaterThanOrEqual(2 * (2 << 20));
    expect(stats.recvPauses).toBeGreaterThan(0);
  }, 30_000);
});

describe('uring features: the knob and the report', () => {
  it('takes only known feature names', () => {
    expect(() => native.echoStartServer('uring', { host: '127.0.0.1', port: 0, uringFeaturesOff: ['bogus' as EchoUringFeature] })).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE', message: expect.stringContaining('options.uringFeaturesOff[0]') }));
    expect(() => native.echoStartServer('uring', { host: '127.0.0.1', port: 0, uringFeaturesOff: 'noSqArray' as unknown as EchoUringFeature[] })).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
  });

  it('the CLI reads IOLAB_ECHO_URING_OFF, says the setup in text and the features in --json', async () => {
    const env = { IOLAB_ECHO_URING_OFF: 'directDescriptors,noSqArray' };
    for (const json of [true, false]) {
      const { child, firstLine } = await startCli(['echo', 'server', '--port', '0', ...(json ? ['--json'] : [])], /listening/, { env });
      const port = Number((/"port":(\d+)/.exec(firstLine) ?? /:(\d+) /.exec(firstLine))![1]);
      const s = await connectTo(port);
      await echoOnce(s, [Buffer.from('abc')], 3);
      s.end();
      await closed(s);
      child.kill('SIGTERM');
      const r = await child;
      expect(r.exitCode).toBe(0);
      const lines = String(r.stdout).trim().split('\n');
      if (json) {
        const stopped = JSON.parse(lines.pop()!);
        expect(stopped.features.directDescriptors).toEqual({ accepted: false, reason: 'turned off (IOLAB_ECHO_URING_OFF)' });
        expect(stopped.features.noSqArray).toEqual({ accepted: false, reason: 'turned off (IOLAB_ECHO_URING_OFF)' });
        expect(Object.keys(stopped.features)).toEqual([...used, ...probedOnly]);
      } else {
        expect(lines.at(-2)).toMatch(/^setup: (SINGLE_ISSUER\|DEFER_TASKRUN|COOP_TASKRUN|plain)(, registered ring fd)?, 4096 x 4096 B provided buffers$/);
      }
    }
    const bad = await runCliText(['echo', 'server', '--port', '0'], { env: { IOLAB_ECHO_URING_OFF: 'directDescriptors,bogus' } });
    expect(bad).toEqual({ exitCode: 1, stdout: '', stderr: expect.stringMatching(/^iolab: IOLAB_ECHO_URING_OFF: unknown feature 'bogus' \(expected some of noSqArray, /) });
  }, 90_000);

  it('a stop with connections open closes their direct descriptors through the ring', async () => {
    const server = native.echoStartServer('uring', { host: '127.0.0.1', port: 0 });
    const sockets: Socket[] = [];
    try {
      const clients = await Promise.all(Array.from({ length: 30 }, () => connectTo(server.port)));
      sockets.push(...clients);
      await Promise.all(clients.map((s) => echoOnce(s, [Buffer.from('x')], 1)));
      server.stop();
      const stats = await server.done;
      await Promise.all(clients.map((s) => closed(s)));
      expect(stats.connections).toBe(30);
    } finally {
      server.stop();
      for (const c of sockets) c.destroy();
    }
  });
});
