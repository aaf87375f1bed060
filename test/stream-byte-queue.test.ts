// The stream core's byte queue (native/stream/byte_queue.c), alone: a C program checks it against
// a flat buffer over random sequences of append, a refused append, prepend and consume
// (test/fixtures/byte-queue-check.c), built here with AddressSanitizer and leak detection on, which
// the addon's ASan suite cannot have (V8 is not instrumented): a chunk that free or consume leaves
// behind, or a read past a chunk, fails it.
import { describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { projectRoot } from '../src/native.js';

const runs = Number(process.env.IOLAB_FUZZ_RUNS ?? 300);

describe('the byte queue of the stream core', () => {
  it(`matches a flat buffer over ${runs} random sequences, and frees every chunk (AddressSanitizer, leaks on)`, () => {
    const dir = mkdtempSync(join(tmpdir(), 'iolab-byte-queue-'));
    // (LD_PRELOAD cleared: the ASan suite preloads its libasan into every child, the compiler too)
    const plain = { ...process.env, LD_PRELOAD: '' };
    try {
      const bin = join(dir, 'check');
      execFileSync('cc', ['-O1', '-g', '-fsanitize=address,undefined', '-fno-sanitize-recover=undefined', '-fno-omit-frame-pointer',
        `-I${join(projectRoot, 'native')}`, join(projectRoot, 'test/fixtures/byte-queue-check.c'),
        join(projectRoot, 'native/stream/byte_queue.c'), '-o', bin], { stdio: 'pipe', env: plain });
      const r = spawnSync(bin, [String(runs), '1'], { encoding: 'utf8', env: { ...plain, ASAN_OPTIONS: 'detect_leaks=1:abort_on_error=0' } });
      expect(r.stderr.split('\n').slice(0, 12).join('\n')).toBe('');
      expect(r.stdout).toMatch(/^ok \d+ steps\n$/);
      expect(r.status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
