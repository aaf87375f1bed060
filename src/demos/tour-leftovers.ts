// What a tour that was killed (SIGKILL runs no cleanup) leaves: its temp folder
// (/tmp/iolab-tour-PID-XXXXXX) and the shared-memory objects of its shm demo
// (/dev/shm/iolab-tour-PID, ...-io_uring), removed by the next tour (src/leftovers.ts).
import { removeDeadRunsLeftovers, runFolderKind, runFolderPrefix } from '../leftovers.js';

/** The prefix of this tour's temp folder (mkdtemp adds six characters). */
export function tourFolderPrefix(): string {
  return runFolderPrefix('iolab-tour');
}

/** The name of this tour's shared-memory object (`-io_uring` for the variant). */
export function tourShmName(ioUring: boolean): string {
  return `/iolab-tour-${process.pid}${ioUring ? '-io_uring' : ''}`;
}

/** Removes what tours now dead left in the temp folder and /dev/shm; the names removed. */
export function removeDeadToursLeftovers(): string[] {
  return removeDeadRunsLeftovers([
    runFolderKind('iolab-tour'),
    { folder: '/dev/shm', pattern: /^iolab-tour-(\d+)(?:-io_uring)?$/, what: 'the shared-memory object' },
  ], 'a tour');
}
