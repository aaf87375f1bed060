// The package test's check of RingSocket, run in a project where the packed iolab is installed
// (scripts/test-package.mjs runs it once per Node line and install mode): node:http served over
// RingSockets accepted with the Ring (keep-alive, bodies both ways checked), stream.pipeline
// through one, every buffer back in the pool and nothing left open; node:http on onRing (the one
// line: listen, address, close once drained); and RingSocket's and onRing's types checked by tsc
// against the installed .d.ts, with and without @types/node: uses that must compile, and misuses
// that must be refused (@ts-expect-error fails the compile if one is accepted).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const program = `
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import http from 'node:http';
import { Duplex, PassThrough } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Ring, RingSocket, isIoUringUnavailable, socket, bind, listen, getsockname, close, liveObjects } from 'iolab';

let ring;
try {
  ring = new Ring();
} catch (err) {
  if (isIoUringUnavailable(err)) { console.log('duplex ok (io_uring refused here)'); process.exit(0); }
  throw err;
}
const pool = ring.setupBufRing({ count: 64, size: 4096 });
const listener = socket('inet', 'stream');
bind(listener, { host: '127.0.0.1', port: 0 });
listen(listener);
const { port } = getsockname(listener);
const sockets = [];
const server = http.createServer((req, res) => {
  const hash = createHash('sha256');
  req.on('data', (c) => hash.update(c));
  req.on('end', () => res.end(hash.digest('hex') + ' ' + 'x'.repeat(Number(req.url.slice(1)))));
});
const accepting = (async () => {
  for (;;) {
    let fd;
    try { fd = await ring.accept(listener); } catch { return; }
    const s = new RingSocket(ring, fd, { bufferRing: pool });
    assert.ok(s instanceof Duplex);
    sockets.push(s);
    server.emit('connection', s);
  }
})();
const agent = new http.Agent({ keepAlive: true, maxSockets: 2 });
for (let i = 0; i < 200; i++) {
  const body = Buffer.alloc((i * 977) % 10000, i);
  const res = await new Promise((resolve, reject) => {
    const req = http.request({ port, method: 'POST', path: '/' + (i * 131) % 9000, agent }, resolve);
    req.on('error', reject);
    req.end(body);
  });
  let text = '';
  for await (const c of res) text += c;
  assert.equal(text, createHash('sha256').update(body).digest('hex') + ' ' + 'x'.repeat((i * 131) % 9000));
}
agent.destroy();
assert.ok(sockets.length <= 2, 'kept alive: ' + sockets.length + ' connections');

// pipeline: a client RingSocket through node:net's echo... of a server RingSocket
const fd = await ring.socket('inet', 'stream');
await ring.connect(fd, { host: '127.0.0.1', port });
const client = new RingSocket(ring, fd, { bufferRing: pool, allowHalfOpen: true });
const request = Buffer.from('GET /5 HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n');
const out = new PassThrough();
let reply = '';
out.on('data', (c) => (reply += c));
await Promise.all([pipeline(async function* () { yield request; }, client), pipeline(client, out)]);
assert.match(reply, /^HTTP\\/1\\.1 200 OK\\r\\n[\\s\\S]* x{5}$/);

await new Promise((r) => setTimeout(r, 50));
for (const s of sockets) assert.equal(s.destroyed, true, 'the server side closed as the client did');
for (let i = 0; i < pool.count; i++) assert.equal(pool.held(i), false);
await ring.close();
await accepting;
close(listener);
assert.equal(liveObjects().ringStreams, 0);
console.log('duplex ok');
`;

const onRingProgram = `
import assert from 'node:assert/strict';
import http from 'node:http';
import { onRing, Ring, isIoUringUnavailable, liveObjects } from 'iolab';
try {
  await new Ring().close();
} catch (err) {
  if (isIoUringUnavailable(err)) { console.log('onRing ok (io_uring refused here)'); process.exit(0); }
  throw err;
}
const server = onRing(http.createServer((req, res) => res.end('hello ' + req.url)));
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const { port } = server.address();
const agent = new http.Agent({ keepAlive: true });
for (let i = 0; i < 50; i++) {
  const res = await new Promise((resolve, reject) => http.get({ port, path: '/' + i, agent }, resolve).on('error', reject));
  let body = '';
  for await (const c of res) body += c;
  assert.equal(body, 'hello /' + i);
}
const closed = new Promise((resolve) => server.close(resolve));
agent.destroy();
assert.equal(await closed, undefined);
assert.equal(server.listening, false);
await new Promise((r) => setTimeout(r, 50));
assert.equal(liveObjects().ringStreams, 0);
console.log('onRing ok');
`;

const typed = `
import { Ring, RingSocket, onRing, type RingSocketOptions } from 'iolab';
declare const ring: Ring;
const options: RingSocketOptions = { bufferRing: ring.setupBufRing({ count: 8, size: 4096 }), allowHalfOpen: true };
const s: RingSocket = new RingSocket(ring, 3, options).setNoDelay(true).setTimeout(1000);
const n: number = s.bytesRead + s.bytesWritten;
const port: number | undefined = s.remotePort;
// @ts-expect-error the options name the buffer ring
new RingSocket(ring, 3, {});
// @ts-expect-error bytesRead is a number
export const count: string = s.bytesRead;
// @ts-expect-error connected when made: it has no connect()
s.connect(80);
// @ts-expect-error onRing takes a server, not a request handler
onRing((req: unknown, res: { end(): void }) => res.end());
export { n, port };
`;

/** With @types/node: a RingSocket is a net.Socket (a Duplex) to the compiler, with no cast: an
 * http.Agent's createConnection and a request's, tls.connect({ socket }), TLSSocket, pipeline(), a
 * net.Socket (what undici's connect gives back) and a Duplex take it; its listeners' arguments
 * are net's (a chunk is no number, 'close' gives a boolean); onRing gives the server back as it
 * was typed. */
const typedWithNode = typed + `
import http from 'node:http';
import { ringConnector } from 'iolab';
import net from 'node:net';
import { Duplex } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import tls from 'node:tls';
export const server: http.Server = onRing(http.createServer(), { bufferCount: 64 });
const open = () => new RingSocket(ring, 3, options);
class RingAgent extends http.Agent {
  override createConnection(): RingSocket { return open(); }
}
export const agent = new RingAgent({ keepAlive: true });
export const request = http.request({ createConnection: () => open() });
export const secure: tls.TLSSocket = tls.connect({ socket: open(), servername: 'localhost' });
const connector = ringConnector();
const plainAgent = new http.Agent({ keepAlive: true });
plainAgent.createConnection = connector;
export const viaConnector = http.request({ createConnection: connector });
export const wrapped = new tls.TLSSocket(open());
export const piped: Promise<void> = pipeline(s, s);
export const asNet: net.Socket = s;
export const asDuplex: Duplex = s;
export const chained: RingSocket = s.on('end', () => {}).once('drain', () => {}).setKeepAlive(true).unref();
s.on('data', (chunk) => { const b: Buffer | string = chunk; return b; });
s.on('error', (err) => { const e: Error = err; return e; });
s.on('close', (hadError) => { const h: boolean = hadError; return h; });
s.on('timeout', () => {}).on('connect', () => {}).on('ready', () => {});
// @ts-expect-error a chunk is a Buffer, no number
s.on('data', (chunk) => { const wrong: number = chunk; return wrong; });
// @ts-expect-error 'close' gives a boolean
s.on('close', (hadError) => { const wrong: string = hadError; return wrong; });
// @ts-expect-error 'error' gives an Error
s.on('error', (err) => err.notAMember);
// @ts-expect-error not a TTY
s.setRawMode(true);
`;

export async function checks({ root, project, node, run, check }) {
  writeFileSync(join(project, 'duplex.mjs'), program);
  const r = run(node, ['duplex.mjs'], { timeout: 60_000 });
  check('node:http over RingSocket (200 requests, keep-alive, bodies checked), pipeline through one, the pool back, nothing open',
    r.status === 0 && /^duplex ok/.test(r.out.trim()), r.out);
  writeFileSync(join(project, 'onring.mjs'), onRingProgram);
  const o = run(node, ['onring.mjs'], { timeout: 60_000 });
  check('node:http on onRing (one line): 50 keep-alive requests, address(), close() once the last connection ended',
    o.status === 0 && /^onRing ok/.test(o.out.trim()), o.out);
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  const options = { module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', strict: true, noEmit: true };
  writeFileSync(join(project, 'duplex.ts'), typed);
  writeFileSync(join(project, 'tsconfig.duplex.json'), JSON.stringify({ compilerOptions: { ...options, types: [] }, files: ['duplex.ts'] }));
  const bare = run(process.execPath, [tsc, '-p', join(project, 'tsconfig.duplex.json')]);
  check("RingSocket's types typecheck without @types/node (wrong uses refused)", bare.status === 0, bare.out);
  writeFileSync(join(project, 'duplex-node.ts'), typedWithNode);
  writeFileSync(join(project, 'tsconfig.duplex-node.json'), JSON.stringify({
    compilerOptions: { ...options, types: ['node'], typeRoots: [join(root, 'node_modules', '@types')] }, files: ['duplex-node.ts'],
  }));
  const withNode = run(process.execPath, [tsc, '-p', join(project, 'tsconfig.duplex-node.json')]);
  check('with @types/node a RingSocket is a net.Socket with no cast (Agent createConnection, tls.connect({ socket }), pipeline; listener arguments typed, misuses refused)',
    withNode.status === 0, withNode.out);
}
