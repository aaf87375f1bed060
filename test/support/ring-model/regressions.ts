// Seeds of the Ring's model-based test that found a defect in the Ring (on a landed main) or in
// the model itself (a false alarm: the Ring was right), each replayed by test/ring-model.test.ts
// as one run (IOLAB_FUZZ_GEN=gen IOLAB_FUZZ_SEED=seed IOLAB_FUZZ_RUNS=1). A seed stands for the
// sequence its version of the generators (`gen`, version.ts) draws from it: a change to the
// generators is a new version, and the old one stays as it was, so these still reach what they
// found.
export const regressions: { gen: number; seed: number; found: string }[] = [
  { gen: 1, seed: 24303, found: 'a read of the file into a read-only mapping crashed the process (SIGSEGV)' },
  { gen: 1, seed: 25151, found: "ring.close() rejected with an end handler's exception" },
  { gen: 1, seed: 24357, found: 'readvBatch with a position on a pipe failed with EOPNOTSUPP (the sync preadv: ESPIPE)' },
  { gen: 1, seed: 24379, found: 'readvBatch at position 0 on a socket read again over the bytes it had (17 lost)' },
  { gen: 1, seed: 24440, found: "a stream closed in its own data handler, another opened there: it got the first socket's bytes" },
  { gen: 1, seed: 25137, found: 'a stream closed in its own data handler: its other chunks skipped and their buffers lost to the pool (shrunk: given to a stream opened there)' },
  { gen: 1, seed: 25561, found: 'a stream starved while another of its pool was opened: the one wake-up went to the new stream, which had no bytes, and the first never received again with the buffer free' },
  { gen: 1, seed: 24812, found: "a getter calling readvBatch again: the outer call read at the inner call's positions" },
  { gen: 1, seed: 904303, found: 'a read past the end of the file into a read-only mapping rejected with EFAULT (the sync preadv: 0)' },
  { gen: 1, seed: 904863, found: "a stream closed with 256 KiB of sends queued, then the Ring closed: its end handler threw and the stream's close() never settled" },
  { gen: 1, seed: 905891, found: "the model's own: a 1-byte read after a closing stream's gap fitted two places (a byte carries six bits of its position); the model took the wrong one" },
  { gen: 1, seed: 900273, found: "the model's own: a stream closed in its data handler dropped the socket's last byte, in flight; the model waited for the next stream on the socket to get it" },
  { gen: 1, seed: 1101857, found: "the model's own: a readvBatch whose one read's view the model no longer trusts (a getter touched it) read 1 byte after a closing stream's gap; the model put it at the gap's start, not anywhere after it" },
  { gen: 1, seed: 1314965, found: "the model's own: a readvBatch's two reads (of 1 and 17 bytes) took the socket's bytes longer one first; the 1-byte read's byte also fitted first, and the model, trying that order only, found the other read fit nowhere" },
  { gen: 2, seed: 24316, found: 'a readvBatch aborted by its signal after its first read took bytes rejected without index and results: the bytes were lost' },
  { gen: 2, seed: 24391, found: 'a stream starved for its pool\'s one buffer while its queue passed pauseAt: woken by the buffer, it went on receiving' },
  { gen: 2, seed: 24459, found: "the model's own: a stream's queued sends dropped (cancelFd), then another stream on the socket wrote; one read of the peer took the bytes sent before the drop and the next stream's after it, and the model let a gap be only at a read's start" },
  { gen: 2, seed: 30740, found: "the model's own: after a stream's sends were dropped, the peer read part of what had gone out (886 bytes), then read across the drop; the model had spent the gap on the first read" },
  { gen: 2, seed: 30099, found: "the model's own: the pause check added up what a stream received past pauseAt across a resume it did not see (the queue drained between two chunks)" },
  { gen: 2, seed: 1007711, found: "the model's own: a stream's sends dropped by cancelFd, then the next stream's dropped as the Ring closed; the second drop moved the place the next writer's bytes began, and a read across the first drop fitted nowhere (3 of a 20,000-sequence search, all this)" },
  { gen: 3, seed: 500553, found: "the model's own: a read whose views no longer show its bytes fitted at every place past a gap in 127,000 bytes, and the places, spread into Math.max, overflowed the stack" },
  { gen: 3, seed: 611716, found: "the model's own: two streams' sends dropped by cancelFd, one after the other, before the peer read; the model kept the first drop's resume point only, and the peer's read across the second drop fitted nowhere (1 of a 20,000-sequence search)" },
];
