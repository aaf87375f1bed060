// onRing on every core and across restarts: every way Node servers share a port, each run with
// plain node:http doing the same steps beside it. node:cluster under SCHED_RR and SCHED_NONE
// (requests spread over the workers; a worker's disconnect() closes and drains the server), pm2's
// cluster mode, reusePort on every supported Node line, systemd's socket activation (LISTEN_FDS,
// fd 3), and a listening socket handed to another process with SCM_RIGHTS whose old owner's
// close() leaves it working for the new one, close()'s other contracts kept.
import { describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { accept, bind, close, connect, getsockname, listen, onRing, recvmsg, sendmsg, socket, socketpair, waitFd } from '../src/index.js';
import { projectRoot } from '../src/native.js';
import { ringTestSetup } from './support/ring.js';
import { answer, fixture, indexUrl, spread, startJsonChild } from './support/http-servers.js';
import { newProcessTag, processesTagged, processTagVariable, waitFor } from './support/procs.js';

const { dir, newRing } = ringTestSetup('iolab-ring-procs-');

const kinds = ['ring', 'node'] as const;
const thisLine = Number(process.versions.node.split('.')[0]);
const nodeOfLine = (line: number) => line === thisLine ? process.execPath
  : join(execFileSync(process.execPath, [join(projectRoot, 'scripts', 'node-lines.mjs'), String(line)], { encoding: 'utf8' }).trim(), 'node');

describe.each(kinds)('node:cluster, %s', (kind) => {
  it.each(['rr', 'none'])(`SCHED_%s: 2 workers listen on one port, requests spread over both; a worker's disconnect() closes its server and the other answers every request`, async (policy) => {
    const primary = startJsonChild(process.execPath, [fixture('http-cluster.mjs'), indexUrl, kind, policy, '2']);
    try {
      const { port, workers } = await primary.next<{ port: number; workers: number[] }>('port');
      const { byBody, errors } = await spread(port, 100, 10);
      console.log(`node:cluster SCHED_${policy.toUpperCase()} ${kind}: answers per worker ${JSON.stringify(byBody)}`);
      expect(errors).toEqual([]);
      expect(Object.keys(byBody).map(Number).sort()).toEqual([...workers].sort());
      primary.child.kill('SIGHUP');
      const { disconnected } = await primary.next<{ disconnected: number }>('disconnected');
      const after = await spread(port, 20, 10);
      expect(after).toEqual({ byBody: { [String(workers.find((w) => w !== disconnected))]: 20 }, errors: [] });
    } finally {
      expect(await primary.stop()).toBe(0);
    }
  });
});

describe('node:cluster, a Unix path', () => {
  it("a worker's listen({ path, readableAll, writableAll }): the primary makes the socket file with net's mode, and it answers", () => {
    const got = kinds.map((kind) => {
      const path = join(dir().path, `${kind}.sock`);
      const run = spawnSync(process.execPath, [fixture('cluster-unix-path.mjs'), indexUrl, kind, path],
        { encoding: 'utf8', timeout: 60_000, env: { ...process.env, [processTagVariable]: newProcessTag() } });
      expect(run.status, run.stderr).toBe(0);
      return JSON.parse(run.stdout.trim().split('\n').at(-1)!) as { mode: string; answer: string };
    });
    console.log(`node:cluster Unix path, ring and node: ${JSON.stringify(got)}`);
    expect(got[0]).toEqual(got[1]);
    expect(got[0].answer).toBe('answered');
    expect(Number.parseInt(got[0].mode, 8) & 0o666).toBe(0o666); // readable and writable by all
  });
});

// (under the ASan suite, every process has the sanitizer preloaded, pm2's CLI and daemon too:
// there `pm2 kill` never returns and the daemon stays; node:cluster's cases, the same mechanism
// without pm2, run there)
describe.each(kinds)("pm2's cluster mode, %s", (kind) => {
  it.skipIf(process.env.IOLAB_ASAN === '1')('pm2 start -i 2: both instances listen on one port and answer', async () => {
    const home = mkdtempSync(join(dir().path, 'pm2-'));
    const workersDir = mkdtempSync(join(dir().path, 'workers-'));
    const tag = newProcessTag();
    const env = { ...process.env, PM2_HOME: home, WORKERS_DIR: workersDir, PORT: '0', [processTagVariable]: tag };
    const pm2 = join(projectRoot, 'node_modules', 'pm2', 'bin', 'pm2');
    try {
      const start = spawnSync(process.execPath, [pm2, 'start', fixture('http-cluster.mjs'), '-i', '2', '--name', `iolab-${kind}`, '--', indexUrl, kind], { env, encoding: 'utf8', timeout: 60_000 });
      expect(start.status, start.stderr).toBe(0);
      const ready = await waitFor('both instances listening', () => {
        const files = readdirSync(workersDir);
        return files.length === 2 && files.map((f) => JSON.parse(readFileSync(join(workersDir, f), 'utf8')) as { pid: number; port: number });
      }, 30_000);
      expect(ready[0].port).toBe(ready[1].port);
      const { byBody, errors } = await spread(ready[0].port, 100, 10);
      console.log(`pm2 cluster mode ${kind}: answers per instance ${JSON.stringify(byBody)}`);
      expect(errors).toEqual([]);
      expect(Object.keys(byBody).map(Number).sort()).toEqual(ready.map((r) => r.pid).sort());
    } finally {
      spawnSync(process.execPath, [pm2, 'kill'], { env, timeout: 60_000 });
      try {
        await waitFor('pm2 and its instances gone', () => processesTagged(tag).length === 0, 20_000);
      } finally {
        // whatever pm2 left is not left running for good
        for (const p of processesTagged(tag)) try { process.kill(p.pid, 'SIGKILL'); } catch { /* gone */ }
      }
    }
  }, 90_000);
});

describe('listen({ reusePort: true })', () => {
  // net has the option from Node 22.12 (and 23.1); onRing sets SO_REUSEPORT on every line
  const cases: [number, string][] = [20, 22, 24, 26].flatMap((line) => kinds.map((kind): [number, string] => [line, kind]));
  it.for(cases)('Node %i, %s: two processes listen on one port, each with its own socket, and both accept', { timeout: 60_000 }, async ([line, kind], { skip }) => {
    const node = nodeOfLine(line);
    const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
    const [major, minor] = version.slice(1).split('.').map(Number);
    // node:http has no reusePort there: the same steps give EADDRINUSE
    if (kind === 'node' && (major < 22 || (major === 22 && minor < 12))) skip(`net has no reusePort on ${version}`);
    const first = startJsonChild(node, [fixture('http-fd-server.mjs'), indexUrl, kind, 'reuseport', '0']);
    let second: ReturnType<typeof startJsonChild> | undefined;
    try {
      const a = await first.next<{ pid: number; port: number }>('pid');
      second = startJsonChild(node, [fixture('http-fd-server.mjs'), indexUrl, kind, 'reuseport', String(a.port)]);
      const b = await second.next<{ pid: number; port: number }>('pid');
      expect(b.port).toBe(a.port);
      const { byBody, errors } = await spread(a.port, 100, 10);
      expect(errors).toEqual([]);
      expect(Object.keys(byBody).map(Number).sort()).toEqual([a.pid, b.pid].sort());
    } finally {
      expect(await first.stop()).toBe(0);
      if (second) expect(await second.stop()).toBe(0);
    }
  });
});

describe.each(kinds)('systemd socket activation, %s', (kind) => {
  it('a child started as systemd starts a service (LISTEN_PID, LISTEN_FDS=1, the socket as fd 3) serves listen({ fd: 3 }); once it stopped, the socket still accepts for systemd', async () => {
    // this process is systemd: it made the socket, keeps its own fd of it, and after the
    // service stopped, waits for the next connection on it (to start the service again)
    const fd = socket('inet', 'stream');
    bind(fd, { host: '127.0.0.1', port: 0 });
    listen(fd);
    const { port } = getsockname(fd) as { port: number };
    // LISTEN_PID is the service's own pid, known only after the fork: a shell sets it and execs
    const child = startJsonChild('/bin/sh', ['-c', 'LISTEN_PID=$$ LISTEN_FDS=1 exec "$0" "$@"', process.execPath, fixture('http-fd-server.mjs'), indexUrl, kind, 'systemd'],
      { stdio: ['ignore', 'pipe', 'pipe', fd] });
    try {
      const { pid } = await child.next<{ pid: number; port: number }>('pid');
      expect(await spread(port, 20, 5)).toEqual({ byBody: { [String(pid)]: 20 }, errors: [] });
    } finally {
      expect(await child.stop()).toBe(0);
    }
    const client = socket('inet', 'stream');
    connect(client, { host: '127.0.0.1', port }); // a socket the service shut down refuses it
    expect(waitFd(fd, 'read', 10_000)).toBe(true);
    const accepted = accept(fd);
    expect(accepted).toBeGreaterThan(0);
    for (const f of [accepted, client, fd]) close(f);
  });
});

describe('a listening socket handed to another process with SCM_RIGHTS', () => {
  const pairs = [['ring', 'ring'], ['node', 'node'], ['ring', 'node'], ['node', 'ring']] as const;
  it.each(pairs)("old owner %s, new owner %s: the old owner's close() stops its own accepts at once, drains its open request, 'close' comes last, and the new owner answers every request", async (oldKind, newKind) => {
    let release: (() => void) | undefined;
    const events: string[] = [];
    const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
      if (req.url === '/slow') {
        release = () => res.end('slow done', () => events.push('slow answered'));
        events.push('slow request in');
      } else {
        res.end(String(process.pid));
      }
    };
    const ring = newRing();
    const server = oldKind === 'ring' ? onRing(http.createServer(handler), { ring, bufferCount: 64 }) : http.createServer(handler);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    const listeningFd = (server as unknown as { _handle: { fd: number } })._handle.fd;
    // a request in progress at the old owner, then the socket handed over, then its close()
    const slow = answer(port, '/slow');
    await waitFor('the slow request at the old owner', () => release !== undefined);
    const [mine, theirs] = socketpair('stream');
    const child = startJsonChild(process.execPath, [fixture('http-fd-server.mjs'), indexUrl, newKind, 'scm'], { stdio: ['ignore', 'pipe', 'pipe', theirs] });
    close(theirs);
    try {
      sendmsg(mine, [Buffer.from('listen')], { fds: [listeningFd] });
      const { pid } = await child.next<{ pid: number }>('pid');
      const closed = new Promise<void>((resolve) => server.close(() => {
        events.push('close');
        resolve();
      }));
      events.push('close() called');
      // from now on the new owner takes every connection, the old none
      expect(await spread(port, 40, 10)).toEqual({ byBody: { [String(pid)]: 40 }, errors: [] });
      release!();
      expect(await slow).toEqual({ body: 'slow done' });
      await closed;
      expect(events).toEqual(['slow request in', 'close() called', 'slow answered', 'close']);
      expect(await spread(port, 20, 10)).toEqual({ byBody: { [String(pid)]: 20 }, errors: [] });
    } finally {
      close(mine);
      expect(await child.stop()).toBe(0);
    }
  });
});

describe('close() gives the socket up, never shuts it down', () => {
  it('a copy of the listening fd held elsewhere still accepts after the server closed', async () => {
    const ring = newRing();
    const server = onRing(http.createServer((req, res) => res.end('x')), { ring, bufferCount: 16 });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    const [a, b] = socketpair('stream');
    sendmsg(a, [Buffer.from('x')], { fds: [(server as unknown as { _handle: { fd: number } })._handle.fd] });
    const [kept] = recvmsg(b, [Buffer.alloc(1)], { maxFds: 1 }).fds;
    close(a);
    close(b);
    await new Promise((resolve) => server.close(resolve));
    const client = http.get({ host: '127.0.0.1', port, agent: false });
    const clientClosed = new Promise((resolve) => client.on('error', () => {}).on('close', resolve));
    const accepted = await ring.accept(kept); // a shut-down socket fails this with EINVAL
    expect(accepted).toBeGreaterThan(0);
    close(accepted);
    client.destroy();
    close(kept);
    await clientClosed;
  });
});
