// Cancelling what a Ring has in the kernel: one op (an AbortSignal, by its user_data), and all
// of them (close() and env teardown): one ASYNC_CANCEL with
// IORING_ASYNC_CANCEL_ANY, or, where the kernel refuses that flag (EINVAL: kernels before
// 5.19), one cancel per op by its user_data. A cancel that finds no free SQE submits what is
// queued to make room; what still cannot be queued stays due and Resume() goes on later.
//
// It knows which ops are in the kernel (Track/Untrack) and talks only to liburing.
#pragma once
#include <liburing.h>

#include "op.h"
#include "stats.h"

namespace iolab {

class RingCancel {
 public:
  // `unsubmitted` and `stats` are the core's, updated when this submits.
  RingCancel(struct io_uring* ring, unsigned* unsubmitted, RingStats* stats, bool sqpoll)
      : ring_(ring), unsubmitted_(unsubmitted), stats_(stats), sqpoll_(sqpoll) {}

  // op has an SQE: it is in the kernel until its CQE arrives.
  void Track(Op* op);
  void Untrack(Op* op);

  // Cancels every tracked op (again, for ops the kernel was busy with last time).
  void CancelAll();
  // An AbortSignal fired: an ASYNC_CANCEL by user_data for each op of `ticket` in the kernel.
  void CancelTicket(uint64_t ticket);
  // Queues the cancels still due (no SQE was free when they were asked for).
  void Resume();
  bool due() const { return any_due_ || each_due_ || wanted_due_; }
  // A CQE of one of these cancels is handled here (true); an op's CQE is not (false).
  bool OnCqe(void* data, int res);

  // Tests: the CANCEL_ANY SQE carries a flag this kernel does not know, so it answers EINVAL
  // as kernels before 5.19 answer CANCEL_ANY, and the per-op path runs for real.
  void RefuseCancelAny() { any_flags_ |= 1u << 31; }
  bool any_refused() const { return any_refused_; }

 private:
  struct io_uring_sqe* FreeSqe();
  void Submit();
  void CancelEach();
  bool CancelOne(Op* op);

  struct io_uring* ring_;
  unsigned* unsubmitted_;
  RingStats* stats_;
  bool sqpoll_;
  Op* in_kernel_ = nullptr;  // doubly linked through Op::prev/next
  unsigned any_flags_ = IORING_ASYNC_CANCEL_ANY;
  bool any_refused_ = false;
  bool any_due_ = false;
  bool each_due_ = false;
  bool wanted_due_ = false;  // ops of CancelTicket that found no SQE (Op::cancel_wanted)
};

}  // namespace iolab
