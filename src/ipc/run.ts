// Runs a planned `bench ipc`: one receiving process for the whole run, the cells of each round
// one after another (each a C job off the JS thread), progress on stderr. Ctrl-C stops the
// cell in flight and returns what finished; a failed cell ends the run with one clear error.
import { UserError } from '../cli-util.js';
import { formatBytes } from '../format.js';
import { interruptedBy, interruption } from '../interrupt.js';
import { native, type IpcCell, type IpcJob, type IpcCellResult, type IpcMode } from '../native.js';
import { memcpyName, roundCells, type IpcPlan } from './plan.js';
import { startPeer, type Peer } from './peer.js';
import { addonTransport, inUserWords } from './transports.js';

/** Each cell runs at least this many messages (round trips), even past its duration. */
const minMessages = 3;

export interface Sample {
  round: number;
  transport: string;
  mode: IpcMode;
  messageBytes: number;
  messages: number;
  elapsedNs: number;
  bytesPerSec: number;
  messagesPerSec: number;
  p50Ns?: number;
  p99Ns?: number;
  p999Ns?: number;
  /** Pingpong: the sender's check of one reply, mean (not in the round-trip times). */
  checkNs?: number;
}

export interface IpcRun {
  samples: Sample[];
  cellsPlanned: number;
  /** Set when a signal stopped the run: what stopped it. */
  interruptedBy?: string;
}

export interface Progress {
  cell(done: number, total: number, round: number, label: string): void;
  round(round: number, seconds: number): void;
  end(): void;
}

type Cell = { transport: string; mode: IpcMode; messageBytes: number };

const label = (c: Cell) => `${c.transport}${c.transport === memcpyName ? '' : ` ${c.mode}`} at ${formatBytes(c.messageBytes)}`;

/** The one line a user sees for a cell that failed. */
async function explain(err: unknown, cell: Cell, round: number, peer: Peer): Promise<Error> {
  const e = err as Error & { code?: string };
  if (e.code === 'ERR_IOLAB_IPC_PEER_GONE') {
    const how = (await peer.waitEnded(1000)) ?? 'stopped answering';
    const said = peer.stderr().trim().split('\n').pop();
    return new UserError(`the receiving process (pid ${peer.pid}) ${how} during ${label(cell)} (round ${round}); ` +
      `the run stopped${said ? `: it said: ${said}` : ''}`);
  }
  if (e.code === 'ERR_IOLAB_IPC_CHECK') return new UserError(`${inUserWords(cell.transport, e.message)} (${cell.mode}, round ${round})`);
  return new UserError(`${label(cell)}: ${e.message}`);
}

export async function runPlan(plan: IpcPlan, progress?: Progress): Promise<IpcRun> {
  const { options } = plan;
  const signal = interruption();
  const run: IpcRun = { samples: [], cellsPlanned: plan.cellsPerRound * options.rounds };
  let current: IpcJob<IpcCellResult> | undefined;
  const onAbort = () => current?.stop();
  signal.addEventListener('abort', onAbort);
  const peer = startPeer();
  let done = 0;
  try {
    rounds: for (let round = 1; round <= options.rounds; round++) {
      const started = Date.now();
      for (const cell of roundCells(plan, round - 1)) {
        if (signal.aborted) break rounds;
        progress?.cell(done, run.cellsPlanned, round, label(cell));
        const spec: IpcCell = { messageBytes: cell.messageBytes, durationMs: options.durationMs, minMessages,
          checkFull: options.checkFull, faultMessage: options.faultMessage, faultStale: options.faultStale };
        current = cell.transport === memcpyName ? native.ipcMemcpy(spec) : native.ipcSend(peer.control, addonTransport(cell.transport), cell.mode, spec);
        let r: IpcCellResult;
        try {
          r = await current.done;
        } catch (err) {
          // stopped, or the receiver went down with the same signal (a group's SIGTERM)
          if ((err as { code?: string }).code === 'ERR_IOLAB_IPC_STOPPED' || signal.aborted) break rounds;
          throw await explain(err, cell, round, peer);
        } finally {
          current = undefined;
        }
        const seconds = r.elapsedNs / 1e9;
        run.samples.push({ round, ...cell, messages: r.messages, elapsedNs: r.elapsedNs,
          bytesPerSec: (r.messages * cell.messageBytes) / seconds, messagesPerSec: r.messages / seconds,
          p50Ns: r.p50Ns, p99Ns: r.p99Ns, p999Ns: r.p999Ns,
          ...(r.checkNs !== undefined && r.messages > 0 ? { checkNs: r.checkNs / r.messages } : {}) });
        done++;
      }
      progress?.round(round, (Date.now() - started) / 1000);
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
    progress?.end();
    await peer.stop();
  }
  if (signal.aborted) run.interruptedBy = interruptedBy() ?? 'a signal';
  return run;
}

/** Progress on stderr: one line rewritten per cell on a terminal, one line per round otherwise. */
export function stderrProgress(rounds: number): Progress {
  const tty = process.stderr.isTTY === true;
  let shown = false;
  return {
    cell(done, total, round, what) {
      if (!tty) return;
      process.stderr.write(`\r\x1b[K[${done + 1}/${total}] round ${round}/${rounds}: ${what}`);
      shown = true;
    },
    round(round, seconds) {
      if (!tty) process.stderr.write(`round ${round}/${rounds} done in ${seconds.toFixed(1)} s\n`);
    },
    end() {
      if (shown) process.stderr.write('\r\x1b[K');
      shown = false;
    },
  };
}
