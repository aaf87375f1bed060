// The memory-safety net is live: the sanitized build's self-test must kill a child process
// with a heap-buffer-overflow report. On a normal build the entry does not exist.
import { describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { native, projectRoot } from '../src/native.js';
import { zeroLiveObjects, settledLiveObjects } from './support/leaks.js';

describe('sanitizer self-test', () => {
  it.runIf(native.sanitized)('dies with a heap-buffer-overflow report under ASan', async () => {
    const child = await execa(process.execPath, ['--import', 'tsx', '-e',
      "const { native } = await import('./src/native.ts'); native.asanSelfTest(); console.log('survived');"],
    { cwd: projectRoot, reject: false });
    expect(child.stdout).not.toContain('survived');
    expect(child.exitCode).not.toBe(0);
    expect(child.stderr).toContain('ERROR: AddressSanitizer: heap-buffer-overflow');
    expect(child.stderr).toContain('asan_selftest.cc');
  });

  it.skipIf(native.sanitized)('is absent from the normal build', () => {
    expect(native.asanSelfTest).toBeUndefined();
    expect(native.sanitized).toBe(false);
  });
});

describe('liveObjects', () => {
  it('reports every counter, all zero when nothing is held', async () => {
    expect(await settledLiveObjects()).toEqual(zeroLiveObjects);
  });

  it('names errno values', () => {
    expect(native.errnoName(2)).toBe('ENOENT');
    expect(native.errnoName(9999)).toBe('E9999');
  });
});
