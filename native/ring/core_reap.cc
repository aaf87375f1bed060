// The Ring's core: completions. The ring fd's poll callback reaps every CQE (the stash of those
// taken inside a JS call first) and settles each through its op's table, inside one callback
// scope, under the guard (core.h); then the parts hand what they gathered to JS.
#include <errno.h>
#include <sys/sdt.h>  // USDT probes (provider iolab): docs/trace.md lists them
#include <unistd.h>

#include "core.h"

namespace iolab {

void RingCore::OnPoll(uv_poll_t* handle, int status, int events) {
  RingCore* core = static_cast<RingCore*>(handle->data);
  if (core->torn_down_ || status < 0) return;
  LoopScope loop(core);
  core->ReapTurns();
}

// Reap, let the continuations queue their next ops, submit them; ops that completed inline
// during that submit (page-cache reads) are reaped right away instead of after another trip
// through epoll. Bounded, so other handles get their turn (the ring fd stays readable).
// (A continuation's readvBatch may have submitted and stashed its CQEs itself.)
void RingCore::ReapTurns() {
  for (int turn = 0; turn < 4; turn++) {
    ReapAndSettle();
    if (torn_down_) return;  // the continuations closed the Ring
    if (unsubmitted_ > 0 || !backlog_.empty()) Flush();
    if (torn_down_ || (io_uring_cq_ready(&ring_) == 0 && stash_.empty())) return;
  }
}

void RingCore::ReapAndSettle() {
  napi_handle_scope handle_scope;
  napi_open_handle_scope(env_, &handle_scope);
  napi_value resource;
  napi_get_reference_value(env_, resource_, &resource);
  napi_callback_scope callback_scope;
  napi_open_callback_scope(env_, resource, async_context_, &callback_scope);
  Reap();
  // The guard's exit above ran what it deferred (a teardown, close()'s Promise) inside the
  // scope: the continuations see it all.
  napi_close_callback_scope(env_, callback_scope);  // runs nextTicks and microtasks
  napi_close_handle_scope(env_, handle_scope);
}

void RingCore::Reap() {
  Guard guard(this);

  const bool taskrun_flag = (setup_flags_ & IORING_SETUP_TASKRUN_FLAG) != 0;
  int empty_rounds = 0;
  struct io_uring_cqe* cqes[64];
  struct {
    Op* op;
    int res;
    unsigned flags;
  } done[64];
  for (;;) {
    SettleStashed();
    unsigned sq_flags = IO_URING_READ_ONCE(*ring_.sq.kflags);
    if ((sq_flags & IORING_SQ_CQ_OVERFLOW) != 0) stats_.cq_overflows++;
    // Task work the kernel holds for this thread (TASKRUN_FLAG says so) posts its CQEs when we
    // enter the kernel: enter now rather than at the loop's next wait; also to flush overflow.
    if ((sq_flags & (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW)) != 0) io_uring_get_events(&ring_);
    unsigned n = io_uring_peek_batch_cqe(&ring_, cqes, 64);
    if (n == 0) {
      // The flags may say work is pending after the kernel ran it (a stale TASKRUN bit, or an
      // overflow it could not flush yet): enter once more, then give up until the next wakeup
      // rather than spin on the JS thread.
      sq_flags = IO_URING_READ_ONCE(*ring_.sq.kflags);
      if ((sq_flags & (IORING_SQ_CQ_OVERFLOW | (taskrun_flag ? IORING_SQ_TASKRUN : 0))) != 0 &&
          ++empty_rounds < 2)
        continue;
      if (!stash_.empty()) continue;
      break;
    }
    empty_rounds = 0;
    for (unsigned i = 0; i < n; i++) {
      done[i].op = static_cast<Op*>(io_uring_cqe_get_data(cqes[i]));
      done[i].res = cqes[i]->res;
      done[i].flags = cqes[i]->flags;
      DTRACE_PROBE2(iolab, ring_complete, done[i].op, done[i].res);
    }
    io_uring_cq_advance(&ring_, n);
    stats_.cqes_reaped += n;
    for (unsigned i = 0; i < n; i++) OnAnyCqe(done[i].op, done[i].res, done[i].flags);
    if (closing_ && cancel_.due()) cancel_.Resume();
  }
  // What the parts gathered (the streams' chunks and ends), handed to JS once per reap.
  if (!parts_.empty() && handle_ != nullptr) {
    napi_value object = nullptr;
    napi_get_reference_value(env_, handle_->object, &object);
    for (auto& part : parts_) part.second->AfterReap(object);
  }
}

// The cancels' own CQEs are the cancel layer's. A LINK_TIMEOUT's (its op's address | 1; op
// records are 8-aligned) comes before or after its op's, in either order: -ETIME when it fired
// (the kernel then cancels the op: ECANCELED), -ECANCELED when the op finished first. The op is
// settled once both came, so its record is never reused while the kernel may still name it.
void RingCore::OnAnyCqe(void* data, int res, unsigned flags) {
  if (cancel_.OnCqe(data, res)) return;
  uintptr_t bits = reinterpret_cast<uintptr_t>(data);
  if ((bits & 1) == 0) {
    OnCqe(static_cast<Op*>(data), res, flags);
    return;
  }
  Op* op = reinterpret_cast<Op*>(bits & ~uintptr_t(1));
  op->link_pending = false;
  if (res == -ETIME) op->timed_out = true;
  if (op->parked) {
    op->parked = false;
    OnCqe(op, op->parked_res, op->parked_flags);
  }
}

// One CQE (or -ECANCELED for an op given up before it reached the kernel), through the op's
// table: its kind says whether it goes on, goes to the kernel again, or is done and settled.
void RingCore::OnCqe(Op* op, int res, unsigned flags) {
  if (op->link_pending) {  // its timeout's CQE is still to come
    cancel_.Untrack(op);
    op->parked = true;
    op->parked_res = res;
    op->parked_flags = flags;
    return;
  }
  if (op->timed_out && (res == -ECANCELED || res == -EINTR)) res = -ETIMEDOUT;
  Next next = op->cls->complete(this, op, res, flags);
  if (next == Next::kMore) return;
  cancel_.Untrack(op);
  if (next == Next::kAgain) {
    QueueSqe(op);  // still in flight
    return;
  }
  if (in_cleanup_) op->cls->abandon(this, op, res);
  else op->cls->settle(this, op, res);
  OpDone(op);
}

}  // namespace iolab
