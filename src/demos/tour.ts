// `iolab tour`: every demo end to end, each command a separate process of this CLI run in a
// temp folder, printed as a transcript a user can replay. Removes everything it created.
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { native, projectRoot } from '../native.js';
import { oneLineErrors, printJson, UserError } from '../cli-util.js';
import { showBytes, withInterrupts } from './common.js';
import { runTourBothVariants } from './tour-uring.js';
import { iolabArgv } from '../spawn-iolab.js';

const commandTimeoutMs = 30_000;
/** Children still running: a signal to the tour stops them before it cleans up. */
const running = new Set<ChildProcess>();

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

export interface TourContext {
  dir: string;
  /** Extra arguments for every demo command (a variant such as --uring adds itself here). */
  extraArgs: string[];
}

/** One demo pair of the tour: runs its commands in ctx.dir and returns what they showed. */
export interface TourDemo {
  title: string;
  run(ctx: TourContext): Promise<Omit<TourStep, 'title'>>;
}

/** Runs `iolab ...argv` in dir; `onLine` sees stdout lines as they come. */
export function runIolab(argv: string[], dir: string, options: { expectedExit?: number; onLine?: (line: string) => void } = {}):
  { done: Promise<CommandRun>; kill: () => void; pid: number | undefined } {
  const [file, args] = iolabArgv(argv);
  const child = spawn(file, args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
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
  running.add(child);
  const timer = setTimeout(() => child.kill('SIGTERM'), commandTimeoutMs);
  const done = new Promise<CommandRun>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, sig) => {
      running.delete(child);
      clearTimeout(timer);
      resolve({ argv, expectedExit: options.expectedExit ?? 0, exitCode: code ?? (sig ? 128 : null), stdout, stderr });
    });
  });
  return { done, kill: () => child.kill('SIGTERM'), pid: child.pid };
}

/** Runs the commands one after the other, stopping at the first that does not exit as expected. */
async function runAll(dir: string, list: { argv: string[]; expectedExit?: number }[]): Promise<CommandRun[]> {
  const runs: CommandRun[] = [];
  for (const { argv, expectedExit } of list) {
    const run = await runIolab(argv, dir, { expectedExit }).done;
    runs.push(run);
    if (run.exitCode !== run.expectedExit) break;
  }
  return runs;
}

const readvDemo: TourDemo = {
  title: 'readv: one readv(2) scatters the start of readv.c into buffers of 32, 64 and 128 bytes',
  async run(ctx) {
    copyFileSync(join(projectRoot, 'readv.c'), join(ctx.dir, 'readv.c'));
    return { commands: await runAll(ctx.dir, [{ argv: ['readv', 'readv.c', ...ctx.extraArgs] }]), notes: [] };
  },
};

const writevDemo: TourDemo = {
  title: 'writev: one writev(2) gathers three pieces into a new file; readv reads them back',
  async run(ctx) {
    const commands = await runAll(ctx.dir, [
      { argv: ['writev', 'notes.txt', 'gathered ', 'by one ', 'writev call', '--newline', ...ctx.extraArgs] },
      { argv: ['readv', 'notes.txt', '--sizes', '9,7,12', ...ctx.extraArgs] },
      // An existing file is never overwritten without --force: this one must fail.
      { argv: ['writev', 'notes.txt', 'overwritten?', ...ctx.extraArgs], expectedExit: 1 },
    ]);
    const notes = commands.length === 3 ? [`notes.txt still holds: ${showBytes(readFileSync(join(ctx.dir, 'notes.txt')))}`] : [];
    return { commands, notes };
  },
};

const shmDemo: TourDemo = {
  title: 'shm: one process writes a POSIX shared-memory object, another maps it and reads',
  async run(ctx) {
    const variant = ctx.extraArgs.join('').replace(/\W/g, '');
    const name = `/iolab-tour-${process.pid}${variant ? `-${variant}` : ''}`;
    try {
      const commands = await runAll(ctx.dir, [
        { argv: ['shm', 'write', name, 'written by one process, read by another', ...ctx.extraArgs] },
        { argv: ['shm', 'read', name, ...ctx.extraArgs] },
        { argv: ['shm', 'unlink', name] },
      ]);
      return { commands, notes: [] };
    } finally {
      try { native.shmUnlink(name); } catch { /* unlinked by the demo, as it should be */ }
    }
  },
};

function fdpassDemo(type: 'dgram' | 'stream'): TourDemo {
  return {
    title: `fdpass (${type}): a receiver and a sender process pass a shared-memory fd over a Unix socket`,
    async run(ctx) {
      const socket = `fdpass-${type}.sock`;
      let resolveListening!: () => void;
      const listening = new Promise<void>((resolve) => { resolveListening = resolve; });
      const recvArgv = ['fdpass', 'recv', '--socket', socket, '--type', type, '--timeout', '20', ...ctx.extraArgs];
      const receiver = runIolab(recvArgv, ctx.dir, { onLine: (line) => { if (line.startsWith('listening on ')) resolveListening(); } });
      // Send only once the receiver says it is ready; if it dies first, report that instead.
      const early = await Promise.race([listening.then(() => undefined), receiver.done]);
      if (early) return { commands: [{ ...early, background: true }], notes: [] };
      const sendArgv = ['fdpass', 'send', '--socket', socket, '--type', type, '--message', `a ${type} message with an fd`, ...ctx.extraArgs];
      const sender = runIolab(sendArgv, ctx.dir);
      const sent = await sender.done;
      if (sent.exitCode !== 0) receiver.kill();
      const received = await receiver.done;
      const leftovers = sender.pid === undefined ? [] :
        readdirSync('/dev/shm').filter((f) => f.startsWith(`iolab-fdpass-${sender.pid}-`));
      const notes = [
        leftovers.length === 0 ? 'the sender left nothing in /dev/shm (it unlinked the name right after creating the object)'
          : `the sender left ${leftovers.join(', ')} in /dev/shm`,
        existsSync(join(ctx.dir, socket)) ? `the receiver left ${socket} behind` : `the receiver removed ${socket} on exit`,
      ];
      return { commands: [{ ...received, background: true }, sent], notes };
    },
  };
}

/** The tour's demos in order; a variant (e.g. io_uring) can append its own list. */
export const tourDemos: TourDemo[] = [readvDemo, writevDemo, shmDemo, fdpassDemo('dgram'), fdpassDemo('stream')];

export async function runTour(demos: TourDemo[] = tourDemos, extraArgs: string[] = []): Promise<{ dir: string; steps: TourStep[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'iolab-tour-'));
  try {
    return await withInterrupts(async (signal) => {
      // Ctrl-C / SIGTERM: stop the demos' processes, let each demo clean up, then remove the folder.
      signal.addEventListener('abort', () => { for (const child of running) child.kill('SIGTERM'); });
      // The pairs are independent: run them side by side, print them in order.
      const steps = await Promise.all(demos.map(async (d) => ({ title: d.title, ...(await d.run({ dir, extraArgs })) })));
      signal.throwIfAborted();
      return { dir, steps };
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `iolab a 'b c'` as a shell would need it typed. */
export function shellLine(argv: string[]): string {
  return ['iolab', ...argv].map((a) => (/^[\w./,=:@%+-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ');
}

function indent(text: string): string[] {
  return text === '' ? [] : text.replace(/\n$/, '').split('\n');
}

export function formatTour(tour: { dir: string; steps: TourStep[] }): string[] {
  const lines = [`iolab tour: each demo run as separate processes in a temp folder (${tour.dir})`];
  for (const step of tour.steps) {
    lines.push('', `== ${step.title}`);
    const background = step.commands.filter((c) => c.background);
    for (const c of background) lines.push(`$ ${shellLine(c.argv)} &`);
    for (const c of step.commands.filter((c) => !c.background)) {
      lines.push(`$ ${shellLine(c.argv)}`, ...indent(c.stdout), ...indent(c.stderr));
      if (c.exitCode !== 0) lines.push(`(exit status ${c.exitCode}${c.exitCode === c.expectedExit ? ', as expected' : ''})`);
    }
    for (const c of background) {
      lines.push(`(output of the background ${c.argv.slice(0, 2).join(' ')})`, ...indent(c.stdout), ...indent(c.stderr));
      if (c.exitCode !== 0) lines.push(`(exit status ${c.exitCode}${c.exitCode === c.expectedExit ? ', as expected' : ''})`);
    }
    for (const note of step.notes) lines.push(`# ${note}`);
  }
  lines.push('', tourVerdict(tour.steps));
  return lines;
}

function failedCommands(steps: TourStep[]): CommandRun[] {
  return steps.flatMap((s) => s.commands).filter((c) => c.exitCode !== c.expectedExit);
}

function tourVerdict(steps: TourStep[]): string {
  const failed = failedCommands(steps).length;
  const commands = steps.reduce((n, s) => n + s.commands.length, 0);
  return failed === 0
    ? `tour done: ${steps.length} demos, ${commands} commands, temp folder removed`
    : `tour FAILED: ${failed} of ${commands} commands did not exit as expected`;
}

export function tourCommand(): Command {
  return oneLineErrors(new Command('tour')
    .description('run every demo end to end (each command a separate process), plain and --uring, and show what each printed')
    .option('--json', 'print the whole transcript as one JSON object')
    .action(async (opts: { json?: boolean }) => {
      const tour = await runTourBothVariants();
      const failed = failedCommands(tour.steps);
      if (opts.json) printJson({ ...tour, ok: failed.length === 0 });
      else process.stdout.write(formatTour(tour).join('\n') + '\n');
      if (failed.length > 0) throw new UserError(`tour: ${failed.map((c) => shellLine(c.argv)).join('; ')} failed`);
    }));
}
