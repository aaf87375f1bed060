// Runs test cases one at a time in a child process over IPC (the child answers each message
// with one `{ outcome }` message, after a first `{ ready: true }`). When the child dies (a
// SIGSEGV in the addon), the case it was running gets `{ crash: signal and stderr's end }` as
// its outcome, and a new child takes the next case. The Ring's differential and re-entrancy
// tests use it.
import { fork, type ChildProcess } from 'node:child_process';

export type Answer<T> = T | { crash: string };

export class CaseRunner<C extends object, T> {
  #child: ChildProcess | undefined;
  #ready: Promise<void> | undefined;
  #waiting: ((answer: Answer<T>) => void) | undefined;
  /** Children started (1 + the crashes). */
  started = 0;

  /** script: the child's module; execArgv: node's flags for it (--import tsx for a .ts). */
  constructor(readonly script: string, readonly execArgv: string[], readonly env: Record<string, string>) {}

  #start(): Promise<void> {
    this.started++;
    const child = fork(this.script, [], { execArgv: ['--expose-gc', ...this.execArgv], env: { ...process.env, ...this.env }, stdio: ['ignore', 'inherit', 'pipe', 'ipc'] });
    let stderr = '';
    child.stderr!.on('data', (d) => { stderr = (stderr + String(d)).slice(-2000); });
    this.#child = child;
    return new Promise((resolve, reject) => {
      child.on('message', (m: { ready?: boolean; outcome?: T }) => {
        if (m.ready) resolve();
        else if (m.outcome !== undefined) this.#answer(m.outcome);
      });
      child.on('exit', (code, signal) => {
        this.#child = undefined;
        this.#ready = undefined;
        const why = signal ?? `exit ${code}`;
        reject(new Error(`the child ${this.script} exited (${why}) before it was ready: ${stderr}`));
        this.#answer({ crash: `${why}${stderr.trim() === '' ? '' : `: ${stderr.trim().split('\n').slice(-3).join(' | ')}`}` });
      });
    });
  }

  #answer(answer: Answer<T>): void {
    const waiting = this.#waiting;
    this.#waiting = undefined;
    waiting?.(answer);
  }

  /** Runs one case; a crash is its outcome. */
  async run(c: C): Promise<Answer<T>> {
    this.#ready ??= this.#start();
    await this.#ready;
    return new Promise<Answer<T>>((resolve) => {
      this.#waiting = resolve;
      this.#child!.send(c as Parameters<ChildProcess['send']>[0]);
    });
  }

  /** Ends the child (it has no work left), once its pipes are closed too ('close', not 'exit':
   * a test file's fd count is checked right after). */
  async stop(): Promise<void> {
    const child = this.#child;
    if (child === undefined) return;
    const gone = new Promise((r) => child.once('close', r));
    child.kill();
    await gone;
  }
}
