// `iolab fdpass recv|send`: pass an open fd from one process to another over a Unix-domain
// socket (sendmsg/recvmsg with SCM_RIGHTS). The sender writes a message into a new shared-memory
// object whose name it unlinks at once (or into a sealed memfd) and sends the fd with the same
// text; the receiver shows what the fd is and the text at its start. Only the fd made the trip:
// the object has no name by the time the receiver reads it.
import { Command, Option } from 'commander';
import { oneLineErrors, printJson } from '../cli-util.js';
import { defaultSocketPath, type FdpassType } from './fdpass-common.js';
import { formatReceiverEvent, runReceiver } from './fdpass-receiver.js';
import { defaultMessage, defaultObjectSize, formatSend, refusalNote, runSender } from './fdpass-sender.js';
import { ioUringOption, keepOldUringFlag, withDemoIo } from './io.js';
import { durationOption, numberOption } from '../numbers.js';
import { pathOption } from '../path-options.js';

const typeOption = () => new Option('--type <type>', 'socket type').choices(['dgram', 'stream']).default('dgram');
const socketHelp = () => `socket path (default: ${defaultSocketPath()})`;

export function fdpassCommand(): Command {
  const fdpass = new Command('fdpass')
    .description('pass a shared-memory fd between two processes over a Unix socket (SCM_RIGHTS)')
    .addHelpText('after', `
Run the receiver in one terminal and the sender in another:
  $ iolab fdpass recv
  listening on ${defaultSocketPath()}
  $ iolab fdpass send --memfd
  sent to ${defaultSocketPath()}: ${defaultMessage} (with the fd of a 4096-byte memfd sealed against shrinking, growing and writing)
and the receiver prints:
  message 1 carried: ${defaultMessage}
  message 1 fd:      regular file, 4096 bytes (/memfd:iolab-fdpass (deleted)), seals F_SEAL_SHRINK|F_SEAL_GROW|F_SEAL_WRITE; mapped 4096 bytes read-only (sealed against shrinking)
  message 1 holds:   ${defaultMessage}
The object holds the text as plain bytes from offset 0, zero-filled to its size, so a C
peer (shm_open, mmap, printf("%s")) reads it too, and the receiver takes an fd from any sender.`);

  fdpass.command('recv')
    .description('bind a Unix socket, receive messages that carry an fd, and show what each fd is and the text at its start')
    .addOption(pathOption('--socket <path>', socketHelp(), { output: true, changedBy: [] }))
    .addOption(typeOption())
    .option('--count <n>', 'messages to receive before exiting', numberOption({ min: 1 }), 1)
    .option('--timeout <time>', 'give up (exit 1) when a message does not come within this time: 500ms, 2s, 1m (a bare number is seconds); whole milliseconds, 1ms or more (default: wait forever)', durationOption({ wholeMs: true }))
    .option('--allow-any-user', 'accept senders of any uid (default: only this user\'s)')
    .option('--json', 'print one JSON object per event')
    .addOption(ioUringOption('accept, recvmsg and pread (IORING_OP_ACCEPT/RECVMSG/READV)'))
    .addHelpText('after', `
A lock file beside the socket (PATH.lock, flock) keeps a second receiver off a path in use;
a stale socket file at the path is replaced; any other file there is left alone (error).
Both files are removed on exit, also on Ctrl-C / SIGTERM. Senders of another uid
(SCM_CREDENTIALS on dgram, SO_PEERCRED on stream) are refused with a line on stderr.
A passed file is mapped (read-only) only when it is sealed against shrinking; any other is
read with pread, so a sender that shrinks it cannot make the receiver die of SIGBUS.`)
    .action(async (opts: { socket?: string; type: FdpassType; count: number; timeout?: number; allowAnyUser?: boolean; json?: boolean; ioUring?: boolean }) => {
      await withDemoIo(opts.ioUring, (io) => runReceiver({
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
    .description('write a message into a new shared-memory object (or a sealed memfd) and send its fd to the receiver')
    .addOption(pathOption('--socket <path>', socketHelp(), { output: false }))
    .addOption(typeOption())
    .option('--message <text>', 'text to send', defaultMessage)
    .option('--size <bytes>', 'size of the object (at most what /dev/shm, or for --memfd free memory, can hold)',
      numberOption({ min: 1, size: true }), defaultObjectSize)
    .option('--memfd', 'send a memfd sealed against shrinking, growing and writing (F_SEAL_SHRINK|F_SEAL_GROW|F_SEAL_WRITE) instead')
    .option('--json', 'print the result as one JSON object')
    .addOption(ioUringOption('sendmsg (IORING_OP_SENDMSG) and the memfd write (IORING_OP_WRITEV)'))
    .action(async (opts: { socket?: string; type: FdpassType; message: string; size: number; memfd?: boolean; json?: boolean; ioUring?: boolean }) => {
      const options = { socket: opts.socket ?? defaultSocketPath(), type: opts.type, message: opts.message, size: opts.size, memfd: opts.memfd };
      const result = await withDemoIo(opts.ioUring, (io) => runSender(options, io));
      if (opts.json) printJson(result);
      else process.stdout.write(formatSend(result).join('\n') + '\n');
      const note = refusalNote(result);
      if (note) process.stderr.write(`${note}\n`);
    });

  return oneLineErrors(keepOldUringFlag(fdpass));
}
