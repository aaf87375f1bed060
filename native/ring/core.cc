// The Ring's core: setup, the event-loop binding (eventfd + uv_poll_t, uv_prepare_t flush),
// batching, reaping, close/cancel and env teardown. What an op does is the op table's
// (op.cc); the JS class is js.cc.
#include "core.h"

#include <errno.h>
#include <sys/eventfd.h>
#include <sys/sdt.h>  // USDT probes (provider iolab): docs/trace.md lists them
#include <time.h>
#include <unistd.h>

#include "errors.h"
#include "live_objects.h"
#include "setup.h"

namespace iolab {

RingCore::RingCore(napi_env env, unsigned entries, unsigned cq_entries, bool sqpoll, RingHandle* handle)
    : env_(env), handle_(handle), cancel_(&ring_, &unsubmitted_, &stats_, sqpoll) {
  setup_flags_ = SetupRing(env, &ring_, entries, cq_entries, sqpoll);

  event_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (event_fd_ < 0) {
    int err = errno;
    io_uring_queue_exit(&ring_);
    ThrowErrno(env, err, "eventfd");
  }
  int ret = io_uring_register_eventfd(&ring_, event_fd_);
  if (ret < 0) {
    io_uring_queue_exit(&ring_);
    close(event_fd_);
    if (ret == -EPERM || ret == -ENOSYS) throw UnavailableError(env, -ret);
    ThrowErrno(env, -ret, "io_uring_register");
  }

  NAPI_THROW_IF_FAILED_VOID(env, napi_get_uv_event_loop(env, &loop_));
  Napi::Object resource = Napi::Object::New(env);
  napi_create_reference(env, resource, 1, &resource_);
  napi_async_init(env, resource, Napi::String::New(env, "iolab.Ring"), &async_context_);

  poll_ = new uv_poll_t;
  uv_poll_init(loop_, poll_, event_fd_);
  poll_->data = this;
  uv_poll_start(poll_, UV_READABLE, OnPoll);
  uv_unref(reinterpret_cast<uv_handle_t*>(poll_));
  prepare_ = new uv_prepare_t;
  uv_prepare_init(loop_, prepare_);
  prepare_->data = this;
  uv_prepare_start(prepare_, OnPrepare);
  uv_unref(reinterpret_cast<uv_handle_t*>(prepare_));
  open_handles_ = 2;

  napi_add_env_cleanup_hook(env, OnEnvCleanup, this);
  cleanup_hook_ = true;
  LiveInc(Live::kRings);
}

RingCore::~RingCore() = default;

// ---- op records ----

Op* RingCore::AcquireOp(OpKind kind, int fd) { return pool_.Acquire(kind, fd); }

// Back to the pool. Only called once the kernel is done with the op's memory.
void RingCore::ReleaseOp(Op* op) { pool_.Release(env_, op, !torn_down_); }

void RingCore::DropOp(Op* op) { ReleaseOp(op); }

// Holds the JS object while ops are in flight (the kernel may still use their memory).
void RingCore::Hold(bool strong) {
  if (handle_ == nullptr) return;
  if (strong) napi_reference_ref(env_, handle_->object, nullptr);
  else napi_reference_unref(env_, handle_->object, nullptr);
}

// One op fewer in flight; at none the loop may exit and the JS object may be collected.
void RingCore::OpDone() {
  in_flight_--;
  LiveDec(Live::kRingOps);
  if (in_flight_ == 0 && !torn_down_) {
    uv_unref(reinterpret_cast<uv_handle_t*>(poll_));
    Hold(false);
  }
}

// A method checks that the Ring is open before it reads its arguments, and reading them may run
// JS (a getter, an array element) that closes the Ring: by then the SQ may be unmapped, or
// close() has already cancelled what it found. So nothing is queued or refused once close()
// has begun: the record is given back and the method throws RingClosedError. (The core itself
// outlives the call: it is freed from its handles' close callbacks, on a later loop turn.)
void RingCore::RefuseIfClosed(Op* op, OpGroup* group) {
  if (!closed()) return;
  if (op != nullptr) ReleaseOp(op);
  if (group != nullptr) DropGroup(group);
  throw RingClosedError(env_);
}

napi_value RingCore::Enqueue(Op* op) {
  RefuseIfClosed(op, nullptr);
  napi_value promise;
  napi_status status = napi_create_promise(env_, &op->deferred, &promise);
  if (status != napi_ok) {
    ReleaseOp(op);
    NAPI_THROW_IF_FAILED(env_, status, nullptr);
  }
  AddInFlight(1);
  QueueSqe(op);
  return promise;
}

// Ops entering the kernel: the first keeps the loop alive and the Ring reachable.
void RingCore::AddInFlight(size_t n) {
  if (in_flight_ == 0) {
    uv_ref(reinterpret_cast<uv_handle_t*>(poll_));
    Hold(true);
  }
  in_flight_ += n;
  LiveAdd(Live::kRingOps, int64_t(n));
}

// Into the SQ, or behind what already waits for room (order is kept).
void RingCore::QueueSqe(Op* op) {
  if (!backlog_.empty() || !PrepSqe(op)) {
    backlog_.push_back(op);
    stats_.overflow_queued++;
  }
}

napi_value RingCore::EnqueueGroup(OpGroup* group) {
  RefuseIfClosed(nullptr, group);
  napi_value promise;
  napi_status status = napi_create_promise(env_, &group->deferred, &promise);
  if (status != napi_ok) {
    DropGroup(group);
    NAPI_THROW_IF_FAILED(env_, status, nullptr);
  }
  group->pending = group->ops.size();
  if (group->pending == 0) {  // an empty batch: settled at once
    GroupSettle(env_, group, false);
    GroupFree(env_, group);
    return promise;
  }
  AddInFlight(group->ops.size());
  for (Op* op : group->ops) {
    op->group = group;
    QueueSqe(op);
  }
  return promise;
}

void RingCore::DropGroup(OpGroup* group) {
  for (Op* op : group->ops) ReleaseOp(op);
  GroupFree(env_, group);
}

napi_value RingCore::RefuseGroup(OpGroup* group, int err, const char* syscall) {
  RefuseIfClosed(nullptr, group);
  napi_deferred deferred;
  napi_value promise;
  napi_status status = napi_create_promise(env_, &deferred, &promise);
  if (status == napi_ok) napi_reject_deferred(env_, deferred, ErrnoError(env_, err, syscall).Value());
  DropGroup(group);
  NAPI_THROW_IF_FAILED(env_, status, nullptr);
  return promise;
}

napi_value RingCore::Refuse(Op* op, int err) {
  RefuseIfClosed(op, nullptr);
  napi_deferred deferred;
  napi_value promise;
  napi_status status = napi_create_promise(env_, &deferred, &promise);
  if (status == napi_ok) napi_reject_deferred(env_, deferred, ErrnoError(env_, err, op->syscall).Value());
  ReleaseOp(op);
  NAPI_THROW_IF_FAILED(env_, status, nullptr);
  return promise;
}

// ---- submission ----

bool RingCore::PrepSqe(Op* op) {
  struct io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (sqe == nullptr) return false;
  OpPrep(sqe, op);
  DTRACE_PROBE4(iolab, ring_queue, op, sqe->opcode, sqe->fd, op->bounce.size());
  cancel_.Track(op);
  unsubmitted_++;
  return true;
}

int RingCore::SubmitQueued() {
  DTRACE_PROBE2(iolab, ring_submit, ring_.ring_fd, unsubmitted_);
  int ret = io_uring_submit(&ring_);
  stats_.submit_calls++;
  if (ret > 0) {
    stats_.sqes_submitted += ret;
    unsubmitted_ -= std::min<unsigned>(unsubmitted_, unsigned(ret));
  }
  return ret;
}

void RingCore::Flush() {
  if (torn_down_) return;
  for (int round = 0; round < 64; round++) {
    if (unsubmitted_ > 0) {
      int ret = SubmitQueued();
      if (ret < 0) {
        // -EBUSY/-EAGAIN: the CQ is overflowing or the kernel is short of memory. Reap (which
        // flushes the overflow) and try again; the prepare handle retries next turn otherwise.
        if ((ret == -EBUSY || ret == -EAGAIN || ret == -EINTR) && !reaping_) {
          ReapAndSettle();
          if (torn_down_) return;
          continue;
        }
        return;
      }
    }
    bool moved = false;
    while (!backlog_.empty() && PrepSqe(backlog_.front())) {
      backlog_.pop_front();
      moved = true;
    }
    if (!moved) return;
  }
}

void RingCore::OnPrepare(uv_prepare_t* handle) {
  RingCore* core = static_cast<RingCore*>(handle->data);
  if (core->closing_ && core->cancel_.due()) core->cancel_.Resume();  // no SQE was free before
  if (core->unsubmitted_ > 0 || !core->backlog_.empty()) core->Flush();
  // Stream recv cancels that found no SQE, or their recv still in the backlog: the flush has
  // moved the backlog into the SQ, so they can go now.
  if (!core->torn_down_ && core->streams_ != nullptr && core->streams_->cancels_due()) {
    core->streams_->RetryCancels();
    if (core->unsubmitted_ > 0) core->Flush();
  }
}

// ---- completion ----

void RingCore::OnPoll(uv_poll_t* handle, int status, int events) {
  RingCore* core = static_cast<RingCore*>(handle->data);
  if (core->torn_down_) return;
  uint64_t count;
  while (read(core->event_fd_, &count, sizeof(count)) < 0 && errno == EINTR) {
  }
  // Reap, let the continuations queue their next ops, submit them; ops that completed inline
  // during that submit (page-cache reads) are reaped right away instead of after another
  // trip through epoll. Bounded, so other handles get their turn.
  // (A continuation's readvBatch may have submitted and stashed its CQEs itself.)
  for (int turn = 0; turn < 4; turn++) {
    core->ReapAndSettle();
    if (core->torn_down_) return;
    if (core->unsubmitted_ > 0 || !core->backlog_.empty()) core->Flush();
    if (core->torn_down_ || (io_uring_cq_ready(&core->ring_) == 0 && core->stash_.empty())) return;
  }
}

void RingCore::ReapAndSettle() {
  if (reaping_ || torn_down_) return;
  reaping_ = true;
  napi_handle_scope handle_scope;
  napi_open_handle_scope(env_, &handle_scope);
  napi_value resource;
  napi_get_reference_value(env_, resource_, &resource);
  napi_callback_scope callback_scope;
  napi_open_callback_scope(env_, resource, async_context_, &callback_scope);

  const bool defer = (setup_flags_ & IORING_SETUP_DEFER_TASKRUN) != 0;
  const bool taskrun_flag = (setup_flags_ & IORING_SETUP_TASKRUN_FLAG) != 0;
  bool first = true;
  int empty_rounds = 0;
  struct io_uring_cqe* cqes[64];
  struct {
    Op* op;
    int res;
    unsigned flags;
  } done[64];
  for (;;) {
    SettleStashed(false);
    unsigned sq_flags = IO_URING_READ_ONCE(*ring_.sq.kflags);
    if ((sq_flags & IORING_SQ_CQ_OVERFLOW) != 0) stats_.cq_overflows++;
    // Deferred task work runs only when we enter the kernel: do it when the kernel says some
    // is pending (TASKRUN_FLAG), or once per wakeup when it cannot say; also to flush overflow.
    if ((defer && (taskrun_flag ? (sq_flags & IORING_SQ_TASKRUN) != 0 : first)) ||
        (sq_flags & IORING_SQ_CQ_OVERFLOW) != 0)
      io_uring_get_events(&ring_);
    first = false;
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
    for (unsigned i = 0; i < n; i++)
      if (!cancel_.OnCqe(done[i].op, done[i].res)) Settle(done[i].op, done[i].res, done[i].flags, false);
    if (closing_ && cancel_.due()) cancel_.Resume();
  }
  if (streams_ != nullptr) DispatchStreams();  // their chunks and ends, in one call into JS
  if (closing_ && in_flight_ == 0) FinishClose();

  napi_close_callback_scope(env_, callback_scope);  // runs nextTicks and microtasks
  napi_close_handle_scope(env_, handle_scope);
  reaping_ = false;
}

// Settles one op with its CQE result (the op table builds the value), then releases it.
void RingCore::Settle(Op* op, int res, unsigned flags, bool in_cleanup) {
  if (op->stream != nullptr) {
    // A multishot recv goes on while the kernel says MORE; a short send goes out again.
    if (streams_->OnCqe(op, res, flags, in_cleanup)) {
      cancel_.Untrack(op);
      ReleaseOp(op);
      OpDone();
    }
    return;
  }
  cancel_.Untrack(op);
  if (op->group != nullptr) {
    SettleMember(op, res, in_cleanup);
    return;
  }
  if (in_cleanup) {
    OpDiscard(op, res);
  } else {
    try {
      OpSettle(env_, op, res, closing_);
      DTRACE_PROBE2(iolab, ring_settle, op, res);
    } catch (const Napi::Error&) {
      // Building the value failed (out of memory in V8): nothing sensible left to do.
    }
  }
  ReleaseOp(op);
  OpDone();
}

// A batch's op is kept until the batch's last op is done; then all settle at once.
void RingCore::SettleMember(Op* op, int res, bool in_cleanup) {
  OpGroup* group = op->group;
  if (op->kind == OpKind::kReadvDirect && OpDirectWantsRetry(op, res)) {
    if (!in_cleanup && !closing_) {  // again, through bounce memory, waiting if it must
      OpToBounce(op);
      QueueSqe(op);
      return;
    }
    if (res == -EAGAIN) res = -ECANCELED;  // it would have run again, but the Ring closes
  }
  op->res = res;
  if (--group->pending == 0) {
    if (in_cleanup) {
      GroupDiscard(group);
    } else {
      try {
        GroupSettle(env_, group, closing_);
      } catch (const Napi::Error&) {
        // Building the values failed (out of memory in V8): nothing sensible left to do.
      }
    }
    for (Op* member : group->ops) ReleaseOp(member);
    GroupFree(env_, group);
  }
  OpDone();
}

// An op that never reached the kernel, given up because the Ring closes (in_cleanup: the env
// goes away, no JS can be told).
void RingCore::Abandon(Op* op, bool in_cleanup) {
  if (op->stream != nullptr) {
    Settle(op, -ECANCELED, 0, in_cleanup);  // a stream op never goes on after an error
    return;
  }
  if (op->group != nullptr) {
    SettleMember(op, -ECANCELED, in_cleanup);
    return;
  }
  if (!in_cleanup) OpRejectClosed(env_, op);
  ReleaseOp(op);
  OpDone();
}

// ---- close ----

napi_value RingCore::Close() {
  napi_deferred deferred;
  napi_value promise;
  NAPI_THROW_IF_FAILED(env_, napi_create_promise(env_, &deferred, &promise), nullptr);
  if (torn_down_) {
    napi_value undefined;
    napi_get_undefined(env_, &undefined);
    napi_resolve_deferred(env_, deferred, undefined);
    return promise;
  }
  close_waiters_.push_back(deferred);
  if (closing_) return promise;
  closing_ = true;
  if (streams_ != nullptr) streams_->OnClose();
  // Ops that never reached the kernel are rejected now.
  while (!backlog_.empty()) {
    Op* op = backlog_.front();
    backlog_.pop_front();
    Abandon(op, false);
  }
  if (in_flight_ > 0) cancel_.CancelAll();
  if (in_flight_ == 0) FinishClose();
  return promise;
}

void RingCore::FinishClose() {
  std::vector<napi_deferred> waiters;
  waiters.swap(close_waiters_);
  TearDown(false);
  napi_value undefined;
  napi_get_undefined(env_, &undefined);
  for (napi_deferred d : waiters) napi_resolve_deferred(env_, d, undefined);
}

void RingCore::Orphan() {
  handle_ = nullptr;
  // Ops in flight held the JS object, so none are left when it is collected.
  if (!torn_down_ && in_flight_ == 0) TearDown(false);
}

void RingCore::TearDown(bool in_cleanup) {
  if (torn_down_) return;
  torn_down_ = true;
  if (cleanup_hook_) {
    napi_remove_env_cleanup_hook(env_, OnEnvCleanup, this);
    cleanup_hook_ = false;
  }
  io_uring_queue_exit(&ring_);
  if (streams_ != nullptr) TearDownStreams(in_cleanup);
  uv_poll_stop(poll_);
  uv_prepare_stop(prepare_);
  close(event_fd_);  // not polled any more (libuv allows closing once the poll is stopped)
  event_fd_ = -1;
  uv_close(reinterpret_cast<uv_handle_t*>(poll_), OnHandleClosed);
  uv_close(reinterpret_cast<uv_handle_t*>(prepare_), OnHandleClosed);
  if (!in_cleanup) napi_async_destroy(env_, async_context_);
  napi_delete_reference(env_, resource_);
  LiveDec(Live::kRings);
  if (handle_ != nullptr) {
    if (in_flight_ > 0 && !in_cleanup) Hold(false);
    handle_->stats = stats_;
    handle_->core = nullptr;
    handle_ = nullptr;
  }
}

void RingCore::OnHandleClosed(uv_handle_t* handle) {
  RingCore* core = static_cast<RingCore*>(handle->data);
  if (handle == reinterpret_cast<uv_handle_t*>(core->poll_)) {
    delete core->poll_;
    core->poll_ = nullptr;
  } else {
    delete core->prepare_;
    core->prepare_ = nullptr;
  }
  if (--core->open_handles_ == 0) delete core;
}

// Env teardown (process or worker exit) with the Ring still open: no JS can run any more.
// Cancel everything, WAIT for the kernel to hand back every op, then free. An op the kernel
// will not give back within the deadline is leaked on purpose (its memory may still be hit).
void RingCore::OnEnvCleanup(void* arg) {
  RingCore* core = static_cast<RingCore*>(arg);
  core->cleanup_hook_ = false;
  core->CleanupBlocking();
}

void RingCore::CleanupBlocking() {
  if (torn_down_) return;
  SettleStashed(true);
  while (!backlog_.empty()) {
    Op* op = backlog_.front();
    backlog_.pop_front();
    Abandon(op, true);
  }
  if (in_flight_ > 0) cancel_.CancelAll();
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  while (in_flight_ > 0) {
    struct io_uring_cqe* cqe = nullptr;
    struct __kernel_timespec timeout = {0, 50 * 1000 * 1000};
    int ret = io_uring_wait_cqe_timeout(&ring_, &cqe, &timeout);
    if (ret == 0 && cqe != nullptr) {
      void* data = io_uring_cqe_get_data(cqe);
      int res = cqe->res;
      unsigned flags = cqe->flags;
      io_uring_cqe_seen(&ring_, cqe);
      if (!cancel_.OnCqe(data, res)) Settle(static_cast<Op*>(data), res, flags, true);
      if (cancel_.due()) cancel_.Resume();
      continue;
    }
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - start.tv_sec >= 3) break;
    if (ret == -ETIME) cancel_.CancelAll();  // again, for ops the kernel was busy with
  }
  // Whatever is still in flight keeps its memory (leaked): the kernel may still write to it.
  TearDown(true);
}

}  // namespace iolab
