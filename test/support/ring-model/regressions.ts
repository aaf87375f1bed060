// Seeds of the Ring's model-based test that found a defect on the landed main (issue 24) or in
// the model itself (a false alarm: the Ring was right), each replayed by test/ring-model.test.ts
// as one run (IOLAB_FUZZ_SEED=seed IOLAB_FUZZ_RUNS=1). A
// seed stands for the sequence the generators of this commit draw from it: after a change to a
// generator, find them again (IOLAB_FUZZ_KEEP_GOING=1 lists every failing seed of a search).
export const regressions: { seed: number; found: string }[] = [
  { seed: 24303, found: 'a read of the file into a read-only mapping crashed the process (SIGSEGV)' },
  { seed: 25151, found: "ring.close() rejected with an end handler's exception" },
  { seed: 24357, found: 'readvBatch with a position on a pipe failed with EOPNOTSUPP (the sync preadv: ESPIPE)' },
  { seed: 24379, found: 'readvBatch at position 0 on a socket read again over the bytes it had (17 lost)' },
  { seed: 24440, found: "a stream closed in its own data handler, another opened there: it got the first socket's bytes" },
  { seed: 25137, found: 'a stream closed in its own data handler: its other chunks skipped and their buffers lost to the pool (shrunk: given to a stream opened there)' },
  { seed: 25561, found: 'a stream starved while another of its pool was opened: the one wake-up went to the new stream, which had no bytes, and the first never received again with the buffer free' },
  { seed: 24812, found: "a getter calling readvBatch again: the outer call read at the inner call's positions" },
  { seed: 904303, found: 'a read past the end of the file into a read-only mapping rejected with EFAULT (the sync preadv: 0)' },
  { seed: 904863, found: "a stream closed with 256 KiB of sends queued, then the Ring closed: its end handler threw and the stream's close() never settled" },
  { seed: 905891, found: "the model's own: a 1-byte read after a closing stream's gap fitted two places (a byte carries six bits of its position); the model took the wrong one" },
  { seed: 900273, found: "the model's own: a stream closed in its data handler dropped the socket's last byte, in flight; the model waited for the next stream on the socket to get it" },
  { seed: 1101857, found: "the model's own: a readvBatch whose one read's view the model no longer trusts (a getter touched it) read 1 byte after a closing stream's gap; the model put it at the gap's start, not anywhere after it" },
  { seed: 1314965, found: "the model's own: a readvBatch's two reads (of 1 and 17 bytes) took the socket's bytes longer one first; the 1-byte read's byte also fitted first, and the model, trying that order only, found the other read fit nowhere" },
];
