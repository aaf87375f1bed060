// Ctrl-C and SIGTERM for long runs: the first signal aborts one shared AbortSignal, so a run
// stops its native work, prints what finished (marked partial), removes what it created and
// exits 130. Signals come in pairs more often than not: `timeout` signals iolab and then its
// process group, and an impatient user presses Ctrl-C twice; so the second one does not cut
// the cleanup short (it is said on stderr). Only a third ends the process at once, and then
// what it made is removed by the next run of the same command (src/leftovers.ts).
let controller: AbortController | undefined;
let received: NodeJS.Signals | undefined;
let count = 0;

function onSignal(signal: NodeJS.Signals): void {
  count++;
  if (count >= 3) process.exit(130);
  if (count === 2) {
    process.stderr.write(`note: ${signal} again: still stopping and removing what this run made; a third signal ends iolab at once\n`);
    return;
  }
  received = signal;
  controller?.abort(new Error(`interrupted by ${signal}`));
}

/** The signal that fires on the first SIGINT or SIGTERM (handlers installed on first use). */
export function interruption(): AbortSignal {
  if (controller === undefined) {
    controller = new AbortController();
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  }
  return controller.signal;
}

/** The signal that interrupted the run, if one did. */
export function interruptedBy(): NodeJS.Signals | undefined {
  return received;
}

/** An interrupted run exits 130, as a shell reports a command ended by Ctrl-C. */
export function markInterrupted(): void {
  process.exitCode = 130;
}

/**
 * A reader that closed stdout early (`iolab ... | head`) ends the command as SIGPIPE would,
 * without a stack trace: a long run is stopped through the same signal as Ctrl-C (so it still
 * removes what it created); anything else exits at once. Further output is dropped.
 */
export function endQuietlyOnClosedStdout(): void {
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
    process.stdout.write = (() => true) as typeof process.stdout.write;
    if (controller === undefined) process.exit(process.exitCode ?? 0);
    if (received === undefined) {
      received = 'SIGPIPE';
      count = 1;
      controller.abort(new Error('interrupted: stdout was closed'));
    }
  });
}
