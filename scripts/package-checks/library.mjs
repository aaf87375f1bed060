// The library as a user imports it: README's example as written, a plain .mjs that reads with
// ring.readv and passes an fd with sendmsg/recvmsg, and a .ts typechecked by tsc against the
// installed types.
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** README's library example: its first ```js block that imports from 'iolab'. */
function readmeExample(readmeFile) {
  return /```js\n([\s\S]*?from 'iolab'[\s\S]*?)```/.exec(readFileSync(readmeFile, 'utf8'))?.[1];
}

/** What the example's comments say it prints: the comment of each console.log line, which
 * begins with the printed text ('// 5 1: a new fd, same file' for '5 1'). */
function claimedOutput(example) {
  return example.split('\n').filter((l) => /^\s*console\.log\(.*\/\/ /.test(l)).map((l) => l.slice(l.lastIndexOf('// ') + 3));
}

/** A comment says a printed line when it is that line, or that line and then ': ...' or ' (...'. */
const says = (comment, line) => line !== '' && (comment === line || (comment.startsWith(line) && /^(: | \()/.test(comment.slice(line.length))));

export async function checkTarball({ root, check }) {
  check("README has a library example importing from 'iolab'", readmeExample(join(root, 'README.md')) !== undefined);
}

const consumerMjs = `
import { Ring, RingClosedError, readvSync, writevSync, sendmsg, recvmsg, socketpair, close, memfdCreate, constants } from 'iolab';
import { openSync, closeSync, readFileSync } from 'node:fs';
const fd = openSync('readv.c', 'r');
const ring = new Ring({ entries: 8 });
const buf = new Uint8Array(64);
const n = await ring.readv(fd, [buf], 0);
if (n !== 64 || Buffer.from(buf).toString() !== readFileSync('readv.c', 'utf8').slice(0, 64)) throw new Error('ring.readv read ' + n);
const [a, b] = socketpair('seqpacket');
sendmsg(a, [Buffer.from('fd')], { fds: [fd] });
const got = recvmsg(b, [Buffer.alloc(8)], { maxFds: 1 });
if (got.bytesRead !== 2 || got.fds.length !== 1) throw new Error('recvmsg: ' + JSON.stringify(got));
const again = new Uint8Array(8);
if (readvSync(got.fds[0], [again], 0) !== 8) throw new Error('the passed fd does not read');
for (const f of [got.fds[0], a, b]) close(f);
closeSync(fd);
await ring.close();
// async methods reject, never throw
const closedError = await ring.nop().then(() => false, (err) => err instanceof RingClosedError);
if (!closedError) throw new Error('a closed Ring did not reject with RingClosedError');
if (typeof writevSync !== 'function' || typeof memfdCreate !== 'function' || constants.SCM_MAX_FD !== 253) throw new Error('exports');
console.log('consumer ok');
`;

const consumerTs = `
import { Ring, readvSync, recvmsg, socketpair, type RecvResult, type RingFeatures } from 'iolab';
const ring: Ring = new Ring({ entries: 8 });
const features: RingFeatures = ring.features;
const bytes: Promise<number> = ring.readv(0, [new Uint8Array(4)], 0);
const [a]: [number, number] = socketpair('stream');
const r: RecvResult = recvmsg(a, [new Uint8Array(1)], { maxFds: 1 });
// @ts-expect-error readv takes a list of buffers, not one
readvSync(0, new Uint8Array(4));
export { features, bytes, r };
`;

export async function checks({ root, project, node, run, check }) {
  // first, while the project holds nothing but package.json and node_modules
  const example = readmeExample(join(project, 'node_modules', 'iolab', 'README.md')) ?? '';
  writeFileSync(join(project, 'readme-example.mjs'), example);
  const ex = run(node, ['readme-example.mjs']);
  const claimed = claimedOutput(example);
  const printed = ex.stdout.split('\n').slice(0, -1);
  check("README's library example runs as written in an empty project and prints what its comments say",
    ex.status === 0 && ex.stderr === '' && claimed.length > 0 && printed.length === claimed.length && printed.every((p, i) => says(claimed[i], p)),
    `printed ${JSON.stringify(printed)}, the comments say ${JSON.stringify(claimed)}\n${ex.stderr}`);
  copyFileSync(join(root, 'readv.c'), join(project, 'readv.c'));
  writeFileSync(join(project, 'consumer.mjs'), consumerMjs);
  const mjs = run(node, ['consumer.mjs']);
  check('a plain .mjs reads with ring.readv and passes an fd with sendmsg/recvmsg', mjs.status === 0 && mjs.out.includes('consumer ok'), mjs.out);
  writeFileSync(join(project, 'consumer.ts'), consumerTs);
  writeFileSync(join(project, 'tsconfig.json'), JSON.stringify({ compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', strict: true, noEmit: true, types: [] }, files: ['consumer.ts'] }));
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  const types = run(process.execPath, [tsc, '-p', project]);
  check('a .ts typechecks against the installed types', types.status === 0, types.out);
}
