// The stream core's parts alone, each checked by a C program built here with AddressSanitizer and
// leak detection on, which the addon's ASan suite cannot have (V8 is not instrumented):
// - the byte queue (native/stream/byte_queue.c) against a flat buffer over random sequences of
//   append, a refused append, prepend and consume (test/fixtures/byte-queue-check.c): a chunk
//   that free or consume leaves behind, or a read past a chunk, fails it;
// - the send side (native/stream/send.c) against a model, the program playing the kernel
//   (test/fixtures/stream-send-check.c): bytes out in order and none after the sends stopped,
//   each buffer given to send back in the pool once and never while a send reads it.
import { describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { projectRoot } from '../src/native.js';

const runs = Number(process.env.IOLAB_FUZZ_RUNS ?? 300);

/** Builds the check with the stream core's files under AddressSanitizer, runs it over `runs`
 * sequences, and expects "ok N steps". */
function check(fixture: string, sources: string[], libraries: string[] = []): void {
  const dir = mkdtempSync(join(tmpdir(), 'iolab-stream-core-'));
  // (LD_PRELOAD cleared: the ASan suite preloads its libasan into every child, the compiler too)
  const plain = { ...process.env, LD_PRELOAD: '' };
  try {
    const bin = join(dir, 'check');
    execFileSync('cc', ['-O1', '-g', '-fsanitize=address,undefined', '-fno-sanitize-recover=undefined', '-fno-omit-frame-pointer',
      `-I${join(projectRoot, 'native')}`, join(projectRoot, 'test/fixtures', fixture),
      ...sources.map((s) => join(projectRoot, 'native/stream', s)), ...libraries, '-o', bin], { stdio: 'pipe', env: plain });
    const r = spawnSync(bin, [String(runs), '1'], { encoding: 'utf8', env: { ...plain, ASAN_OPTIONS: 'detect_leaks=1:abort_on_error=0' } });
    expect(r.stderr.split('\n').slice(0, 12).join('\n')).toBe('');
    expect(r.stdout).toMatch(/^ok \d+ steps\n$/);
    expect(r.status).toBe(0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('the stream core', () => {
  it(`the byte queue matches a flat buffer over ${runs} random sequences, and frees every chunk (AddressSanitizer, leaks on)`, () => {
    check('byte-queue-check.c', ['byte_queue.c']);
  });

  it(`the send side keeps its model over ${runs} random sequences: bytes in order, none after a stop, every buffer back once and never under a send (AddressSanitizer, leaks on)`, () => {
    check('stream-send-check.c', ['send.c', 'stream.c', 'byte_queue.c'], ['-luring']);
  });
});
