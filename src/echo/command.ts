// `iolab echo server` (one server on HOST:PORT until SIGINT/SIGTERM) and `iolab echo bench`
// (the load generator, rust_echo_bench's flags and output).
import { Command, Option } from 'commander';
import { oneLineErrors, printJson, UserError } from '../cli-util.js';
import { errnoText } from '../user-error.js';
import { isErrnoException, type EchoServerStats, type EchoUringFeature } from '../native.js';
import { formatAddress, parseAddress, resolveHost } from './address.js';
import { checkOpenFileLimit, formatLoad, generatorModes, lostEveryConnection, noConnection, runLoad, totalErrors, type GeneratorMode, type LoadOptions } from './load.js';
import { interruptedBy, interruption, markInterrupted } from '../interrupt.js';
import { echoServerNames, echoServers, IDLE_TIMEOUT_MAX_MS, startEchoServer, type EchoServerName } from './servers.js';
import { generatorAliases, knownNameOption, optionAlias, serverAliases } from '../aliases.js';
import type { EchoServer } from './types.js';
import { durationOption, numberOption } from '../numbers.js';
import { dieWithParentIfAsked } from '../parent-death.js';

interface ServerOptions {
  server: EchoServerName;
  host: string;
  port: number;
  maxConns?: number;
  /** ms */
  idleTimeout?: number;
  buffers?: number;
  json?: boolean;
}

const uringFeatures: EchoUringFeature[] = ['noSqArray', 'registeredRingFd', 'directDescriptors', 'recvBundle', 'incrementalBuffers'];

/** IOLAB_ECHO_URING_OFF=directDescriptors,noSqArray: features the io_uring server is not to try, as
 * if the kernel refused them. For the tests of each fallback and for A/B runs, not for users. */
function uringFeaturesOff(): EchoUringFeature[] | undefined {
  const raw = process.env.IOLAB_ECHO_URING_OFF;
  if (!raw) return undefined;
  const names = raw.split(',').filter(Boolean);
  const bad = names.find((n) => !uringFeatures.includes(n as EchoUringFeature));
  if (bad !== undefined) throw new UserError(`IOLAB_ECHO_URING_OFF: unknown feature '${bad}' (expected some of ${uringFeatures.join(', ')})`);
  return names as EchoUringFeature[];
}

function serverCommand(): Command {
  const cmd = new Command('server')
    .description('run an echo server until SIGINT/SIGTERM, then print connections served and bytes echoed')
    .addOption(new Option('--server <name>', echoServerNames.map((e) => `${e} (${echoServers[e].summary})`).join(', '))
      .argParser(knownNameOption(echoServerNames, serverAliases, 'server')).default('io_uring'))
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--port <port>', 'port to listen on (0: any free port)', numberOption({ min: 0, max: 65535 }), 9999)
    .option('--max-conns <n>', 'accept at most n connections at once; more are accepted and closed at once', numberOption({ min: 1, max: 2 ** 32 - 1 }))
    .option('--idle-timeout <time>', 'close a connection that moved no byte (in or out) for this long, e.g. 30s or 500ms (a bare number is seconds): peers that went quiet or stopped reading; ' +
      `whole milliseconds from 1ms up to ${IDLE_TIMEOUT_MAX_MS / 1000}s (11.5 days) (default: never)`, durationOption({ wholeMs: true, max: { ms: IDLE_TIMEOUT_MAX_MS, why: '11.5 days: the longest every server takes' } }))
    .option('--buffers <n>', 'io_uring: provided buffers in the shared pool, a power of two up to 32768 (default 4096; small pools are for tests and diagnosis)', numberOption({ min: 1, max: 32768 }))
    .option('--json', 'print JSON lines instead of text')
    .action(async (opts: ServerOptions) => {
      dieWithParentIfAsked(); // started by bench echo: end with it
      // Only the io_uring server has a shared pool: elsewhere the option would silently do nothing.
      if (opts.buffers !== undefined && opts.server !== 'io_uring') {
        throw new UserError(`--buffers sizes the io_uring server's buffer pool (--server io_uring); --server ${opts.server} has none`);
      }
      if (opts.buffers !== undefined && (opts.buffers & (opts.buffers - 1)) !== 0) {
        throw new UserError(`--buffers must be a power of two up to 32768, got ${opts.buffers}`);
      }
      const host = await resolveHost(opts.host);
      let server: EchoServer;
      try {
        server = await startEchoServer(opts.server, {
          host, port: opts.port, maxConns: opts.maxConns, buffers: opts.buffers,
          idleTimeoutMs: opts.idleTimeout, ...(opts.server === 'io_uring' ? { uringFeaturesOff: uringFeaturesOff() } : {}),
        });
      } catch (err) {
        throw explainServerError(err, opts.server, formatAddress(host, opts.port));
      }
      // The handlers go in before `listening` is printed: whoever waits for that line may
      // signal at once. A second signal while stopping does not cut it short (src/interrupt.ts).
      let signal = '';
      interruption().addEventListener('abort', () => {
        signal = interruptedBy() ?? 'SIGINT';
        void server.stop();
      }, { once: true });
      const address = formatAddress(host, server.port);
      if (opts.json) printJson({ event: 'listening', server: opts.server, host, port: server.port });
      else process.stdout.write(`listening on ${address} (server ${opts.server})\n`);
      let stats: EchoServerStats;
      try {
        stats = await server.closed;
      } catch (err) {
        throw explainServerError(err, opts.server);
      }
      if (opts.json) {
        printJson({ event: 'stopped', server: opts.server, signal, ...stats });
      } else {
        const refused = stats.refused ? `, refused ${stats.refused} over --max-conns` : '';
        const idle = stats.idleClosed ? `, closed ${stats.idleClosed} idle` : '';
        process.stdout.write(`setup: ${stats.setup}\n`);
        process.stdout.write(`stopped (${signal}): served ${stats.connections} connections${refused}${idle}, echoed ${stats.bytesEchoed} bytes\n`);
      }
    });
  return optionAlias(cmd, '--engine <name>', '--server');
}

function explainServerError(err: unknown, server: EchoServerName, where = ''): unknown {
  if (isErrnoException(err) && err.syscall === 'io_uring_queue_init' && ['EPERM', 'ENOSYS', 'EACCES'].includes(err.code)) {
    return new UserError(`io_uring is unavailable here (${err.code}); use --server epoll`);
  }
  if (isErrnoException(err) && err.code === 'EADDRINUSE') {
    return new UserError(`cannot listen (server ${server}): ${err.message}`);
  }
  if (isErrnoException(err) && (err.syscall === 'bind' || err.syscall === 'listen')) {
    const hint = err.code === 'EADDRNOTAVAIL' ? ' (--host must be an address of this machine)' : err.code === 'EACCES' ? ' (a port below 1024 needs root)' : '';
    return new UserError(`cannot listen on ${where} (server ${server}): ${errnoText(err)}${hint}`);
  }
  return err;
}

function benchCommand(): Command {
  return new Command('bench')
    .description("load generator with rust_echo_bench's flags and output: each connection sends one message and waits for its whole echo")
    .option('-a, --address <addr>', 'server address HOST:PORT', '127.0.0.1:9999')
    .option('-c, --number <n>', 'number of clients (connections), up to 1000000', numberOption({ min: 1, max: 1_000_000 }), 50)
    .addOption(new Option('-t, --duration <time>', 'time to run: 60, 500ms, 2m (a bare number is seconds), whole milliseconds, up to 1000000s')
      .argParser(durationOption({ wholeMs: true, max: { ms: 1e9, why: '11.5 days' } })).default(60_000, '60s'))
    .option('-l, --length <bytes>', 'message length in bytes', numberOption({ min: 1, size: true }), 512)
    .option('--threads <n>', 'generator threads, 1 to 64', numberOption({ min: 1, max: 64 }), 4)
    .addOption(new Option('--client <kind>', 'epoll: the generator; io_uring: the generator on io_uring; threads: one blocking thread per connection (reference)')
      .argParser(knownNameOption(generatorModes, generatorAliases, 'generator')).default('epoll'))
    .option('--json', 'print one JSON object instead of text')
    .addOption(new Option('--cpu-pid <pid>', 'also measure this process\'s CPU time over the window (serverCpuNs; bench echo --netns passes its server)').argParser(numberOption({ min: 1 })).hideHelp())
    .action(async (opts: { address: string; number: number; duration: number; length: number; threads: number; client: GeneratorMode; json?: boolean; cpuPid?: number }) => {
      dieWithParentIfAsked(); // started by bench echo --netns: end with it
      const parsed = parseAddress(opts.address);
      if (opts.length > 64 * 1024 * 1024) throw new UserError(`--length must be at most 64 MiB, got ${opts.length}`);
      checkOpenFileLimit(opts.number);
      const host = await resolveHost(parsed.host);
      const load: LoadOptions = {
        host, port: parsed.port, clients: opts.number, length: opts.length, durationSec: opts.duration / 1000,
        threads: opts.threads, mode: opts.client, ...(opts.cpuPid !== undefined ? { cpuPid: opts.cpuPid } : {}),
      };
      const result = await runLoad(load, interruption());
      const failed = noConnection(opts.address, result);
      if (failed) throw failed;
      const signal = result.stoppedEarly ? interruptedBy() : undefined;
      const lost = lostEveryConnection(load, result);
      if (opts.json) {
        printJson({
          address: opts.address, clients: opts.number, length: opts.length, duration: opts.duration / 1000, client: opts.client,
          interrupted: signal !== undefined, ...(signal ? { signal } : {}), ...(lost ? { partial: true, lostEveryConnection: true } : {}), ...result,
        });
      } else {
        process.stdout.write(formatLoad(opts.address, load, result, signal));
      }
      if (signal) markInterrupted();
      else if (lost) {
        throw new UserError(`echo bench stopped early: every connection to ${opts.address} was lost after ` +
          `${(result.elapsedNs / 1e9).toFixed(2)} of ${opts.duration / 1000} s (see Errors); the figures ${opts.json ? 'printed' : 'above'} are partial`);
      } else if (totalErrors(result) > 0) process.exitCode = 1;
    });
}

export function echoCommand(): Command {
  return oneLineErrors(
    new Command('echo')
      .description('TCP echo servers (io_uring, epoll, Node, Ring) and a load generator that speaks rust_echo_bench')
      .addCommand(serverCommand())
      .addCommand(benchCommand()),
  );
}
