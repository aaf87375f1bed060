// A writer that publishes its last message and closes at once, against a reader that has just
// found the queue empty (native/channel/channel.c's channel_take): between the reader's read of
// the head and its read of the closed flag. Threads meet there once in millions of tries, so a C
// program makes it happen every round (test/fixtures/channel-close-race.c): channel.c is built
// with a hook before each atomic load (test/fixtures/channel-load-hook.h), where the program acts
// as the writer. The reader must hand out the message, then the end.
import { describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { projectRoot } from '../src/native.js';

describe("the channel's reader against a writer that closes right after its last message", () => {
  it('gets the message, then the end, wherever in the queue the message lands (64 rounds, AddressSanitizer)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'iolab-channel-race-'));
    // (LD_PRELOAD cleared: the ASan suite preloads its libasan into every child, the compiler too)
    const plain = { ...process.env, LD_PRELOAD: '' };
    const fixtures = join(projectRoot, 'test/fixtures');
    const flags = ['-O1', '-g', '-fsanitize=address,undefined', '-fno-sanitize-recover=undefined', `-I${join(projectRoot, 'native')}`];
    try {
      execFileSync('cc', [...flags, '-include', join(fixtures, 'channel-load-hook.h'), '-c', join(projectRoot, 'native/channel/channel.c'), '-o', join(dir, 'channel.o')], { stdio: 'pipe', env: plain });
      execFileSync('cc', [...flags, join(fixtures, 'channel-close-race.c'), join(dir, 'channel.o'), '-o', join(dir, 'race')], { stdio: 'pipe', env: plain });
      const r = spawnSync(join(dir, 'race'), ['64'], { encoding: 'utf8', env: { ...plain, ASAN_OPTIONS: 'detect_leaks=1' } });
      expect(r.stderr).toBe('');
      expect(r.stdout).toBe('ok 64 rounds\n');
      expect(r.status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
