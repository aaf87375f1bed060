// Runs the differential cases one at a time in a child process (child.mjs) over IPC. When the
// child dies (a SIGSEGV in the addon), the case it was running gets the signal as its outcome
// and a new child takes the next case.
import { fork, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Case, Sides } from './cases.js';

const script = join(dirname(fileURLToPath(import.meta.url)), 'child.mjs');

export class CaseRunner {
  #child: ChildProcess | undefined;
  #ready: Promise<void> | undefined;
  #waiting: ((sides: Sides) => void) | undefined;
  /** Children started (1 + the crashes). */
  started = 0;

  constructor(readonly dir: string) {}

  #start(): Promise<void> {
    this.started++;
    const child = fork(script, [], { execArgv: ['--expose-gc'], env: { ...process.env, IOLAB_DIFF_DIR: this.dir }, stdio: ['ignore', 'inherit', 'pipe', 'ipc'] });
    let stderr = '';
    child.stderr!.on('data', (d) => { stderr = (stderr + String(d)).slice(-2000); });
    this.#child = child;
    return new Promise((resolve, reject) => {
      child.on('message', (m: { ready?: boolean; sides?: Sides }) => {
        if (m.ready) resolve();
        else if (m.sides !== undefined) this.#answer(m.sides);
      });
      child.on('exit', (code, signal) => {
        this.#child = undefined;
        this.#ready = undefined;
        const why = signal ?? `exit ${code}`;
        reject(new Error(`the differential child exited (${why}) before it was ready: ${stderr}`));
        this.#answer({ crash: `${why}${stderr.trim() === '' ? '' : `: ${stderr.trim().split('\n').slice(-3).join(' | ')}`}` });
      });
    });
  }

  #answer(sides: Sides): void {
    const waiting = this.#waiting;
    this.#waiting = undefined;
    waiting?.(sides);
  }

  /** Runs one case; a crash is its outcome. */
  async run(c: Case): Promise<Sides> {
    this.#ready ??= this.#start();
    await this.#ready;
    return new Promise<Sides>((resolve) => {
      this.#waiting = resolve;
      this.#child!.send(c);
    });
  }

  /** Ends the child (it has no work left). */
  async stop(): Promise<void> {
    const child = this.#child;
    if (child === undefined) return;
    const gone = new Promise((r) => child.once('exit', r));
    child.kill();
    await gone;
  }
}
