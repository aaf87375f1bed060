// The core's side of streams (bufring.h): ops queued without a Promise, the dispatch of
// their events from the reap, and their teardown with the ring.
#include <errno.h>

#include "live_objects.h"
#include "core.h"

namespace iolab {

void RingCore::EnqueueSilent(Op* op) {
  RefuseIfClosed(op, nullptr);
  AddInFlight(1);
  QueueSqe(op);
}

void RingCore::Requeue(Op* op) {
  cancel_.Untrack(op);
  QueueSqe(op);
}

// Called from inside a stream's JS call: a Flush could reap, and reaping runs JS that may
// finish (delete) the very stream asking, so this only submits.
struct io_uring_sqe* RingCore::FreeSqe() {
  if (torn_down_) return nullptr;
  struct io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (sqe == nullptr && unsubmitted_ > 0 && SubmitQueued() > 0) sqe = io_uring_get_sqe(&ring_);
  if (sqe != nullptr) unsubmitted_++;
  return sqe;
}

RingStreams* RingCore::streams() {
  if (streams_ == nullptr) streams_ = new RingStreams(env_, this);
  return streams_;
}

// Streams' chunks and ends go to JS in one call (JS run there may queue, or close the Ring).
void RingCore::DispatchStreams() {
  if (!streams_->has_events() || torn_down_ || handle_ == nullptr) return;
  napi_value object = nullptr;
  napi_get_reference_value(env_, handle_->object, &object);
  streams_->Dispatch(object);
  if (streams_teardown_due_) {  // JS closed the Ring from a stream's handler
    streams_teardown_due_ = false;
    streams_->TearDown(false, false);
    delete streams_;
    streams_ = nullptr;
  }
}

// After io_uring_queue_exit. The buffer memory outlives ops the kernel never gave back (env
// teardown's deadline); while a dispatch is on the stack, the streams go after it returns.
void RingCore::TearDownStreams(bool in_cleanup) {
  if (streams_->dispatching() && !in_cleanup) {
    streams_teardown_due_ = true;
    return;
  }
  streams_->TearDown(in_cleanup, in_flight_ > 0);
  delete streams_;
  streams_ = nullptr;
}

}  // namespace iolab
