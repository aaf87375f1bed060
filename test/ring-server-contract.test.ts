// onRing and RingSocket keep net's contract where it was missing, each case run with node's own
// server doing the same steps: the addresses of a TLS socket over a RingSocket (https), a Unix
// path's file (removed at close; readableAll/writableAll as net's mode), listen({ signal }), the
// 'drop' event's remote address, listen's backlog (the kernel's queue length, read with ss), a
// listen with no host where socket(AF_INET6) is refused, ring.connect's abort during the host's
// lookup, onRing's parameter type, and ringConnector: client connections on the Ring for
// http.Agent (http and https) and undici, their buffer pool freed with the last.
import { beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { join } from 'node:path';
import { Agent as UndiciAgent, request as undiciRequest } from 'undici';
import { getsockopt, onRing, Ring, ringConnector, socket } from '../src/index.js';
import { projectRoot } from '../src/native.js';
import { settledLiveObjects } from './support/leaks.js';
import { ringTestSetup } from './support/ring.js';
import { buildSeccompRefuser } from './support/temp.js';
import { indexUrl } from './support/http-servers.js';

const { dir, newRing } = ringTestSetup('iolab-ring-contract-');
const kinds = ['ring', 'node'] as const;
type Kind = (typeof kinds)[number];
/** The server as the case runs it: on the Ring, or node's own. */
const served = <S extends net.Server>(kind: Kind, server: S): S => (kind === 'ring' ? onRing(server, { ring: newRing(), bufferCount: 16 }) : server);
const listening = (server: net.Server, ...args: unknown[]) => new Promise<void>((resolve, reject) => {
  server.once('error', reject);
  (server.listen as (...a: unknown[]) => void)(...args, () => resolve());
});
const closed = (server: net.Server) => new Promise<void>((resolve) => server.close(() => resolve()));

let key: Buffer;
let cert: Buffer;
beforeAll(() => {
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', join(dir().path, 'key.pem'),
    '-out', join(dir().path, 'cert.pem'), '-days', '1', '-subj', '/CN=localhost'], { stdio: 'ignore' });
  key = readFileSync(join(dir().path, 'key.pem'));
  cert = readFileSync(join(dir().path, 'cert.pem'));
});

describe.each(kinds)('%s', (kind) => {
  it("https: the request's socket has the addresses of the TCP connection, as node's https gives them", async () => {
    let seen: Record<string, unknown> = {};
    const server = served(kind, https.createServer({ key, cert }, (req, res) => {
      const s = req.socket;
      seen = { remoteAddress: s.remoteAddress, remotePort: s.remotePort, remoteFamily: s.remoteFamily, localAddress: s.localAddress, localPort: s.localPort, localFamily: s.localFamily, address: s.address() };
      res.end('ok');
    }));
    await listening(server, 0, '127.0.0.1');
    const port = (server.address() as net.AddressInfo).port;
    const clientPort = await new Promise<number>((resolve, reject) => {
      https.get({ host: '127.0.0.1', port, ca: cert, servername: 'localhost', agent: false }, (res) => {
        const local = res.socket.localPort!;
        res.resume().on('end', () => resolve(local));
      }).on('error', reject);
    });
    expect(seen).toEqual({
      remoteAddress: '127.0.0.1', remotePort: clientPort, remoteFamily: 'IPv4', localAddress: '127.0.0.1', localPort: port, localFamily: 'IPv4',
      address: { address: '127.0.0.1', family: 'IPv4', port },
    });
    await closed(server);
  });

  it("a Unix path: close() removes the socket file, so listening on it again works; readableAll and writableAll give net's mode", async () => {
    const path = join(dir().path, `${kind}.sock`);
    const modes: Record<string, number> = {};
    for (const [name, opts] of [['none', {}], ['readable', { readableAll: true }], ['writable', { writableAll: true }], ['both', { readableAll: true, writableAll: true }]] as const) {
      const server = served(kind, net.createServer((s) => s.end('x')));
      await listening(server, { path, ...opts });
      modes[name] = statSync(path).mode & 0o777;
      await closed(server);
      expect(existsSync(path), `${name}: the file after close()`).toBe(false);
    }
    const umask = process.umask();
    // libuv 1.51 on (Node 22.23, 24, 26) sets the mode asked; before (Node 20) it adds it to the umask's
    const [major, minor] = process.versions.uv.split('.').map(Number);
    const exact = major > 1 || (major === 1 && minor >= 51);
    const base = exact ? 0 : 0o777 & ~umask;
    expect(modes).toEqual({ none: 0o777 & ~umask, readable: base | 0o444, writable: base | 0o222, both: exact ? 0o666 : 0o777 });
    // the abstract namespace has no file: readableAll is refused there, as net refuses it
    expect(() => served(kind, net.createServer()).listen({ path: '\0iolab-abstract', readableAll: true })).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }));
  });

  it('listen({ signal }): an abort closes the server; a signal aborted before listen() gives "close" and no "listening"; a non-signal is a TypeError', async () => {
    const controller = new AbortController();
    const server = served(kind, net.createServer());
    await listening(server, { port: 0, host: '127.0.0.1', signal: controller.signal });
    const port = (server.address() as net.AddressInfo).port;
    const gone = new Promise((resolve) => server.once('close', resolve));
    controller.abort();
    await gone;
    expect(server.listening).toBe(false);
    const refused = await new Promise((resolve) => net.connect(port, '127.0.0.1').on('error', (e: Error & { code?: string }) => resolve(e.code)).on('connect', () => resolve('connected')));
    expect(refused).toBe('ECONNREFUSED');

    const early = served(kind, net.createServer());
    const events: string[] = [];
    early.on('listening', () => events.push('listening')).on('close', () => events.push('close'));
    early.listen({ port: 0, host: '127.0.0.1', signal: AbortSignal.abort() });
    await new Promise((resolve) => early.once('close', resolve));
    await new Promise((r) => setImmediate(r));
    expect(events).toEqual(['close']);
    expect(() => served(kind, net.createServer()).listen({ port: 0, signal: 'abort' as unknown as AbortSignal })).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
  });

  it("listen's options as net reads them: a host of null or '' is none ('::'); a signal that is none is refused in net's words", async () => {
    for (const host of [null, '']) {
      const server = served(kind, net.createServer());
      await listening(server, { port: 0, host });
      expect((server.address() as net.AddressInfo).address).toBe('::');
      await closed(server);
    }
    const refusal = (s: net.Server, signal: unknown) => {
      try {
        s.listen({ port: 0, signal: signal as AbortSignal });
      } catch (e) {
        return { code: (e as { code?: string }).code, message: (e as Error).message };
      }
      s.close();
      return 'listened';
    };
    for (const signal of [null, 'abort', 5, 5n, 'x'.repeat(28), 'x'.repeat(29), function named() {}, () => {}, {}, Object.create(null), new Map()]) {
      const theirs = refusal(net.createServer(), signal);
      expect(theirs).toMatchObject({ code: 'ERR_INVALID_ARG_TYPE' });
      expect(refusal(served(kind, net.createServer()), signal)).toEqual(theirs);
    }
  });

  it('a second server on a port in use, neither with reusePort: EADDRINUSE, as net gives (no SO_REUSEPORT unless asked for)', async () => {
    const first = served(kind, net.createServer());
    await listening(first, 0, '127.0.0.1');
    const { port } = first.address() as net.AddressInfo;
    expect(getsockopt((first as unknown as { _handle: { fd: number } })._handle.fd, 'SO_REUSEPORT')).toBe(false);
    const second = served(kind, net.createServer());
    const outcome = await listening(second, port, '127.0.0.1').then(() => 'listened', (e: Error & { code?: string }) => `${e.code}: ${e.message}`);
    expect(outcome).toBe(`EADDRINUSE: listen EADDRINUSE: address already in use 127.0.0.1:${port}`);
    if (second.listening) await closed(second);
    await closed(first);
  });

  it("'::' takes IPv4 too unless ipv6Only; a host name is looked up as net looks it up", async () => {
    const connects = (port: number, host: string) => new Promise((resolve) => net.connect(port, host)
      .on('error', (e: Error & { code?: string }) => resolve(e.code)).on('connect', function (this: net.Socket) { this.destroy(); resolve('connected'); }));
    const seen: Record<string, unknown> = {};
    for (const ipv6Only of [false, true]) {
      const server = served(kind, net.createServer((s) => s.destroy()));
      await listening(server, { port: 0, host: '::', ipv6Only });
      const port = (server.address() as net.AddressInfo).port;
      seen[`ipv6Only ${ipv6Only}`] = [await connects(port, '::1'), await connects(port, '127.0.0.1')];
      await closed(server);
    }
    const named = served(kind, net.createServer());
    await listening(named, 0, 'localhost');
    seen.localhost = (named.address() as net.AddressInfo).address; // the lookup's first answer
    await closed(named);
    const first = (await import('node:dns/promises')).lookup('localhost');
    expect(seen).toEqual({ 'ipv6Only false': ['connected', 'connected'], 'ipv6Only true': ['connected', 'ECONNREFUSED'], localhost: (await first).address });
  });

  it('no host, on a port an ipv6Only server holds on \'::\': EADDRINUSE, as net gives, not a listen on IPv4 alone', async () => {
    const holder = net.createServer();
    await listening(holder, { port: 0, host: '::', ipv6Only: true });
    const port = (holder.address() as net.AddressInfo).port;
    const server = served(kind, net.createServer());
    const outcome = await new Promise<string>((resolve) => {
      server.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
      server.listen(port, () => resolve(`listening on ${(server.address() as net.AddressInfo).address}`));
    });
    if (server.listening) await closed(server);
    await closed(holder);
    expect(outcome).toBe('EADDRINUSE');
  });

  it("noDelay and keepAlive: the server's options set TCP_NODELAY and SO_KEEPALIVE on each connection it accepts, as net's", async () => {
    const seen: Record<string, boolean[]> = { TCP_NODELAY: [], SO_KEEPALIVE: [] };
    for (const [option, sockopt] of [['noDelay', 'TCP_NODELAY'], ['keepAlive', 'SO_KEEPALIVE']] as const) {
      for (const on of [true, false]) {
        const server = served(kind, net.createServer({ [option]: on }));
        await listening(server, 0, '127.0.0.1');
        const accepted = new Promise<net.Socket>((r) => server.once('connection', r));
        const client = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
        const socket = await accepted;
        const fd = kind === 'ring' ? (socket as unknown as { fd: number }).fd : (socket as unknown as { _handle: { fd: number } })._handle.fd;
        seen[sockopt].push(getsockopt(fd, sockopt) as boolean);
        client.destroy();
        socket.destroy();
        await closed(server);
      }
    }
    expect(seen).toEqual({ TCP_NODELAY: [true, false], SO_KEEPALIVE: [true, false] });
  });

  it("maxConnections: 'drop' tells the dropped connection's local and remote address, port and family", async () => {
    const held: net.Socket[] = [];
    const server = served(kind, net.createServer((s) => held.push(s)));
    server.maxConnections = 1;
    const drops: unknown[] = [];
    server.on('drop', (d) => drops.push(d));
    await listening(server, 0, '127.0.0.1');
    const port = (server.address() as net.AddressInfo).port;
    const first = net.connect(port, '127.0.0.1');
    await new Promise((resolve) => server.once('connection', resolve));
    const second = net.connect(port, '127.0.0.1');
    const secondPort = await new Promise<number>((resolve) => second.once('connect', () => resolve(second.localPort!)));
    second.on('error', () => {});
    await new Promise((resolve) => second.once('close', resolve));
    expect(drops).toEqual([{ localAddress: '127.0.0.1', localPort: port, localFamily: 'IPv4', remoteAddress: '127.0.0.1', remotePort: secondPort, remoteFamily: 'IPv4' }]);
    first.destroy();
    for (const s of held) s.destroy();
    await closed(server);
  });
});

describe('a kernel without IPv6', () => {
  it("listen with no host: where socket(AF_INET6) is refused (EAFNOSUPPORT, by a seccomp filter), the server listens on 0.0.0.0 and answers, as net's", () => {
    const refuser = buildSeccompRefuser(dir().path);
    const got = kinds.map((kind) => {
      const code = `
        import net from 'node:net';
        const { onRing } = await import(${JSON.stringify(indexUrl)});
        const plain = net.createServer((s) => s.end('answered'));
        const server = ${JSON.stringify(kind)} === 'ring' ? onRing(plain, { bufferCount: 16 }) : plain;
        server.listen(0, () => {
          let answer = '';
          net.connect(server.address().port, '127.0.0.1').setEncoding('utf8').on('data', (d) => (answer += d)).on('end', () => {
            const { address, family } = server.address();
            console.log(JSON.stringify({ address, family, answer }));
            server.close();
          });
        });`;
      const run = spawnSync(refuser, ['EAFNOSUPPORT', '--inet6', process.execPath, '--input-type=module', '-e', code], { encoding: 'utf8', timeout: 30_000 });
      expect(run.status, run.stderr).toBe(0);
      return JSON.parse(run.stdout) as unknown;
    });
    expect(got).toEqual([{ address: '0.0.0.0', family: 'IPv4', answer: 'answered' }, { address: '0.0.0.0', family: 'IPv4', answer: 'answered' }]);
  });
});

describe("listen's backlog", () => {
  // The length of a listening socket's queue as the kernel holds it: ss's Send-Q column.
  const queueOf = (server: net.Server) => {
    const at = server.address();
    const filter = typeof at === 'string' ? ['-xl', 'src', at] : ['-tl', 'sport', '=', `:${at!.port}`];
    const line = execFileSync('ss', ['-Hn', ...filter], { encoding: 'utf8' }).trim();
    return Number(line.split(/\s+/)[3 - (typeof at === 'string' ? 0 : 1)]);
  };
  const values = [undefined, 0, 7, -1, 1.5, '9', 'abc', 2 ** 40, 2 ** 31 + 5];
  it.each(['options', 'port, host, backlog', 'port, backlog', 'path, backlog'])('(%s): the kernel\'s queue length is net\'s for 0, 7, -1, 1.5, \'9\', \'abc\', 2^40, 2^31+5 and none', async (form) => {
    const sock = join(dir().path, 'backlog.sock');
    const argsOf = (backlog: unknown) => form === 'options' ? [{ port: 0, host: '127.0.0.1', backlog }]
      : form === 'port, host, backlog' ? [0, '127.0.0.1', backlog]
        : form === 'port, backlog' ? [0, backlog] : [sock, backlog];
    const got: Record<string, unknown[]> = { ring: [], node: [] };
    // (port, a string) is (port, host) in net too: those values are hosts there
    const tried = form === 'port, backlog' ? values.filter((v) => typeof v !== 'string') : values;
    for (const value of tried) {
      for (const kind of kinds) {
        const server = served(kind, net.createServer());
        await listening(server, ...argsOf(value).filter((a, i) => i === 0 || a !== undefined));
        got[kind].push(queueOf(server));
        await closed(server);
      }
    }
    console.log(`backlog (${form}) for ${JSON.stringify(tried)}: ${JSON.stringify(got.node)}`);
    expect(got.ring).toEqual(got.node);
    expect(new Set(got.node).size).toBeGreaterThan(3); // the values do reach the kernel: 511, 7, somaxconn, 1, 9, 0
  });
});

describe('ring.connect to a host name with a signal', () => {
  it("settles at the abort, not after the lookup, as net.connect does (the lookup held up: the child's one libuv thread blocked)", () => {
    // The child's only threadpool thread waits in the open(2) of a FIFO nobody writes to, so
    // 'localhost' cannot be looked up until the child writes to it itself, after the checks.
    const fifo = join(dir().path, 'held.fifo');
    execFileSync('mkfifo', [fifo]);
    const script = join(dir().path, 'abort-lookup.mjs');
    writeFileSync(script, `
import fs from 'node:fs';
import net from 'node:net';
const { Ring, socket, close } = await import(process.argv[2]);
const held = fs.promises.open(process.argv[3], 'r');            // the pool's one thread, blocked
const server = net.createServer().listen(0, '127.0.0.1');
await new Promise((r) => server.once('listening', r));
const port = server.address().port;
// what each has settled with by the next turn of the loop (an abort settles within this one)
const state = (p) => Promise.race([p.then(() => 'connected', (e) => e.name), new Promise((r) => setImmediate(() => r('pending')))]);
const ring = new Ring();
const fd = socket('inet', 'stream');
const ac = new AbortController();
const ringConnect = ring.connect(fd, { host: 'localhost', port }, { signal: ac.signal });
const c = new AbortController();
const netSocket = net.connect({ host: 'localhost', port, signal: c.signal });
const netConnect = new Promise((resolve, reject) => netSocket.once('connect', resolve).once('error', reject));
ac.abort();
c.abort();
const result = { ring: await state(ringConnect), net: await state(netConnect) };
fs.writeFileSync(process.argv[3], '');                        // the thread free again
await (await held).close();
close(fd);
await ring.close();
server.close();
console.log(JSON.stringify(result));
`);
    const r = spawnSync(process.execPath, [script, indexUrl, fifo], { encoding: 'utf8', timeout: 30_000, env: { ...process.env, UV_THREADPOOL_SIZE: '1' } });
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual({ ring: 'AbortError', net: 'AbortError' });
  });
});

describe("onRing's parameter type", () => {
  it('takes a net.Server (http, https, net, tls) and refuses a request handler at compile time', () => {
    const file = join(dir().path, 'types.ts');
    writeFileSync(file, `
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';
import { onRing, ringConnector } from ${JSON.stringify(join(projectRoot, 'src', 'index.ts'))};
export const a: http.Server = onRing(http.createServer());
export const b: https.Server = onRing(https.createServer());
export const c: net.Server = onRing(net.createServer(), { bufferCount: 64 });
export const d: tls.Server = onRing(tls.createServer());
// @ts-expect-error a request handler is no server
onRing((req: http.IncomingMessage, res: http.ServerResponse) => res.end());
// @ts-expect-error nor is an object without net.Server's members
onRing({ listen() {} });
const agent = new http.Agent();
agent.createConnection = ringConnector();
export const req = http.request({ createConnection: ringConnector() });
`);
    writeFileSync(join(dir().path, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', strict: true, noEmit: true, allowImportingTsExtensions: true, skipLibCheck: true,
        types: ['node'], typeRoots: [join(projectRoot, 'node_modules', '@types')] },
      files: ['types.ts'],
    }));
    const r = spawnSync(process.execPath, [join(projectRoot, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(dir().path, 'tsconfig.json')], { encoding: 'utf8' });
    expect(r.stdout + r.stderr).toBe('');
    expect(r.status).toBe(0);
  });
});

describe('ringConnector: client connections on the Ring', () => {
  it.each(kinds)('an http.Agent (keep-alive) whose createConnection it is, against a %s server: RingSockets, one pool freed with the agent', async (serverKind) => {
    const ring = newRing();
    const server = served(serverKind, http.createServer((req, res) => res.end(`${req.url} ${req.socket.remoteAddress}`)));
    await listening(server, 0, '127.0.0.1');
    const port = (server.address() as net.AddressInfo).port;
    const pools = (await settledLiveObjects()).bufferRings;
    const agent = new http.Agent({ keepAlive: true });
    agent.createConnection = ringConnector({ ring, bufferCount: 16 });
    const sockets = new Set<unknown>();
    for (let i = 0; i < 20; i++) {
      const body = await new Promise<string>((resolve, reject) => {
        http.get({ host: 'localhost', port, path: `/${i}`, agent }, (res) => {
          sockets.add(res.socket);
          let b = '';
          res.on('data', (c) => (b += c)).on('end', () => resolve(b));
        }).on('error', reject);
      });
      expect(body).toBe(`/${i} 127.0.0.1`);
    }
    expect([...sockets].map((s) => (s as object).constructor.name)).toEqual(['RingSocketDuplex']); // one, kept alive
    expect((await settledLiveObjects()).bufferRings).toBe(pools + 1); // one pool for the agent's connections
    agent.destroy();
    await closed(server);
    expect((await settledLiveObjects()).bufferRings).toBe(pools - (serverKind === 'ring' ? 1 : 0));
  });

  it('an https.Agent: TLS over the RingSocket, its addresses the connection\'s', async () => {
    const ring = newRing();
    const server = https.createServer({ key, cert }, (req, res) => res.end(`${req.socket.remotePort}`));
    await listening(server, 0, '127.0.0.1');
    const port = (server.address() as net.AddressInfo).port;
    const agent = new https.Agent({ keepAlive: true, ca: cert });
    agent.createConnection = ringConnector({ ring, bufferCount: 16 });
    const [body, seen] = await new Promise<[string, unknown]>((resolve, reject) => {
      https.get({ host: 'localhost', port, agent }, (res) => {
        const s = res.socket;
        const view = { remoteAddress: s.remoteAddress, remotePort: s.remotePort, localPort: s.localPort, encrypted: (s as { encrypted?: boolean }).encrypted };
        let b = '';
        res.on('data', (c) => (b += c)).on('end', () => resolve([b, view]));
      }).on('error', reject);
    });
    expect(seen).toEqual({ remoteAddress: '127.0.0.1', remotePort: port, localPort: Number(body), encrypted: true });
    agent.destroy();
    await closed(server);
  });

  it("an https.Agent checks the server's certificate against the host asked for, as node's own: one for localhost is refused at 127.0.0.1", async () => {
    const ring = newRing();
    const server = https.createServer({ key, cert }, (req, res) => res.end('answered'));
    await listening(server, 0, '127.0.0.1');
    const port = (server.address() as net.AddressInfo).port;
    const outcome = (agent: https.Agent, host: string) => new Promise<string>((resolve) => {
      https.get({ host, port, agent }, (res) => {
        let b = '';
        res.on('data', (c) => (b += c)).on('end', () => resolve(b));
      }).on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    });
    for (const host of ['localhost', '127.0.0.1']) {
      const nodes = new https.Agent({ ca: cert });
      const rings = new https.Agent({ ca: cert });
      rings.createConnection = ringConnector({ ring, bufferCount: 16 });
      const [expected, got] = [await outcome(nodes, host), await outcome(rings, host)];
      expect(expected).toBe(host === 'localhost' ? 'answered' : 'ERR_TLS_CERT_ALTNAME_INVALID');
      expect(got, host).toBe(expected);
      nodes.destroy();
      rings.destroy();
      // undici's connect: its host holds the port, its hostname not
      const dispatcher = new UndiciAgent({ connect: ringConnector({ ring, bufferCount: 16, tls: { ca: cert } }) });
      const viaUndici = await undiciRequest(`https://${host}:${port}/`, { dispatcher }).then((res) => res.body.text(),
        (err: NodeJS.ErrnoException) => err.code ?? err.message);
      expect(viaUndici, host).toBe(expected);
      await dispatcher.close();
    }
    await closed(server);
  });

  it("undici's connect (an Agent over http and https): requests answered, the pool freed once it closed", async () => {
    const ring = newRing();
    const plain = onRing(http.createServer((req, res) => res.end(`plain ${req.url}`)), { ring, bufferCount: 16 });
    const secure = https.createServer({ key, cert }, (req, res) => res.end(`secure ${req.url}`));
    await listening(plain, 0, '127.0.0.1');
    await listening(secure, 0, '127.0.0.1');
    const pools = (await settledLiveObjects()).bufferRings;
    const dispatcher = new UndiciAgent({ connect: ringConnector({ ring, bufferCount: 16, tls: { ca: cert } }) });
    for (const [base, word] of [[`http://localhost:${(plain.address() as net.AddressInfo).port}`, 'plain'], [`https://localhost:${(secure.address() as net.AddressInfo).port}`, 'secure']]) {
      for (let i = 0; i < 5; i++) {
        const res = await undiciRequest(`${base}/${i}`, { dispatcher });
        expect(await res.body.text()).toBe(`${word} /${i}`);
      }
    }
    expect((await settledLiveObjects()).bufferRings).toBe(pools + 1);
    await dispatcher.close();
    expect((await settledLiveObjects()).bufferRings).toBe(pools);
    await Promise.all([closed(plain), closed(secure)]);
  });

  it('refuses options that are not an object; a family asked for is the lookup\'s, as net.connect\'s', async () => {
    expect(() => ringConnector(null as never)).toThrow(expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' }));
    const server = net.createServer((s) => s.destroy());
    await listening(server, 0, '::');
    const port = (server.address() as net.AddressInfo).port;
    const connect = ringConnector({ ring: newRing() });
    const viaRing = await new Promise<string>((resolve) => connect({ host: 'localhost', port, family: 6 }, (err, s) => {
      if (err) return resolve((err as NodeJS.ErrnoException).code ?? err.message);
      resolve(s!.remoteFamily ?? 'none');
      s!.destroy();
    }));
    const viaNet = await new Promise<string>((resolve) => {
      const s = net.connect({ host: 'localhost', port, family: 6 });
      s.on('connect', () => { resolve(s.remoteFamily ?? 'none'); s.destroy(); }).on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
    });
    expect(viaRing).toBe(viaNet);
    await closed(server);
  });

  it("an IPv6 host and an empty path: a connection over IPv6, and over TCP (an empty path is none, as net's)", async () => {
    const server = net.createServer((s) => s.end(`${s.remoteFamily}`));
    await listening(server, 0, '::1');
    const { port } = server.address() as net.AddressInfo;
    const connect = ringConnector({ ring: newRing(), bufferCount: 16 });
    try {
      for (const target of [{ host: '::1', port }, { host: '::1', port, path: '' }]) {
        const s = await new Promise<net.Socket>((resolve, reject) => connect(target, (e, sock) => (e ? reject(e) : resolve(sock as unknown as net.Socket))));
        const peer = [s.remoteAddress, s.remoteFamily];
        const said = await new Promise<string>((resolve) => {
          let b = '';
          s.on('data', (c) => (b += c)).on('end', () => resolve(b));
        });
        expect([said, ...peer]).toEqual(['IPv6', '::1', 'IPv6']);
        s.destroy();
      }
    } finally {
      await closed(server);
    }
  });

  it('a connection that fails calls back with the error and leaves nothing open', async () => {
    const fd = socket('inet', 'stream'); // a port nobody listens on: bound, never listening
    const { bind, getsockname, close } = await import('../src/index.js');
    bind(fd, { host: '127.0.0.1', port: 0 });
    const { port } = getsockname(fd) as net.AddressInfo;
    const connect = ringConnector({ ring: newRing() });
    const err = await new Promise((resolve) => connect({ host: '127.0.0.1', port }, (e) => resolve(e)));
    expect(err).toMatchObject({ code: 'ECONNREFUSED', port });
    close(fd);
  });
});
