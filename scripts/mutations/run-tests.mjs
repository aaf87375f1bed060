// What the mutation runners share: the files they change, put back whatever happens (an error,
// Ctrl-C, SIGTERM: then the addon is rebuilt and the process exits 130); the addon's incremental
// build; and one run of test files under a hard time bound, in a session of its own so that a
// hang takes its workers and their children with it.
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export class Changes {
  #originals = new Map();
  #nativeChanged = false;
  #stopping = false;

  constructor(root) {
    this.root = root;
    const stop = () => {
      if (this.#stopping) return;
      this.#stopping = true;
      console.log('\ninterrupted: putting the files back');
      this.restore();
      if (this.#nativeChanged && !buildAddon(root)) console.log('the addon did not build back: run npx node-gyp build');
      process.exit(130);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    process.on('SIGHUP', stop);
    // A crash (its stdout closed under it, as by `| head`: EPIPE) must not leave a mutant in the
    // tree either: put back at exit, where only synchronous work runs, so the addon is not rebuilt
    process.on('exit', () => {
      if (this.#originals.size === 0) return;
      this.restore();
      if (this.#nativeChanged) process.stderr.write('mutations: the files are back; the addon was built from a mutant: run npx node-gyp build\n');
    });
  }

  /** Writes `text` to `file` (relative to the root), keeping the first original. */
  write(file, text) {
    const path = join(this.root, file);
    if (!this.#originals.has(file)) this.#originals.set(file, readFileSync(path, 'utf8'));
    if (file.startsWith('native/')) this.#nativeChanged = true;
    writeFileSync(path, text);
  }

  restore() {
    for (const [file, text] of this.#originals) writeFileSync(join(this.root, file), text);
    this.#originals.clear();
  }

  /** After the last mutant: the originals back and, if native code changed, the addon built from them. */
  finish() {
    this.restore();
    if (this.#nativeChanged) {
      this.#nativeChanged = false;
      if (!buildAddon(this.root)) {
        console.log('the addon did not build back: run npx node-gyp build');
        return false;
      }
    }
    return true;
  }
}

/** The addon's incremental build (only what changed is compiled); whether it built. */
export function buildAddon(root) {
  return spawnSync('npx', ['node-gyp', 'build', '-j', '1'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).status === 0;
}

/**
 * Runs test files with vitest, stopping at the first failure. A run past `timeoutMs` is killed,
 * with everything it started, and counts as a kill (a hang). Resolves { outcome: 'killed' |
 * 'survived' | 'timeout', seconds, note: the first failure's line }.
 */
export function runTests(root, files, { timeoutMs = 300_000, filter, env = {} } = {}) {
  const args = ['npx', 'vitest', 'run', '--bail', '1', ...files, ...(filter ? ['-t', filter] : [])];
  const t0 = Date.now();
  return new Promise((resolve) => {
    const child = spawn('setsid', args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const keep = (d) => { output = (output + String(d)).slice(-200_000); };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ }
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      // whatever the session still runs (a worker's child that outlived it) goes too
      try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ }
      const seconds = (Date.now() - t0) / 1000;
      const clean = output.replace(/\x1b\[[0-9;]*m/g, '');
      const note = timedOut ? `no end in ${timeoutMs / 1000} s`
        : clean.split('\n').find((l) => /^\s*(×|FAIL|AssertionError|Error:)/.test(l))?.trim();
      resolve({ outcome: timedOut ? 'timeout' : code === 0 ? 'survived' : 'killed', seconds, note, output: clean });
    });
  });
}
