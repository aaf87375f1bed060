// `iolab handoff`: an http server that restarts with no request lost, as HAProxy, Envoy and
// nginx do: on SIGHUP it starts its successor and passes it the listening socket over a Unix
// socket (sendmsg with SCM_RIGHTS, the fd passing of `iolab fdpass`), then stops accepting and
// drains; the successor listens on the socket it was given (listen({ fd })). The two sides,
// like fdpass's sender and receiver, are handoff-server.ts's handOver() and takeListening().
import { Command, Option } from 'commander';
import { oneLineErrors, printJson } from '../cli-util.js';
import { durationOption, numberOption } from '../numbers.js';
import { runHandoffServer, type HandoffEvent, type HandoffServer } from './handoff-server.js';

const serverNames: Record<HandoffServer, string> = { ring: 'on the Ring (onRing)', node: 'on node:http' };

function formatEvent(e: HandoffEvent): string {
  switch (e.event) {
    case 'serving':
      return e.from
        ? `pid ${e.pid}: serving http://${e.address}:${e.port}/ ${serverNames[e.server]}, on the listening socket pid ${e.from} handed over; kill -HUP ${e.pid} restarts it again`
        : `pid ${e.pid}: serving http://${e.address}:${e.port}/ ${serverNames[e.server]}; kill -HUP ${e.pid} restarts it with no request lost, kill ${e.pid} stops it`;
    case 'handed-over':
      return `pid ${e.pid}: handed the listening socket to pid ${e.to} (SCM_RIGHTS over a Unix socket); stopped accepting, draining ${e.connections} connection(s)`;
    case 'successor-failed':
      return `pid ${e.pid}: the successor${e.successor ? ` (pid ${e.successor})` : ''} did not take over: ${e.reason}; still serving`;
    case 'exited':
      return `pid ${e.pid}: drained after ${e.requests} request(s); exiting`;
    case 'stopped':
      return `pid ${e.pid}: stopped by ${e.signal} after ${e.requests} request(s) (partial)`;
  }
}

export function handoffCommand(): Command {
  const cmd = new Command('handoff')
    .description('an http server that restarts on SIGHUP with no request lost: it passes its listening socket to its successor over a Unix socket (SCM_RIGHTS), then drains')
    .option('--host <address>', 'numeric address to listen on', '127.0.0.1')
    .option('--port <n>', 'port (0: any free one)', numberOption({ min: 0, max: 65535 }), 8080)
    .addOption(new Option('--server <server>', 'ring: node:http on the Ring (onRing); node: node:http as it is').choices(['ring', 'node']).default('ring'))
    .addOption(new Option('--drain <time>', 'once it handed over, when to close the connections still idle: 500ms, 5s (a bare number is seconds)')
      .argParser(durationOption({ wholeMs: true })).default(5000, '5s'))
    .option('--json', 'print one JSON object per event')
    .addOption(new Option('--take-over', 'take the listening socket from fd 3 (how a server starts its successor)').hideHelp())
    .addHelpText('after', `
Each answer says which process gave it. Restart it while a load generator runs:
  $ iolab handoff --port 8080
  pid 4100: serving http://127.0.0.1:8080/ on the Ring (onRing); kill -HUP 4100 restarts it with no request lost, kill 4100 stops it
  $ wrk -c 32 -d 30s http://127.0.0.1:8080/ &
  $ kill -HUP 4100
  pid 4107: serving http://127.0.0.1:8080/ on the Ring (onRing), on the listening socket pid 4100 handed over; kill -HUP 4107 restarts it again
  pid 4100: handed the listening socket to pid 4107 (SCM_RIGHTS over a Unix socket); stopped accepting, draining 32 connection(s)
  pid 4100: drained after 81234 request(s); exiting
On SIGHUP the server starts its successor (iolab handoff --take-over) with one end of a Unix
socket as its fd 3 and sends the listening socket over it (sendmsg, SCM_RIGHTS). The successor
listens on it (listen({ fd })) and says so; then the old server stops accepting (the socket
stays open: the successor accepts every new connection), answers what its connections ask
with "Connection: close", closes the connections still idle after --drain, and exits once the last one
closed. A successor that fails leaves the old server serving, and says why. The successor
outlives the process that started it: stop the newest with kill (Ctrl-C reaches it only while
it shares the terminal). docs/api.md ("More than one process") has the same steps as a recipe.`)
    .action(async (opts: { host: string; port: number; server: HandoffServer; drain: number; json?: boolean; takeOver?: boolean }) => {
      await runHandoffServer({ host: opts.host, port: opts.port, server: opts.server, drainMs: opts.drain, takeOver: opts.takeOver === true, json: opts.json === true },
        (e) => {
          if (opts.json) printJson(e);
          else if (e.event === 'successor-failed') process.stderr.write(`iolab: ${formatEvent(e)}\n`);
          else process.stdout.write(`${formatEvent(e)}\n`);
        });
    });
  return oneLineErrors(cmd);
}
