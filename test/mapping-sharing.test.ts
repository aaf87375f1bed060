// A mapping's life and its sharing with worker threads, through the public API as compiled into
// dist/ (what the package ships), on Node 20 and Node 24: a worker handed the fd maps the same
// pages (its writes are seen, and it sees ours), while postMessage of the ArrayBuffer itself
// copies it (Node 20) or refuses to (DataCloneError, Node 22 on), as docs/api.md says; and
// `using` unmaps a mapping at the end of its scope (Node 24), as Symbol.dispose does on every line.
import { describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { close, ftruncate, liveObjects, memfdCreate, mmap, munmap } from '../src/index.js';
import { projectRoot } from '../src/native.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';

const tmp = shortTempDir('iolab-mapshare-');
checkLeaksAfterAll(tmp);

/** The public API as the package ships it: dist/index.js (compiled by the tests' global setup). */
const iolab = pathToFileURL(join(projectRoot, 'dist', 'index.js')).href;

/** A program run by each Node line: maps a memfd, hands the fd to a worker that maps it too,
 * then tries postMessage(mapping, [mapping]); prints what each side saw as JSON. */
const program = `
import { Worker } from 'node:worker_threads';
import { once } from 'node:events';
const { memfdCreate, ftruncate, mmap, close, liveObjects } = await import(process.argv[2]);

const fd = memfdCreate('shared-with-a-worker');
ftruncate(fd, 4096);
const mapping = mmap(fd, 4096, { write: true });

// the documented way: the worker gets the fd (fds are the process's) and maps it itself
const worker = new Worker(\`
  const { parentPort, workerData } = require('node:worker_threads');
  import(workerData.iolab).then(({ mmap }) => {
    const mine = mmap(workerData.fd, 4096, { write: true });
    Buffer.from(mine).write('from the worker');
    parentPort.once('message', () => {
      parentPort.postMessage(Buffer.from(mine).toString('utf8', 16, 29));
      mine[Symbol.dispose]();
    });
    parentPort.postMessage('written');
  });
\`, { eval: true, workerData: { iolab: process.argv[2], fd } });
const exited = once(worker, 'exit');
await once(worker, 'message');
const seenHere = Buffer.from(mapping).toString('utf8', 0, 15);
Buffer.from(mapping).write('from the main', 16);
worker.postMessage('your turn');
const [seenThere] = await once(worker, 'message');
await exited;

// the way that does not share: the ArrayBuffer itself to a worker that writes into it
const other = new Worker(\`
  const { parentPort } = require('node:worker_threads');
  parentPort.once('message', (got) => { new Uint8Array(got)[0] = 88; parentPort.postMessage('done'); });
\`, { eval: true });
const otherExited = once(other, 'exit');
let transfer;
try {
  other.postMessage(mapping, [mapping]);
  await once(other, 'message');
  transfer = new Uint8Array(mapping)[0] === 88 ? 'shared' : 'copied';
} catch (err) {
  transfer = err.name;
}
await other.terminate();
await otherExited;

mapping[Symbol.dispose]();
close(fd);
console.log(JSON.stringify({ seenHere, seenThere, transfer, mappings: liveObjects().mappings }));
`;

/** \`using\` itself, which Node 24 parses (Node 20 does not). */
const usingProgram = `
const { memfdCreate, ftruncate, mmap, close, liveObjects } = await import(process.argv[2]);
const fd = memfdCreate('disposed');
ftruncate(fd, 4096);
let inside;
{
  using mapping = mmap(fd, 4096);
  inside = [mapping.byteLength, liveObjects().mappings];
}
close(fd);
console.log(JSON.stringify({ inside, after: liveObjects().mappings }));
`;

function nodeOfLine(line: number): string {
  const bin = execFileSync(process.execPath, [join(projectRoot, 'scripts', 'node-lines.mjs'), String(line)], { encoding: 'utf8' }).trim();
  return join(bin, 'node');
}

function run(node: string, code: string, name: string): unknown {
  const file = join(tmp.path, name);
  writeFileSync(file, code);
  const r = spawnSync(node, [file, iolab], { encoding: 'utf8', timeout: 60_000 });
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  return JSON.parse(r.stdout);
}

describe('a mapping shared with a worker thread', () => {
  it.each([20, 24])('Node %i: the worker handed the fd maps the same pages; postMessage of the buffer does not share it', (line) => {
    const node = line === Number(process.versions.node.split('.')[0]) ? process.execPath : nodeOfLine(line);
    expect(run(node, program, `share-${line}.mjs`)).toEqual({
      seenHere: 'from the worker',
      seenThere: 'from the main',
      transfer: line < 22 ? 'copied' : 'DataCloneError',
      mappings: 0,
    });
  });
});

describe('disposing of a mapping', () => {
  it('Symbol.dispose unmaps it, and does nothing once it is unmapped', () => {
    const fd = memfdCreate('dispose');
    try {
      ftruncate(fd, 8192);
      const before = liveObjects().mappings;
      const a = mmap(fd, 8192);
      expect(liveObjects().mappings).toBe(before + 1);
      a[Symbol.dispose]();
      expect(a.byteLength).toBe(0);
      expect(liveObjects().mappings).toBe(before);
      a[Symbol.dispose]();
      const b = mmap(fd, 4096, { write: true });
      munmap(b);
      b[Symbol.dispose]();
      expect(liveObjects().mappings).toBe(before);
      expect(() => munmap(b)).toThrow('The buffer was already unmapped (it is detached)');
    } finally {
      close(fd);
    }
  });

  it('Node 24: `using` unmaps it at the end of the block', () => {
    expect(run(nodeOfLine(24), usingProgram, 'using.mjs')).toEqual({ inside: [4096, 1], after: 0 });
  });
});
