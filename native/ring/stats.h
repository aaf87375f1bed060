// The Ring's counters (ring.stats), kept by the core and its cancel layer.
#pragma once

namespace iolab {

struct RingStats {
  double submit_calls = 0;   // io_uring_submit calls that entered the kernel
  double sqes_submitted = 0; // SQEs the kernel took
  double cqes_reaped = 0;    // CQEs handled (ops and internal cancels)
  double overflow_queued = 0;// ops that waited in the native backlog (SQ full)
  double cq_overflows = 0;   // times the CQ had overflowed and was flushed
  double cancel_ops = 0;     // per-op cancels queued (where the kernel refused CANCEL_ANY)
  double recv_no_buffers = 0;     // stream recvs that ended with ENOBUFS (the pool was empty)
  double stream_slots_reused = 0; // streams that took the slot (token) of a finished one
  double stream_sends_copied = 0; // buffers given to a stream's send copied into its queue
  double stream_sends_direct = 0; // writes the socket took (wholly or in part) inside the call
};

}  // namespace iolab
