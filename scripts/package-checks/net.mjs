// The package test's checks of the sync networking API and Node's conventions, run in a
// project where the packed iolab is installed (scripts/test-package.mjs runs it once
// per Node line and install mode): TCP and UDP over IPv4 and IPv6 through the public API,
// constants, shmOpen's flag strings, a mapping shared with a worker through its fd and
// disposed of (with `using` where the line parses it), require('iolab') from CommonJS, and the
// types of all that checked by tsc against the installed .d.ts.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const program = `
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { lookup } from 'node:dns/promises';
import {
  socket, bind, listen, accept, connect, getsockname, getpeername, setsockopt, getsockopt, sendmsg, recvmsg, close,
  readvSync, writevSync, shmOpen, shmUnlink, ftruncate, mmap, memfdCreate, constants, liveObjects,
} from 'iolab';

const line = Number(process.versions.node.split('.')[0]);
for (const [family, host] of [['inet', '127.0.0.1'], ['inet6', '::1']]) {
  const server = socket(family, 'stream');
  setsockopt(server, 'SO_REUSEADDR', true);
  assert.equal(getsockopt(server, 'SO_REUSEADDR'), true);
  bind(server, { host, port: 0 });
  listen(server);
  const { port, address } = getsockname(server);
  assert.ok(port > 0 && address === host);
  const client = socket(family, 'stream');
  connect(client, { host, port });
  const conn = accept(server);
  assert.deepEqual(getpeername(conn), getsockname(client));
  writevSync(client, [Buffer.from('tcp '), Buffer.from(family)]);
  const buf = Buffer.alloc(32);
  assert.equal(buf.toString('utf8', 0, readvSync(conn, [buf], null)), 'tcp ' + family);

  const udp = socket(family, 'dgram');
  const sender = socket(family, 'dgram');
  bind(udp, { host });
  bind(sender, { host });
  sendmsg(sender, [Buffer.from('x')], { to: { host, port: getsockname(udp).port } });
  const got = recvmsg(udp, [buf]);
  assert.equal(got.bytesRead, 1);
  assert.deepEqual(got.from, getsockname(sender));

  close(server);
  const late = socket(family);
  let refused;
  try { connect(late, { host, port }); } catch (err) { refused = err; }
  assert.equal(refused.code, 'ECONNREFUSED');
  assert.deepEqual([refused.address, refused.port, 'path' in refused], [host, port, false]);
  for (const fd of [client, conn, udp, sender, late]) close(fd);
}
const spare = socket('inet');
assert.throws(() => connect(spare, { host: 'localhost', port: 1 }), /dns\\.lookup first/);
close(spare);
const { address } = await lookup('localhost', { family: 4 });
assert.equal(address, '127.0.0.1');
assert.deepEqual([constants.MSG_PEEK, constants.SOCK_DGRAM, constants.O_CREAT, constants.SCM_MAX_FD], [2, 2, 64, 253]);

const name = '/iolab-package-' + process.pid;
const shm = shmOpen(name, 'wx+');
assert.throws(() => shmOpen(name, 'wx+'), { code: 'EEXIST' });
shmUnlink(name);
close(shm);

const fd = memfdCreate('shared');
ftruncate(fd, 4096);
const map = mmap(fd, 4096, { write: true });
const worker = new Worker(\`
  const { parentPort, workerData } = require('node:worker_threads');
  import('iolab').then(({ mmap }) => {
    const mine = mmap(workerData.fd, 4096, { write: true });
    Buffer.from(mine).write('from the worker');
    mine[Symbol.dispose]();
    parentPort.postMessage('done');
  });
\`, { eval: true, workerData: { fd } });
await once(worker, 'message');
assert.equal(Buffer.from(map).toString('utf8', 0, 15), 'from the worker');
let transfer = 'copied';
try { new Worker('', { eval: true }).postMessage(map, [map]); } catch (err) { transfer = err.name; }
assert.equal(transfer, line < 22 ? 'copied' : 'DataCloneError');
map[Symbol.dispose]();
assert.equal(map.byteLength, 0);
if (line >= 24) await import('./net-using.mjs');
close(fd);
assert.equal(liveObjects().mappings, 0);
console.log('net ok');
process.exit(0); // the idle worker of the transfer check
`;

// parsed only where the line knows `using` (Node 24 on)
const usingProgram = `
import assert from 'node:assert/strict';
import { memfdCreate, ftruncate, mmap, close, liveObjects } from 'iolab';
const fd = memfdCreate('disposed');
ftruncate(fd, 4096);
{
  using map = mmap(fd, 4096);
  assert.equal(liveObjects().mappings, 1);
}
assert.equal(liveObjects().mappings, 0);
close(fd);
`;

const commonJs = `
const assert = require('node:assert/strict');
const { socketpair, sendmsg, recvmsg, close, Ring } = require('iolab');
const [a, b] = socketpair('dgram');
sendmsg(a, [Buffer.from('from CommonJS')]);
assert.equal(recvmsg(b, [Buffer.alloc(32)]).bytesRead, 13);
close(a);
close(b);
assert.equal(typeof Ring, 'function');
console.log('require ok');
`;

const typed = `
import { bind, connect, getsockname, getsockopt, isErrnoException, mmap, readvSync, recvmsg, setsockopt, shmOpen, socket,
  type AddressInfo, type Mapping, type RecvResult, type SocketAddress } from 'iolab';
const fd: number = socket('inet6', 'dgram');
const to: SocketAddress = { host: '::1', port: 9 };
bind(fd, to);
const name: string | AddressInfo = getsockname(fd);
const port: number = typeof name === 'string' ? 0 : name.port;
setsockopt(fd, 'SO_RCVBUF', 65536);
const nodelay: boolean = getsockopt(fd, 'TCP_NODELAY');
// @ts-expect-error a flag option takes true/false
setsockopt(fd, 'SO_REUSEADDR', 1);
// @ts-expect-error no such option
getsockopt(fd, 'SO_PRIORITY');
const n: number = readvSync(fd, [new Uint8Array(1)], null);
const r: RecvResult = recvmsg(fd, [new Uint8Array(1)]);
const bytes: number = r.bytesRead;
// @ts-expect-error renamed: bytesRead
r.bytes;
shmOpen('/x', 'wx+');
// @ts-expect-error not one of fs's flags for shared memory
shmOpen('/x', 'a');
const map: Mapping = mmap(fd, 4096);
map[Symbol.dispose]();
let refused: string | undefined;
try { connect(fd, to); } catch (err) { if (isErrnoException(err)) refused = \`\${err.address}:\${err.port ?? 0}\`; }
export { port, nodelay, n, bytes, refused };
`;

/** Runs the checks in `project` (iolab installed there) with `node`; returns [name, ok, detail]
 * for each. `run(file, args, options)` is the package test's: { status, out }. */
export async function checks({ root, project, node, run, check }) {
  const line = Number(run(node, ['-p', 'process.versions.node']).out.trim().split('.')[0]);
  writeFileSync(join(project, 'net.mjs'), program);
  writeFileSync(join(project, 'net-using.mjs'), usingProgram);
  const net = run(node, ['net.mjs']);
  check(`TCP and UDP over IPv4 and IPv6, constants, shmOpen flags, a mapping shared with a worker through its fd${line >= 24 ? ', `using`' : ''}`,
    net.status === 0 && net.out.trim() === 'net ok', net.out);
  writeFileSync(join(project, 'net.cjs'), commonJs);
  const cjs = run(node, ['net.cjs']);
  check("require('iolab') from CommonJS", cjs.status === 0 && cjs.out.trim() === 'require ok', cjs.out);
  writeFileSync(join(project, 'net.ts'), typed);
  writeFileSync(join(project, 'tsconfig.net.json'), JSON.stringify({ compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', strict: true, noEmit: true, types: [] }, files: ['net.ts'] }));
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  const types = run(process.execPath, [tsc, '-p', join(project, 'tsconfig.net.json')]);
  check('the networking and mapping types typecheck (wrong ones refused)', types.status === 0, types.out);
}
