// `iolab fdpass recv|send`: pass an open shared-memory fd from one process to another over a
// Unix-domain socket (sendmsg/recvmsg with SCM_RIGHTS). The sender writes a message into a new
// shm object, sends the fd with the message text and unlinks the name; the receiver maps the fd
// it got and shows that the object holds the same text. Only the fd made the trip: the object
// no longer has a name by the time the receiver reads it.
import { Command, Option } from 'commander';
import { oneLineErrors, printJson } from '../cli-util.js';
import { defaultSocketPath, type FdpassType } from './fdpass-common.js';
import { formatReceiverEvent, runReceiver } from './fdpass-receiver.js';
import { defaultMessage, defaultShmSize, formatSend, runSender } from './fdpass-sender.js';
import { uringOption, withDemoIo } from './io.js';
import { durationOption, numberOption } from '../numbers.js';

const typeOption = () => new Option('--type <type>', 'socket type').choices(['dgram', 'stream']).default('dgram');
const socketHelp = () => `socket path (default: ${defaultSocketPath()})`;

export function fdpassCommand(): Command {
  const fdpass = new Command('fdpass')
    .description('pass a shared-memory fd between two processes over a Unix socket (SCM_RIGHTS)')
    .addHelpText('after', `
Run the receiver in one terminal and the sender in another:
  $ iolab fdpass recv
  listening on ${defaultSocketPath()}
  $ iolab fdpass send
  sent to ${defaultSocketPath()}: ${defaultMessage} (with the fd of a 4096-byte shared-memory object)
and the receiver prints:
  message 1 carried: ${defaultMessage}
  message 1 shm fd:  ${defaultMessage} (mapped the passed fd: a 4096-byte shared-memory object)`);

  fdpass.command('recv')
    .description('bind a Unix socket, receive messages with a shared-memory fd, map each fd and print its text')
    .option('--socket <path>', socketHelp())
    .addOption(typeOption())
    .option('--count <n>', 'messages to receive before exiting', numberOption({ min: 1 }), 1)
    .option('--timeout <time>', 'give up (exit 1) when a message does not come within this time: 10, 500ms, 2s (default: wait forever)', durationOption())
    .option('--allow-any-user', 'accept senders of any uid (default: only this user\'s)')
    .option('--json', 'print one JSON object per event')
    .addOption(uringOption('accept/recvmsg (IORING_OP_ACCEPT/RECVMSG)'))
    .addHelpText('after', `
A stale socket file at the path is replaced; any other file there is left alone (error).
The socket file is removed on exit, also on Ctrl-C / SIGTERM. Senders of another uid
(SCM_CREDENTIALS on dgram, SO_PEERCRED on stream) are refused with a line on stderr.`)
    .action(async (opts: { socket?: string; type: FdpassType; count: number; timeout?: number; allowAnyUser?: boolean; json?: boolean; uring?: boolean }) => {
      await withDemoIo(opts.uring, (io) => runReceiver({
        socket: opts.socket ?? defaultSocketPath(),
        type: opts.type,
        count: opts.count,
        timeout: opts.timeout,
        allowAnyUser: opts.allowAnyUser ?? false,
      }, (e) => {
        if (opts.json) {
          printJson(e);
        } else if (e.event === 'refused') {
          process.stderr.write(`iolab: refused a message from uid ${e.uid} (pid ${e.pid}): not this user; ` +
            'run the receiver with --allow-any-user to accept it\n');
        } else {
          process.stdout.write(formatReceiverEvent(e).join('\n') + '\n');
        }
      }, io));
    });

  fdpass.command('send')
    .description('write a message into a new shared-memory object and send its fd to the receiver')
    .option('--socket <path>', socketHelp())
    .addOption(typeOption())
    .option('--message <text>', 'text to send', defaultMessage)
    .option('--size <bytes>', 'size of the shared-memory object', numberOption({ min: 1, size: true }), defaultShmSize)
    .option('--json', 'print the result as one JSON object')
    .addOption(uringOption('sendmsg (IORING_OP_SENDMSG)'))
    .action(async (opts: { socket?: string; type: FdpassType; message: string; size: number; json?: boolean; uring?: boolean }) => {
      const options = { socket: opts.socket ?? defaultSocketPath(), type: opts.type, message: opts.message, size: opts.size };
      const result = await withDemoIo(opts.uring, (io) => runSender(options, io));
      if (opts.json) printJson(result);
      else process.stdout.write(formatSend(result).join('\n') + '\n');
    });

  return oneLineErrors(fdpass);
}
