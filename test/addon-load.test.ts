// Where the addon cannot load, one clear line says why and what to do: another OS, no build and
// no prebuilt addon that fits, and (before a build from source) a missing compiler or header.
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { projectRoot } from '../src/native.js';
import { runCliText } from './support/cli.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';

const tmp = shortTempDir('iolab-load-');
checkLeaksAfterAll(tmp);

describe('loading the addon', () => {
  it('on another OS: one line, it needs Linux', () => {
    const index = pathToFileURL(join(projectRoot, 'src', 'index.ts')).href;
    const tsx = pathToFileURL(join(projectRoot, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href;
    const script = `Object.defineProperty(process, 'platform', { value: 'darwin' });
try { await import('${index}'); } catch (err) { console.log(err.code + ': ' + err.message); }`;
    const r = spawnSync(process.execPath, ['--import', tsx, '--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(r.stdout.trim()).toBe('ERR_IOLAB_PLATFORM: iolab needs Linux (its calls are Linux\'s: io_uring, SCM_RIGHTS, memfd); this is darwin');
  });

  it('with no build and no prebuilt addon that fits: one iolab: line naming how to build it', async () => {
    // node-gyp-build looks in IOLAB_PREBUILD instead of the package folder: an empty folder
    // (and not the sanitized build, which IOLAB_ASAN=1 would load from the checkout)
    const r = await runCliText(['readv', 'readv.c'], { env: { IOLAB_PREBUILD: tmp.path, IOLAB_ASAN: '0' } });
    expect(r.exitCode).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe('iolab: no iolab addon was built and no prebuilt one fits linux-x64; build it from source with: npm rebuild iolab (needs: apt-get install g++ make python3 liburing-dev libaio-dev systemtap-sdt-dev)');
  });

  it('--version needs no addon at all', async () => {
    const r = await runCliText(['--version'], { env: { IOLAB_PREBUILD: tmp.path } });
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('a build from source without a compiler: one line naming the Debian packages', () => {
    const r = spawnSync(process.execPath, [join(projectRoot, 'scripts', 'check-deps.mjs')], { encoding: 'utf8', env: { PATH: tmp.path } });
    expect(r.status).toBe(1);
    expect(r.stderr).toBe('iolab: cannot build the addon (no prebuilt one fits this system): g++, make, python3 (for node-gyp) missing; install with: apt-get install g++ make python3\n');
  });
});
