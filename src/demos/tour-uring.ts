// The tour's io_uring half: the demos that have a --uring variant (readv, writev, fdpass) run
// again with --uring, in their own temp folder, and their steps follow the plain ones. shm has
// no variant: its I/O is loads and stores on a mapping, with no syscall to carry.
import { Ring, isIoUringUnavailable } from '../ring.js';
import { runTour, tourDemos, type TourDemo, type TourStep } from './tour.js';

export function uringTourDemos(): TourDemo[] {
  return tourDemos.filter((d) => !d.title.startsWith('shm'))
    .map((d) => ({ title: `${d.title} [--uring: the same calls through io_uring]`, run: d.run }));
}

/** Why io_uring cannot be used here (one sentence), or undefined when it can. */
export async function ioUringRefusal(): Promise<string | undefined> {
  try {
    await new Ring({ entries: 2 }).close();
    return undefined;
  } catch (err) {
    if (isIoUringUnavailable(err)) return err.message;
    throw err;
  }
}

/** Both variants side by side (separate temp folders), as one transcript. */
export async function runTourBothVariants(): Promise<{ dir: string; steps: TourStep[] }> {
  const refusal = await ioUringRefusal();
  const [plain, uring] = await Promise.all([runTour(), refusal === undefined ? runTour(uringTourDemos(), ['--uring']) : undefined]);
  const skipped: TourStep = { title: 'the --uring variants', commands: [], notes: [`skipped: ${refusal}`] };
  return { dir: plain.dir, steps: [...plain.steps, ...(uring ? uring.steps : [skipped])] };
}
