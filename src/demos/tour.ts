// `iolab tour`: every demo end to end, each command a separate process of this CLI run in a
// temp folder, printed step by step as a transcript a user can replay. The demos that have a
// `--io-uring` variant run again with it. Removes everything it created.
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { removeDeadToursLeftovers, tourFolderPrefix, tourShmName } from './tour-leftovers.js';
import { join } from 'node:path';
import { Command } from 'commander';
import { native, projectRoot } from '../native.js';
import { oneLineErrors, printJson, UserError } from '../cli-util.js';
import { Ring, isIoUringUnavailable } from '../ring/index.js';
import { iolabArgv } from '../spawn-iolab.js';
import { plural } from '../numbers.js';
import { InterruptedError, withInterrupts } from './common.js';
import { showBytes } from '../show-bytes.js';
import { interruptedBy } from '../interrupt.js';

const commandTimeoutMs = 30_000;
/** Steps that may run at once (their transcripts still print in order). */
const stepsAtOnce = 3;

export interface CommandRun {
  argv: string[];
  /** The exit status the tour expects (non-zero where a demo shows a refusal). */
  expectedExit: number;
  /** Started in the background (a receiver) and waited for after its partner ran. */
  background?: boolean;
  exitCode: number | null;
  stdout: string;
  stderr: string;
}

export interface TourStep {
  title: string;
  commands: CommandRun[];
  /** Checks the tour made after the commands (e.g. "nothing left in /dev/shm"). */
  notes: string[];
}

interface TourContext {
  /** The folder the step's commands run in. */
  dir: string;
  /** ['--io-uring'] for the io_uring variant of a demo, else []. */
  variantArgs: string[];
  /** Every child the tour started and has not seen exit (a signal to the tour stops them). */
  running: Set<ChildProcess>;
  /** Aborts on Ctrl-C/SIGTERM: a command started after that is stopped at once. */
  signal: AbortSignal;
}

/** One demo of the tour: runs its commands in ctx.dir and returns what they showed. */
interface TourDemo {
  title: string;
  /** True when the demo's commands take --io-uring: the tour runs them a second time with it. */
  hasIoUringVariant: boolean;
  run(ctx: TourContext): Promise<Omit<TourStep, 'title'>>;
}

/** Starts `iolab ...argv` as a child process in dir; `onLine` sees stdout lines as they come. */
function startIolabChild(ctx: TourContext, argv: string[], options: { expectedExit?: number; onLine?: (line: string) => void } = {}):
  { done: Promise<CommandRun>; kill: () => void; pid: number | undefined } {
  const [file, args] = iolabArgv(argv);
  const child = spawn(file, args, { cwd: ctx.dir, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let partial = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    const lines = (partial + chunk).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) options.onLine?.(line);
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk; });
  ctx.running.add(child);
  if (ctx.signal.aborted) child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGTERM'), commandTimeoutMs);
  const done = new Promise<CommandRun>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, sig) => {
      ctx.running.delete(child);
      clearTimeout(timer);
      resolve({ argv, expectedExit: options.expectedExit ?? 0, exitCode: code ?? (sig ? 128 : null), stdout, stderr });
    });
  });
  return { done, kill: () => child.kill('SIGTERM'), pid: child.pid };
}

/** Runs the commands one after the other, stopping at the first that does not exit as expected. */
async function runAll(ctx: TourContext, list: { argv: string[]; expectedExit?: number }[]): Promise<CommandRun[]> {
  const runs: CommandRun[] = [];
  for (const { argv, expectedExit } of list) {
    const run = await startIolabChild(ctx, argv, { expectedExit }).done;
    runs.push(run);
    if (run.exitCode !== run.expectedExit) break;
  }
  return runs;
}

const readvDemo: TourDemo = {
  title: 'readv: one readv(2) scatters the start of readv.c into buffers of 32, 64 and 128 bytes',
  hasIoUringVariant: true,
  async run(ctx) {
    copyFileSync(join(projectRoot, 'readv.c'), join(ctx.dir, 'readv.c'));
    return { commands: await runAll(ctx, [{ argv: ['readv', 'readv.c', ...ctx.variantArgs] }]), notes: [] };
  },
};

const writevDemo: TourDemo = {
  title: 'writev: one writev(2) gathers three pieces into a new file; readv reads them back',
  hasIoUringVariant: true,
  async run(ctx) {
    const commands = await runAll(ctx, [
      { argv: ['writev', 'notes.txt', 'gathered ', 'by one ', 'writev call', '--newline', ...ctx.variantArgs] },
      { argv: ['readv', 'notes.txt', '--sizes', '9,7,12', ...ctx.variantArgs] },
      // An existing file is never overwritten without --force: this one must fail.
      { argv: ['writev', 'notes.txt', 'overwritten?', ...ctx.variantArgs], expectedExit: 1 },
    ]);
    const notes = commands.length === 3 ? [`notes.txt still holds: ${showBytes(readFileSync(join(ctx.dir, 'notes.txt')))}`] : [];
    return { commands, notes };
  },
};

const shmDemo: TourDemo = {
  title: 'shm: one process writes a POSIX shared-memory object with pwrite, another reads it with pread',
  hasIoUringVariant: true,
  async run(ctx) {
    const name = tourShmName(ctx.variantArgs.length > 0);
    try {
      const commands = await runAll(ctx, [
        { argv: ['shm', 'write', name, 'written by one process, read by another', ...ctx.variantArgs] },
        { argv: ['shm', 'read', name, ...ctx.variantArgs] },
        { argv: ['shm', 'unlink', name] },
      ]);
      return { commands, notes: [] };
    } finally {
      try { native.shmUnlink(name); } catch { /* unlinked by the demo, as it should be */ }
    }
  },
};

function fdpassDemo(type: 'dgram' | 'stream', object: 'shm' | 'memfd'): TourDemo {
  const what = object === 'shm' ? 'the fd of a shared-memory object (read with pread)' : 'the fd of a sealed memfd (mapped)';
  return {
    title: `fdpass (${type}): a sender process passes ${what} to a receiver over a Unix socket`,
    hasIoUringVariant: true,
    async run(ctx) {
      const socket = `fdpass-${type}.sock`;
      let resolveListening!: () => void;
      const listening = new Promise<void>((resolve) => { resolveListening = resolve; });
      const recvArgv = ['fdpass', 'recv', '--socket', socket, '--type', type, '--timeout', '20', ...ctx.variantArgs];
      const receiver = startIolabChild(ctx, recvArgv, { onLine: (line) => { if (line.startsWith('listening on ')) resolveListening(); } });
      // Send only once the receiver says it is ready; if it dies first, report that instead.
      const early = await Promise.race([listening.then(() => undefined), receiver.done]);
      if (early) return { commands: [{ ...early, background: true }], notes: [] };
      const sendArgv = ['fdpass', 'send', '--socket', socket, '--type', type, '--message', `a ${type} message with an fd`,
        ...(object === 'memfd' ? ['--memfd'] : []), ...ctx.variantArgs];
      const sender = startIolabChild(ctx, sendArgv);
      const sent = await sender.done;
      if (sent.exitCode !== 0) receiver.kill();
      const received = await receiver.done;
      const leftovers = sender.pid === undefined ? [] :
        readdirSync('/dev/shm').filter((f) => f.startsWith(`iolab-fdpass-${sender.pid}-`));
      const left = [socket, `${socket}.lock`].filter((f) => existsSync(join(ctx.dir, f)));
      const notes = [
        ...(object === 'memfd' ? [] : [leftovers.length === 0
          ? 'the sender left nothing in /dev/shm (it unlinked the name right after creating the object)'
          : `the sender left ${leftovers.join(', ')} in /dev/shm`]),
        left.length === 0 ? `the receiver removed ${socket} and its lock file on exit` : `the receiver left ${left.join(', ')} behind`,
      ];
      return { commands: [{ ...received, background: true }, sent], notes };
    },
  };
}

/** The tour's demos, in the order it shows them. */
const tourDemos: TourDemo[] = [readvDemo, writevDemo, shmDemo, fdpassDemo('dgram', 'shm'), fdpassDemo('stream', 'memfd')];

/** Why io_uring cannot be used here (one sentence), or undefined when it can. */
async function ioUringRefusal(): Promise<string | undefined> {
  try {
    await new Ring({ entries: 2 }).close();
    return undefined;
  } catch (err) {
    if (isIoUringUnavailable(err)) return err.message;
    throw err;
  }
}

export interface Tour {
  dir: string;
  steps: TourStep[];
  /** Set when Ctrl-C/SIGTERM stopped the tour: the steps are those that had finished. */
  partial?: boolean;
}

/** The variant's folder inside the tour's folder ('' for the plain variant). */
const ioUringFolder = 'io_uring';

/**
 * Runs every demo, then the --io-uring variants (in the folder's io_uring/ subfolder, so their files
 * start fresh). Up to `stepsAtOnce` steps run at once; `onStep` sees each finished step in order.
 */
export async function runTour(on: { start?: (dir: string) => void; step?: (step: TourStep) => void } = {}): Promise<Tour> {
  removeDeadToursLeftovers();
  const dir = mkdtempSync(tourFolderPrefix());
  on.start?.(dir);
  const steps: TourStep[] = [];
  const running = new Set<ChildProcess>();
  try {
    return await withInterrupts(async (signal) => {
      // Ctrl-C / SIGTERM: stop the demos' processes; each demo then cleans up after itself.
      signal.addEventListener('abort', () => { for (const child of running) child.kill('SIGTERM'); });
      const refusal = await ioUringRefusal();
      if (refusal === undefined) mkdirSync(join(dir, ioUringFolder));
      const plain = tourDemos.map((d) => () => runStep(d, { dir, variantArgs: [], running, signal }));
      const ioUring = refusal !== undefined ? [async () => ({ title: 'the --io-uring variants', commands: [], notes: [`skipped: ${refusal}`] })]
        : tourDemos.filter((d) => d.hasIoUringVariant).map((d) => () =>
          runStep(d, { dir: join(dir, ioUringFolder), variantArgs: ['--io-uring'], running, signal }));
      await runInOrder([...plain, ...ioUring], signal, (step) => {
        if (signal.aborted) return; // a step the signal cut short is not shown
        steps.push(step);
        on.step?.(step);
      });
      return signal.aborted ? { dir, steps, partial: true } : { dir, steps };
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function runStep(demo: TourDemo, ctx: TourContext): Promise<TourStep> {
  const suffix = ctx.variantArgs.length > 0 ? ' [--uring: the same calls through io_uring]' : '';
  return { title: demo.title + suffix, ...(await demo.run(ctx)) };
}

/** Starts the tasks in order, at most stepsAtOnce at a time; hands each result on in order.
 * Once `signal` aborts, no further task starts. */
async function runInOrder<T>(tasks: (() => Promise<T>)[], signal: AbortSignal, onResult: (result: T) => void): Promise<void> {
  const started: Promise<T>[] = [];
  const startNext = () => {
    if (started.length < tasks.length && !signal.aborted) started.push(tasks[started.length]());
  };
  for (let i = 0; i < stepsAtOnce; i++) startNext();
  for (let i = 0; i < started.length; i++) {
    const result = await started[i];
    startNext();
    onResult(result);
  }
}

/** `iolab a 'b c'` as a shell would need it typed. */
export function shellLine(argv: string[]): string {
  return ['iolab', ...argv].map((a) => (/^[\w./,=:@%+-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ');
}

function indent(text: string): string[] {
  return text === '' ? [] : text.replace(/\n$/, '').split('\n');
}

function exitLine(c: CommandRun): string[] {
  return c.exitCode === 0 ? [] : [`(exit status ${c.exitCode}${c.exitCode === c.expectedExit ? ', as expected' : ''})`];
}

export function tourHeader(dir: string): string {
  return `iolab tour: each demo run as separate processes in a temp folder (${dir}; the --io-uring variants in its ${ioUringFolder}/ folder)`;
}

export function formatStep(step: TourStep): string[] {
  const lines = ['', `== ${step.title}`];
  const background = step.commands.filter((c) => c.background);
  for (const c of background) lines.push(`$ ${shellLine(c.argv)} &`);
  for (const c of step.commands.filter((c) => !c.background)) {
    lines.push(`$ ${shellLine(c.argv)}`, ...indent(c.stdout), ...indent(c.stderr), ...exitLine(c));
  }
  for (const c of background) {
    lines.push(`(output of the background ${c.argv.slice(0, 2).join(' ')})`, ...indent(c.stdout), ...indent(c.stderr), ...exitLine(c));
  }
  for (const note of step.notes) lines.push(`# ${note}`);
  return lines;
}

function failedCommands(steps: TourStep[]): CommandRun[] {
  return steps.flatMap((s) => s.commands).filter((c) => c.exitCode !== c.expectedExit);
}

export function tourVerdict(tour: Tour): string {
  const failed = failedCommands(tour.steps).length;
  const demos = tour.steps.filter((s) => s.commands.length > 0).length;
  const commands = tour.steps.reduce((n, s) => n + s.commands.length, 0);
  if (tour.partial) return `tour interrupted (partial): ${plural(demos, 'demo')}, ${plural(commands, 'command')} finished, temp folder removed`;
  return failed === 0
    ? `tour done: ${plural(demos, 'demo')}, ${plural(commands, 'command')}, temp folder removed`
    : `tour FAILED: ${failed} of ${plural(commands, 'command')} did not exit as expected`;
}

export function tourCommand(): Command {
  return oneLineErrors(new Command('tour')
    .description('run every demo end to end (each command a separate process), plain and --io-uring, and show what each printed')
    .option('--json', 'print the whole transcript as one JSON object at the end')
    .action(async (opts: { json?: boolean }) => {
      const print = (lines: string[]) => { if (!opts.json) process.stdout.write(lines.join('\n') + '\n'); };
      const tour = await runTour({ start: (dir) => print([tourHeader(dir)]), step: (step) => print(formatStep(step)) });
      const failed = failedCommands(tour.steps);
      if (opts.json) printJson({ ...tour, ok: failed.length === 0 && !tour.partial });
      else print(['', tourVerdict(tour)]);
      if (tour.partial) throw new InterruptedError(interruptedBy() ?? 'SIGINT');
      if (failed.length > 0) throw new UserError(`tour: ${failed.map((c) => shellLine(c.argv)).join('; ')} failed`);
    }));
}
