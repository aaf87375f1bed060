// The Ring's core, the part that submits inside a JS call: readvBatch's direct reads (into JS
// memory) are submitted before the call returns, what the kernel did not take is rewritten to
// op memory, and every CQE is taken off the CQ into a stash that the next reap settles
// (core_reap.cc), since JS is still on the stack here. See docs/ring.md.
#include <sys/sdt.h>  // USDT probes (provider iolab): docs/trace.md lists them

#include <algorithm>

#include "core.h"

namespace iolab {

bool RingCore::CanSubmitNow(size_t n) const {
  return !closed() && (setup_flags_ & IORING_SETUP_SQPOLL) == 0 && backlog_.empty() &&
         io_uring_sq_space_left(&ring_) >= n;
}

void RingCore::SubmitInCall(Op* const* ops, size_t n, const OpClass* in_call, void (*unsent)(Op* op)) {
  std::vector<Op*>& mine = in_call_;  // sorted: their CQEs are told apart by user_data
  mine.clear();
  for (size_t i = 0; i < n; i++)
    if (ops[i]->cls == in_call) mine.push_back(ops[i]);
  std::sort(mine.begin(), mine.end());
  SubmitQueued();
  // What the kernel did not take (the submit failed: out of memory...) is still ours to rewrite.
  size_t pending = mine.size();
  unsigned mask = *ring_.sq.kring_mask;
  for (unsigned k = io_uring_smp_load_acquire(ring_.sq.khead); k != *ring_.sq.ktail; k++) {
    struct io_uring_sqe* sqe = &ring_.sq.sqes[ring_.sq.array[k & mask]];
    Op* op = reinterpret_cast<Op*>(uintptr_t(sqe->user_data));
    if (!std::binary_search(mine.begin(), mine.end(), op)) continue;
    unsent(op);
    op->cls->prepare(sqe, op);
    io_uring_sqe_set_data(sqe, op);
    pending--;
  }
  // A page-cache read completes inside the submit. One the kernel queued instead (a file made
  // O_DIRECT meanwhile) writes into the views until it completes: wait for it, before JS runs.
  for (pending -= StashCqes(mine); pending > 0; pending -= StashCqes(mine)) {
    struct io_uring_cqe* cqe = nullptr;
    io_uring_wait_cqe(&ring_, &cqe);
  }
}

size_t RingCore::StashCqes(const std::vector<Op*>& mine) {
  size_t found = 0;
  struct io_uring_cqe* cqes[64];
  while (unsigned n = io_uring_peek_batch_cqe(&ring_, cqes, 64)) {
    for (unsigned i = 0; i < n; i++) {
      void* data = io_uring_cqe_get_data(cqes[i]);
      stash_.push_back({data, cqes[i]->res, cqes[i]->flags});
      DTRACE_PROBE2(iolab, ring_complete, data, cqes[i]->res);
      if (std::binary_search(mine.begin(), mine.end(), static_cast<Op*>(data))) found++;
    }
    io_uring_cq_advance(&ring_, n);
    stats_.cqes_reaped += n;
  }
  return found;
}

// The stashed CQEs, in the order they came (a getter run while one settles may stash more).
void RingCore::SettleStashed() {
  while (!stash_.empty()) {
    std::vector<Stashed> batch;
    batch.swap(stash_);
    for (const Stashed& d : batch) OnAnyCqe(d.data, d.res, d.flags);
    batch.clear();
    if (stash_.empty()) stash_.swap(batch);  // keeps its capacity
  }
}

}  // namespace iolab
