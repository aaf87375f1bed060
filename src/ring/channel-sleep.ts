// How a Channel side (src/ring/channel.ts) waits: first, after waits that were short, a few
// microseconds of looking at the queue without sleeping (native/channel/channel.c's
// channel_spin); then a Ring recv on its copy of the socket, where the other side sends a byte
// when it finds this side's waiting flag set, and whose end says the other side's process or
// thread is gone. The other side's pid comes with the credentials of its first byte; from then
// on a pidfd of that process is polled on the Ring too while this side sleeps, so its death is
// told even while a copy of its socket is left open elsewhere.
import type { NativeChannelEnd } from '../native.js';
import { native, type RecvResult } from '../native.js';
import { recvmsg } from '../syscalls.js';
import { ringPollIn, type Ring } from './ring.js';

/** Wake-up bytes read at once (each is one wake-up; any number means "look again"). */
const wakeBytes = 64;

/** What a sleep ends with, told to the channel. */
export interface WakeHandlers {
  /** A wake-up came: look at the queue again. */
  woken(): void;
  /** The socket ended, or the other side's process did. */
  ended(): void;
  /** The recv failed otherwise (the channel ends with err). */
  failed(err: Error): void;
}

export class Sleeper {
  readonly #ring: Ring;
  readonly #end: NativeChannelEnd;
  readonly #handlers: WakeHandlers;
  readonly #wakes = Buffer.alloc(wakeBytes);
  /** This side made the region: it tells the joiner its pid (a byte) once it learns the joiner's. */
  readonly #creator: boolean;
  #sleeping = false;
  #closed = false;
  /** The other side's process: unknown until a byte from it comes with its credentials
   * (SO_PASSCRED); then a pidfd (-1: none, it is this process) polled while this side sleeps. */
  #peerKnown = false;
  #pidfd = -1;
  #pidfdPolled = false;
  /** The Ring ops out (settled after their handlers ran): settled() waits for them before the
   * channel closes their fds, as the Ring is shared with this thread's other channels. */
  #sleepOp?: Promise<void>;
  #pollOp?: Promise<void>;
  /** How long a wait may spin before it sleeps (options.spin). A spin that found nothing is not
   * tried again for the next #spinBackoff waits (doubling up to 1,024): on a machine with no
   * core to spare the other side cannot answer while this one spins, and spinning only delays
   * the answer. One that found what it waited for resets it. */
  readonly #spinNs: number;
  #spinSkip = 0;
  #spinBackoff = 0;

  constructor(ring: Ring, end: NativeChannelEnd, creator: boolean, spinNs: number, handlers: WakeHandlers) {
    this.#ring = ring;
    this.#end = end;
    this.#creator = creator;
    this.#spinNs = spinNs;
    this.#handlers = handlers;
  }

  get sleeping(): boolean {
    return this.#sleeping;
  }

  /** Spins for what is wanted, unless asleep already, spinning is off, or spins failed lately:
   * true when it came. */
  spin(wantMessage: boolean, wantRoom: boolean, pendingBytes: number): boolean {
    if (this.#sleeping || this.#spinNs === 0) return false;
    if (this.#spinSkip > 0) {
      this.#spinSkip--;
      return false;
    }
    if (this.#end.spin(wantMessage, wantRoom, pendingBytes, this.#spinNs)) {
      this.#spinBackoff = 0;
      return true;
    }
    this.#spinSkip = this.#spinBackoff = Math.min(1024, 2 * this.#spinBackoff || 16);
    return false;
  }

  /** Sleeps until a wake-up (this side's waiting flags are set), unless asleep already. */
  sleep(): void {
    if (this.#sleeping) return;
    this.#sleeping = true;
    if (this.#pidfd >= 0 && !this.#pidfdPolled) {
      this.#pidfdPolled = true;
      this.#pollOp = ringPollIn(this.#ring, this.#pidfd).then(this.#peerDied, this.#pollEnded);
    }
    if (this.#peerKnown) this.#sleepOp = this.#ring.recv(this.#end.socket, this.#wakes).then(this.#woken, this.#wakeFailed);
    // A Ring recvmsg that waited gets SCM_CREDENTIALS with pid 0 (kernel 6.18), so the Ring
    // only peeks, and the byte that came is taken here with its sender's pid.
    else this.#sleepOp = this.#ring.recv(this.#end.socket, this.#wakes.subarray(0, 1), native.constants.MSG_PEEK).then(this.#peeked, this.#wakeFailed);
  }

  /** Nothing waits now: the pidfd's poll must not keep the process alive (looked at a turn
   * later, so a loop that waits again at once does not cancel and re-arm it per message). */
  idle(): void {
    if (this.#pidfdPolled) setImmediate(this.#unwatchIfIdle);
  }

  /** Nothing should keep the process waiting: the sleep and the pidfd's poll are cancelled. */
  stop(): void {
    if (!this.#sleeping) return;
    this.#ring.cancelFd(this.#end.socket).catch(() => {});
    if (this.#pidfdPolled) this.#ring.cancelFd(this.#pidfd).catch(() => {});
  }

  /** The channel ended: cancels this side's ops on the shared Ring; resolves once each has settled. */
  close(): Promise<unknown> {
    this.#closed = true;
    const pending: Promise<void>[] = [];
    if (this.#sleeping) {
      pending.push(this.#sleepOp!);
      this.#ring.cancelFd(this.#end.socket).catch(() => {});
    }
    if (this.#pidfdPolled) {
      pending.push(this.#pollOp!);
      this.#ring.cancelFd(this.#pidfd).catch(() => {});
    }
    return Promise.all(pending);
  }

  readonly #peeked = (bytes: number) => {
    if (bytes === 0 || this.#closed) {
      this.#woken(bytes);
      return;
    }
    let r: RecvResult;
    try {
      r = recvmsg(this.#end.socket, [this.#wakes]); // the peeked byte is there: no wait
    } catch (err) {
      this.#wakeFailed(err as Error);
      return;
    }
    const pid = r.credentials?.pid;
    if (pid !== undefined && pid > 0 && !this.#peerKnown) this.#learnPeer(pid);
    this.#woken(r.bytesRead);
  };

  #learnPeer(pid: number): void {
    this.#peerKnown = true;
    if (pid === process.pid) return; // a thread of this process: its end closes the socket
    if (this.#creator) this.#end.wake(); // the joiner learns this side's pid from the byte
    this.#pidfd = this.#end.watchPeer(pid);
    if (this.#pidfd === -1) queueMicrotask(this.#peerDied); // it has ended already (-2: no pidfds here)
  }

  readonly #peerDied = () => {
    this.#pidfdPolled = false;
    if (!this.#closed) this.#handlers.ended(); // as the socket's end, which a stray copy holds back
  };

  readonly #pollEnded = () => {
    this.#pidfdPolled = false;
  };

  readonly #unwatchIfIdle = () => {
    if (this.#pidfdPolled && !this.#sleeping && !this.#closed) this.#ring.cancelFd(this.#pidfd).catch(() => {});
  };

  readonly #woken = (bytes: number) => {
    this.#sleeping = false;
    if (this.#closed) return;
    this.#end.woken();
    if (bytes === 0) this.#handlers.ended();
    else this.#handlers.woken();
  };

  readonly #wakeFailed = (err: Error & { code?: string }) => {
    this.#sleeping = false;
    if (this.#closed) return;
    if (err.code === 'ECANCELED') this.#handlers.woken(); // a listener came back meanwhile
    // the other side's process ended with wake-ups it had not read: the socket's end as well
    else if (err.code === 'ECONNRESET') this.#handlers.ended();
    else this.#handlers.failed(err);
  };
}
