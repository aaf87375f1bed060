// bench api's read group: 4 KiB random reads from a page-cached file through iolab.readvSync and
// fs.readvSync (sync), and ring.readv, fs.promises.readv and callback fs.read at 1 and 32 in
// flight; ring.readvBatch: 32 reads per call, one Promise for the 32.
import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { native } from '../native.js';
import type { Ring } from '../ring/index.js';
import { UserError } from '../cli-util.js';
import { errnoText } from '../user-error.js';
import { checkFreeSpace } from '../free-space.js';
import { runFolderPrefix } from '../leftovers.js';
import { formatBytes } from '../format.js';
import { readInputFile } from '../input-file.js';
import { promiseLoop, syncLoop, type Contender, type Measured } from './api-loops.js';

export const blockSize = 4096;

function callbackReadLoop(durationMs: number, inflight: number, fd: number, buffers: Buffer[],
  offsets: Float64Array): Promise<Measured> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const end = start + durationMs;
    const mask = offsets.length - 1;
    let ops = 0;
    let active = inflight;
    let stop = false;
    const issue = (slot: number) => {
      fs.read(fd, buffers[slot], 0, blockSize, offsets[ops++ & mask], (err) => {
        if (err) {
          stop = true;
          reject(err);
          return;
        }
        if (!stop && (ops & 7) === 0 && performance.now() >= end) stop = true; // every 8th op, as promiseLoop
        if (!stop) issue(slot);
        else if (--active === 0) resolve({ ops, seconds: (performance.now() - start) / 1000 });
      });
    };
    for (let slot = 0; slot < inflight; slot++) issue(slot);
  });
}

/** A file of `size` random bytes (or the user's), read once so it is in the page cache. */
export function prepareFile(options: { file?: string; fileSize: number }): { path: string; blocks: number; cleanup: () => void } {
  if (options.file !== undefined) {
    // read whole once: the checks of any input a user names, and the page cache filled
    const size = readInputFile(options.file, 'a regular file to read').length;
    if (size < blockSize) throw new UserError(`${options.file} is smaller than one 4 KiB block`);
    return { path: options.file, blocks: Math.floor(size / blockSize), cleanup: () => {} };
  }
  // refused before a byte is written: a --size the disk cannot hold would fill it first
  checkFreeSpace(`the temporary test file (--size ${formatBytes(options.fileSize)})`, tmpdir(), options.fileSize);
  const dir = fs.mkdtempSync(runFolderPrefix('iolab-bench-api'));
  const cleanup = () => fs.rmSync(dir, { recursive: true, force: true });
  const path = join(dir, 'data');
  try {
    const chunk = randomBytes(1 << 20);
    const fd = fs.openSync(path, 'w+');
    try {
      for (let done = 0; done < options.fileSize; done += chunk.length) {
        fs.writeSync(fd, chunk, 0, Math.min(chunk.length, options.fileSize - done));
      }
      // read back once, a chunk at a time (a whole-file read stops at 2 GiB): in the page cache
      for (let done = 0; done < options.fileSize; done += chunk.length) fs.readSync(fd, chunk, 0, chunk.length, done);
    } finally {
      fs.closeSync(fd);
    }
  } catch (err) {
    // the folder goes with any failure (a disk that filled up meanwhile, a file size limit)
    cleanup();
    throw new UserError(`cannot write the temporary test file in ${tmpdir()} (${errnoText(err)}); nothing is left there`);
  }
  return { path, blocks: Math.floor(options.fileSize / blockSize), cleanup };
}

export function randomOffsets(blocks: number): Float64Array {
  const offsets = new Float64Array(1 << 16);
  for (let i = 0; i < offsets.length; i++) offsets[i] = Math.floor(Math.random() * blocks) * blockSize;
  return offsets;
}

export function readContenders(fd: number, handle: fs.promises.FileHandle, ring: Ring,
  offsets: Float64Array): Contender[] {
  const mask = offsets.length - 1;
  const slots = 32;
  const buffers = Array.from({ length: slots }, () => Buffer.alloc(blockSize));
  const vectors = buffers.map((b) => [b]);
  const list: Contender[] = [
    { contender: 'iolab.readvSync', inflight: 1, run: async (ms) => syncLoop(ms, (i) => native.readv(fd, vectors[0], offsets[i & mask])) },
    { contender: 'fs.readvSync', inflight: 1, run: async (ms) => syncLoop(ms, (i) => fs.readvSync(fd, vectors[0], offsets[i & mask])) },
  ];
  for (const inflight of [1, 32]) {
    list.push(
      { contender: 'ring.readv', inflight, run: (ms) => promiseLoop(ms, inflight, (s, i) => ring.readv(fd, vectors[s], offsets[i & mask])) },
      { contender: 'fs.promises.readv', inflight, run: (ms) => promiseLoop(ms, inflight, (s, i) => handle.readv(vectors[s], offsets[i & mask])) },
      { contender: 'fs.read', inflight, run: (ms) => callbackReadLoop(ms, inflight, fd, buffers, offsets) },
    );
  }
  list.push({ contender: 'ring.readvBatch', inflight: slots, run: (ms) => batchReadLoop(ms, ring, fd, vectors, offsets) });
  return list;
}

// One readvBatch of vectors.length reads at a time, the next queued once it settles.
async function batchReadLoop(durationMs: number, ring: Ring, fd: number, vectors: Buffer[][],
  offsets: Float64Array): Promise<Measured> {
  const mask = offsets.length - 1;
  const requests = vectors.map((buffers) => ({ buffers, position: 0 }));
  const start = performance.now();
  const end = start + durationMs;
  let ops = 0;
  do {
    for (let s = 0; s < requests.length; s++) requests[s].position = offsets[(ops + s) & mask];
    await ring.readvBatch(fd, requests);
    ops += requests.length;
  } while (performance.now() < end);
  return { ops, seconds: (performance.now() - start) / 1000 };
}
