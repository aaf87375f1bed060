// The iolab program: registers the commands (loading only the one that runs), parses, prints
// errors. No logic lives here.
import { Command, CommanderError } from 'commander';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchGroup, describeError, oneLineErrors, UserError } from './cli-util.js';
import { checkGivenPaths } from './run-files.js';
import { noteRawArguments } from './argv-text.js';
import { prepareOutputs } from './write-target.js';
// Read when the module loads, not per command: a command may run after the process dropped to
// a uid that cannot read the checkout (the tests' other-user runs do).
const packageVersion: string = (JSON.parse(readFileSync(join(dirname(fileURLToPath(import.meta.url)), '..', 'package.json'), 'utf8')) as { version: string }).version;

/** Every command, each loaded only when it runs (or for the help that lists them all): a
 * command's module pulls in the addon and its subsystem, which `iolab --version` never needs. */
const commands: { name: string; group?: 'bench'; load: () => Promise<Command> }[] = [
  { name: 'readv', load: async () => (await import('./demos/readv.js')).readvCommand() },
  { name: 'writev', load: async () => (await import('./demos/writev.js')).writevCommand() },
  { name: 'fdpass', load: async () => (await import('./demos/fdpass.js')).fdpassCommand() },
  { name: 'shm', load: async () => (await import('./demos/shm.js')).shmCommand() },
  { name: 'handoff', load: async () => (await import('./demos/handoff.js')).handoffCommand() },
  { name: 'echo', load: async () => (await import('./echo/command.js')).echoCommand() },
  { name: 'tour', load: async () => (await import('./demos/tour.js')).tourCommand() },
  { name: 'gen', load: async () => (await import('./bench/gen.js')).genCommand() },
  { name: 'api', group: 'bench', load: async () => (await import('./bench/api.js')).apiCommand() },
  { name: 'iops', group: 'bench', load: async () => (await import('./bench/iops.js')).iopsCommand() },
  { name: 'latency', group: 'bench', load: async () => (await import('./bench/latency.js')).latencyCommand() },
  { name: 'echo', group: 'bench', load: async () => (await import('./bench/echo.js')).benchEchoCommand() },
  { name: 'http', group: 'bench', load: async () => (await import('./bench/http.js')).benchHttpCommand() },
  { name: 'ipc', group: 'bench', load: async () => (await import('./ipc/command.js')).ipcCommand() },
  { name: 'trace', load: async () => (await import('./trace/command.js')).traceCommand(buildProgram) },
  { name: 'report', load: async () => (await import('./report/command.js')).reportCommand() },
];

/** The words of args that name a command: [command, subcommand of bench] (`help X` names X). */
function commandWords(args: readonly string[]): string[] {
  const words = args.filter((a) => !a.startsWith('-'));
  return words[0] === 'help' ? words.slice(1, 3) : words.slice(0, 2);
}

/** The commands args can run: the one it names, none for a bare --version, else all (help,
 * and a word that names no command, for commander's "unknown command" and its suggestion). */
function commandsFor(args: readonly string[]): typeof commands {
  const [first, second] = commandWords(args);
  if (first === undefined && (args.includes('-V') || args.includes('--version'))) return [];
  const named = first === 'bench'
    ? commands.filter((c) => c.group === 'bench' && c.name === second)
    : commands.filter((c) => c.group === undefined && c.name === first);
  return named.length > 0 ? named : first === 'bench' ? commands.filter((c) => c.group === 'bench') : commands;
}

/** The program for args (process.argv without node and the script), with the commands it needs. */
export async function buildProgram(args: readonly string[] = []): Promise<Command> {
  const program = new Command('iolab')
    .description('Shows, tests and measures Linux I/O primitives: readv/writev, fd passing, shared memory, io_uring')
    .version(packageVersion, '-V, --version', 'print the version of iolab');
  for (const entry of commandsFor(args)) {
    const command = await entry.load();
    (entry.group === 'bench' ? benchGroup(program) : program).addCommand(command);
  }
  // Every path a command was given is checked before its action: nothing of the user's is
  // written unless the command's mark and flags allow it, and no run writes a file it reads.
  program.hook('preAction', async (_program, command) => {
    checkGivenPaths(command);
    await prepareOutputs();
  });
  // Usage errors of every command, however deep, read like all other errors: one `iolab:` line.
  oneLineErrors(program);
  return program;
}

/** Runs iolab with argv (process.argv's shape); errors become one `iolab:` line and an exit code.
 * program: one buildProgram made for these arguments beforehand (loaded before a uid drop). */
export async function runIolab(argv: string[], program?: Command): Promise<void> {
  if (argv === process.argv) noteRawArguments(argv.slice(2));
  // `help bench iops` is `bench iops --help`: commander's help command looks at one word only
  const rest = argv.slice(2);
  if (rest[0] === 'help' && rest.length > 2 && rest.every((w) => !w.startsWith('-'))) argv = [...argv.slice(0, 2), ...rest.slice(1), '--help'];
  try {
    await (program ?? await buildProgram(argv.slice(2))).parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      // commander already printed its message (or the help text).
      process.exitCode = err.exitCode;
    } else {
      process.stderr.write(`iolab: ${describeError(err)}\n`);
      if (process.env.IOLAB_DEBUG && err instanceof Error) process.stderr.write(`${err.stack}\n`);
      process.exitCode = err instanceof UserError ? err.exitCode : 1;
    }
  }
}
