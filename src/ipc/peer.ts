// The receiving process of `bench ipc`: `iolab bench ipc peer --control-fd 3`, started by the
// command with one end of a seqpacket socketpair as its fd 3. Both processes' loops are C
// (native/ipc/); this file only starts and ends the second process.
import { spawn, type ChildProcess } from 'node:child_process';
import { native } from '../native.js';
import { childEnv, dieWithParentIfAsked } from '../parent-death.js';
import { iolabArgv } from '../spawn-iolab.js';

export interface Peer {
  /** This process's end of the control socket. */
  control: number;
  pid: number;
  /** How the process ended, once it has: "exited with 1", "was killed by SIGKILL". */
  ended(): string | undefined;
  /** What it wrote on stderr (its own `iolab:` line, when it failed). */
  stderr(): string;
  /** Waits up to ms for it to end; its description, or undefined when it is still running. */
  waitEnded(ms: number): Promise<string | undefined>;
  /** Closes the control socket (the peer's loop then ends) and waits for the process to exit,
   * killing it if it has not within 2 s. */
  stop(): Promise<void>;
}

/** Starts the receiving process. It ends when the control socket closes, or with this process
 * (PR_SET_PDEATHSIG) however that dies. It stays in this session and process group: a process
 * in a session of its own is scheduled in an autogroup of its own, where a busy machine hands
 * it the CPU far later (small shm-queue round trips went from ~9 us to ~50 us). */
export function startPeer(): Peer {
  const [control, peerEnd] = native.socketpair('seqpacket');
  let child: ChildProcess;
  try {
    const [file, argv] = iolabArgv(['bench', 'ipc', 'peer', '--control-fd', '3']);
    child = spawn(file, argv, { stdio: ['ignore', 'ignore', 'pipe', peerEnd], env: childEnv() });
  } catch (err) {
    native.close(control);
    throw err;
  } finally {
    native.close(peerEnd);
  }
  let err = '';
  let endedAs: string | undefined;
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<string>((resolve) => {
    child.once('exit', (code, signal) => {
      endedAs = signal ? `was killed by ${signal}` : `exited with ${code}`;
      resolve(endedAs);
    });
    child.once('error', (e) => {
      endedAs = `could not start (${e.message})`;
      resolve(endedAs);
    });
  });
  let controlOpen = true;
  const waitEnded = async (ms: number) => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), ms)));
    const result = await Promise.race([exited, timeout]);
    clearTimeout(timer);
    return result;
  };
  return {
    control,
    pid: child.pid ?? -1,
    ended: () => endedAs,
    stderr: () => err,
    waitEnded,
    async stop() {
      if (controlOpen) {
        controlOpen = false;
        native.close(control);
      }
      if (endedAs === undefined && (await waitEnded(2000)) === undefined) {
        child.kill('SIGKILL');
        await exited;
      }
    },
  };
}

/** The peer subcommand's body: serve cells until the sending process closes the control socket. */
export async function servePeer(controlFd: number): Promise<void> {
  dieWithParentIfAsked(); // from startup on, not only once the C loop runs
  // A terminal's Ctrl-C reaches the whole process group: the sending process stops the run in
  // order and closes the control socket, which ends this one.
  process.on('SIGINT', () => {});
  // The fd is left open: the process ends right after, and an fd number that was not the
  // control socket may be one of Node's own.
  await native.ipcServe(controlFd).done;
}
