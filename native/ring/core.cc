// The Ring's core: setup and the event-loop binding (the ring fd's uv_poll_t, uv_prepare_t flush),
// the re-entrancy guard and its deferred list, the op-record pools, queueing and submitting.
// Reaping is core_reap.cc, close and teardown core_close.cc; what an op does is its kind's
// table (op.h); the JS class is js.cc.
#include "core.h"

#include <errno.h>
#include <sys/sdt.h>  // USDT probes (provider iolab): docs/trace.md lists them
#include <unistd.h>

#include "addon.h"
#include "errors.h"
#include "live_objects.h"
#include "setup.h"

namespace iolab {

RingCore::RingCore(napi_env env, unsigned entries, unsigned cq_entries, bool sqpoll, RingHandle* handle)
    : env_(env), addon_(&AddonOf(env)), handle_(handle), cancel_(&ring_, &unsubmitted_, &stats_, sqpoll) {
  setup_flags_ = SetupRing(env, &ring_, entries, cq_entries, sqpoll);

  NAPI_THROW_IF_FAILED_VOID(env, napi_get_uv_event_loop(env, &loop_));
  Napi::Object resource = Napi::Object::New(env);
  napi_create_reference(env, resource, 1, &resource_);
  napi_async_init(env, resource, Napi::String::New(env, "iolab.Ring"), &async_context_);

  poll_ = new uv_poll_t;
  // The ring's own fd, polled directly: readable while CQEs wait (or an overflow), with no
  // eventfd to signal and read on every wake-up.
  uv_poll_init(loop_, poll_, ring_.ring_fd);
  poll_->data = this;
  uv_poll_start(poll_, UV_READABLE, OnPoll);
  uv_unref(reinterpret_cast<uv_handle_t*>(poll_));
  prepare_ = new uv_prepare_t;
  uv_prepare_init(loop_, prepare_);
  prepare_->data = this;
  uv_prepare_start(prepare_, OnPrepare);
  uv_unref(reinterpret_cast<uv_handle_t*>(prepare_));
  open_handles_ = 2;

  // Asynchronous: the env's teardown waits until the handles' close callbacks (code of this
  // addon) have run. With a plain cleanup hook a worker thread that ends with a Ring open has
  // the addon unloaded first (when no other thread loaded it), and libuv then calls into
  // unmapped code.
  napi_add_async_cleanup_hook(env, OnEnvCleanup, this, &cleanup_hook_);
  addon_->rings.push_back(this);
  LiveInc(Live::kRings);
}

RingCore::~RingCore() {
  for (auto& part : parts_) delete part.second;
}

// ---- the re-entrancy rule ----

void RingCore::Exit() {
  if (--depth_ == 0 && !deferred_.empty()) RunDeferred();
}

void RingCore::Defer(DeferredFn fn, void* object, intptr_t value) {
  if (depth_ == 0) fn(this, object, value);
  else deferred_.push_back({fn, object, value});
}

// The outermost exit: everything deferred, in order, the teardown last (it frees what the
// others would touch). It holds the guard itself while it runs: anything deferred meanwhile
// joins the same list.
void RingCore::RunDeferred() {
  depth_++;
  bool teardown = false;
  while (!deferred_.empty()) {
    running_.swap(deferred_);  // (a fresh vector each time cost an allocation per batch)
    for (const Deferred& d : running_) {
      if (d.fn == TearDownEntry) teardown = true;
      else d.fn(this, d.object, d.value);
    }
    running_.clear();
  }
  depth_--;
  if (teardown) FinishClose();
}

void RingCore::TearDownEntry(RingCore*, void*, intptr_t) {}  // a marker: RunDeferred runs it last

// The ring torn down and close()'s waiters resolved, now or at the outermost exit.
void RingCore::RequestTearDown() {
  if (depth_ > 0) deferred_.push_back({TearDownEntry, nullptr, 0});
  else FinishClose();
}

void RingCore::Admit() const {
  if (closing_ || torn_down_) throw RingClosedError(env_);
}

// ---- records ----

OpPool::~OpPool() {
  while (free_ != nullptr) {
    Op* next = free_->next;
    delete free_;
    free_ = next;
  }
}

Op* OpPool::Acquire(const OpClass* cls) {
  Op* op = free_;
  if (op != nullptr) {
    free_ = op->next;
    count_--;
  } else {
    op = cls->make();
  }
  op->cls = cls;
  op->next = op->prev = nullptr;
  op->cancel_wanted = op->link_pending = op->timed_out = op->parked = op->weak = false;
  op->ticket = 0;
  op->timeout_ns = 0;
  return op;
}

void OpPool::Release(Op* op, bool keep) {
  if (!keep || count_ >= 256) {
    delete op;
    return;
  }
  op->next = free_;
  free_ = op;
  count_++;
}

Op* RingCore::AcquireOp(const OpClass* cls) { return pools_[cls->pool].Acquire(cls); }

void RingCore::ReleaseOp(Op* op) {
  bool keep = op->cls->clear(env_, op);
  if (!keep) {
    Defer([](RingCore*, void* record, intptr_t) { delete static_cast<Op*>(record); }, op);
    return;
  }
  Defer(ReturnRecord, op);
}

void RingCore::ReturnRecord(RingCore* core, void* record, intptr_t) {
  Op* op = static_cast<Op*>(record);
  core->pools_[op->cls->pool].Release(op, !core->torn_down_);
}

// Holds the JS object while ops are in flight (the kernel may still use their memory).
void RingCore::Hold(bool strong) {
  if (handle_ == nullptr) return;
  if (strong) napi_reference_ref(env_, handle_->object, nullptr);
  else napi_reference_unref(env_, handle_->object, nullptr);
}

// The loop stays alive while an op that is not weak is in flight (as a handle that is ref()'d).
void RingCore::SyncLoopRef() {
  bool want = in_flight_ > weak_in_flight_ && !torn_down_;
  if (want == loop_ref_) return;
  loop_ref_ = want;
  if (want) uv_ref(reinterpret_cast<uv_handle_t*>(poll_));
  else uv_unref(reinterpret_cast<uv_handle_t*>(poll_));
}

// Ops entering the kernel: the first keeps the Ring reachable, and the loop alive unless weak.
void RingCore::AddInFlight(size_t n) {
  if (in_flight_ == 0) Hold(true);
  in_flight_ += n;
  LiveAdd(Live::kRingOps, int64_t(n));
  SyncLoopRef();
}

// One op fewer in flight; at none the loop may exit and the JS object may be collected, and a
// Ring that is closing is torn down (per the rule: once no guarded frame is left).
void RingCore::OpDone(Op* op) {
  in_flight_--;
  if (op->weak) weak_in_flight_--;
  LiveDec(Live::kRingOps);
  if (torn_down_) return;
  SyncLoopRef();
  if (in_flight_ > 0) return;
  Hold(false);
  if (closing_) RequestTearDown();
}

// An op in flight stops (weak) or starts keeping the loop alive.
void RingCore::SetWeak(Op* op, bool weak) {
  if (op->weak == weak) return;
  op->weak = weak;
  if (weak) weak_in_flight_++;
  else weak_in_flight_--;
  SyncLoopRef();
}

// ---- queueing and submitting ----

void RingCore::Queue(Op* op) {
  // What the method's caller asked (a signal, a timeout, ref: false): for the ops with a
  // Promise and the batches' members, never a stream's (which a method with no control may
  // queue; its owner sets `weak`)
  if (op->cls->pool != kStreamPool) {
    op->ticket = control_.ticket;
    op->timeout_ns = control_.timeout_ns;
    op->weak = control_.weak;
  }
  if (op->weak) weak_in_flight_++;
  AddInFlight(1);
  QueueSqe(op);
}

// Into the SQ, or behind what already waits for room (order is kept).
void RingCore::QueueSqe(Op* op) {
  if (!backlog_.empty() || !PrepSqe(op)) {
    backlog_.push_back(op);
    stats_.overflow_queued++;
  }
}

bool RingCore::PrepSqe(Op* op) {
  // An op with a timeout and its LINK_TIMEOUT go in together (a link does not span submits).
  bool linked = op->timeout_ns > 0;
  if (linked && io_uring_sq_space_left(&ring_) < 2) return false;
  struct io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (sqe == nullptr) return false;
  op->cls->prepare(sqe, op);
  io_uring_sqe_set_data(sqe, op);
  if (linked) {
    sqe->flags |= IOSQE_IO_LINK;
    op->timeout.tv_sec = op->timeout_ns / 1000000000;
    op->timeout.tv_nsec = op->timeout_ns % 1000000000;
    struct io_uring_sqe* timer = io_uring_get_sqe(&ring_);
    io_uring_prep_link_timeout(timer, &op->timeout, 0);
    timer->user_data = LinkTag(op);
    op->link_pending = true;
    unsubmitted_++;
  }
  DTRACE_PROBE4(iolab, ring_queue, op, sqe->opcode, sqe->fd, op->cls->bytes(op));
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
        // flushes the overflow; only with no other frame of the Ring below: the loop's, or a
        // ring.submit() of JS from outside) and try again; the prepare handle retries next turn
        // otherwise.
        if ((ret == -EBUSY || ret == -EAGAIN || ret == -EINTR) && depth_ <= 1) {
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

// Called from inside a stream's JS call: only submits, never reaps.
struct io_uring_sqe* RingCore::FreeSqe() {
  if (torn_down_) return nullptr;
  struct io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (sqe == nullptr && unsubmitted_ > 0 && SubmitQueued() > 0) sqe = io_uring_get_sqe(&ring_);
  if (sqe != nullptr) unsubmitted_++;
  return sqe;
}

void RingCore::OnPrepare(uv_prepare_t* handle) {
  RingCore* core = static_cast<RingCore*>(handle->data);
  if (core->torn_down_) return;
  LoopScope loop(core);
  // CQEs a JS call took off the CQ (readvBatch's direct reads) leave the ring fd unreadable:
  // they are settled here, on the loop turn after that call.
  if (!core->stash_.empty()) {
    core->ReapAndSettle();
    if (core->torn_down_) return;
  }
  if (core->cancel_.due()) core->cancel_.Resume();  // no SQE was free before
  if (core->unsubmitted_ > 0 || !core->backlog_.empty()) core->Flush();
  if (core->torn_down_) return;  // a reap in the flush ran JS that closed the Ring
  // What the parts could not queue when asked (a stream's recv cancel that found no SQE, or
  // its recv still in the backlog: the flush has moved the backlog into the SQ).
  for (auto& part : core->parts_) part.second->BeforeFlush();
  if (core->unsubmitted_ > 0) core->Flush();
  // What that submit completed at once (a send the socket took, a page-cache read) is settled
  // on this loop turn, not after another trip through epoll: one wake-up per request saved;
  // so are the CQEs a continuation that ran here took off the CQ itself (readvBatch's direct
  // reads): nothing would make the ring fd readable for them before the loop waits.
  if (!core->torn_down_ && (io_uring_cq_ready(&core->ring_) > 0 || !core->stash_.empty())) core->ReapTurns();
  if (!core->torn_down_ && !core->stash_.empty()) core->Nudge();
  core->FlushOthers();
}

// The JS this prepare callback ran (continuations of ops that completed at once) may have queued
// ops on another Ring of the thread, one whose prepare callback ran already this turn or that
// the JS made: nothing would submit them before the loop waits in epoll, maybe for good.
void RingCore::FlushOthers() {
  std::vector<RingCore*>& rings = addon_->rings;
  if (rings.size() < 2) return;
  for (int round = 0; round < 8; round++) {
    bool flushed = false;
    // by index: a flush's reap may run JS that makes or tears down Rings
    for (size_t i = 0; i < rings.size(); i++) {
      RingCore* other = rings[i];
      if (other == this || other->depth_ > 0 || (other->unsubmitted_ == 0 && other->backlog_.empty())) continue;
      other->Flush();
      flushed = true;
    }
    if (!flushed) return;
  }
}

// A NOP whose CQE (no op's: ignored) makes the ring fd readable, so the loop comes back to settle
// what is still stashed instead of waiting in epoll for good.
void RingCore::Nudge() {
  struct io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (sqe == nullptr) return;  // the SQ is full: its submit's CQEs wake the loop anyway
  io_uring_prep_nop(sqe);
  io_uring_sqe_set_data(sqe, nullptr);
  unsubmitted_++;
  SubmitQueued();
}

// ---- one op cancelled (an AbortSignal) ----

// The ops of `ticket`: those waiting for room in the SQ are settled now (ECANCELED, never sent);
// those the kernel has get an ASYNC_CANCEL by user_data. An op done already is left as it is.
void RingCore::CancelTicket(uint64_t ticket) {
  if (closed() || ticket == 0) return;
  std::vector<Op*> waiting;
  for (auto it = backlog_.begin(); it != backlog_.end();) {
    if ((*it)->ticket == ticket) {
      waiting.push_back(*it);
      it = backlog_.erase(it);
    } else {
      ++it;
    }
  }
  cancel_.CancelTicket(ticket);
  for (Op* op : waiting) OnCqe(op, -ECANCELED, 0);
}

// ---- parts ----

void RingCore::Attach(const void* key, RingPart* part) { parts_.emplace_back(key, part); }

RingPart* RingCore::Part(const void* key) const {
  for (const auto& part : parts_)
    if (part.first == key) return part.second;
  return nullptr;
}

// ---- RingClosedError ----

Napi::Error RingClosedError(napi_env env) {
  const char* message = "the Ring is closed";
  napi_ref ref = AddonOf(env).ring_closed_error;
  if (ref != nullptr) {
    napi_value ctor, arg, instance;
    if (napi_get_reference_value(env, ref, &ctor) == napi_ok && ctor != nullptr &&
        napi_create_string_utf8(env, message, NAPI_AUTO_LENGTH, &arg) == napi_ok &&
        napi_new_instance(env, ctor, 1, &arg, &instance) == napi_ok)
      return Napi::Error(env, instance);
  }
  Napi::Error error = Napi::Error::New(env, message);
  error.Value().Set("code", "ERR_RING_CLOSED");
  error.Value().Set("name", "RingClosedError");
  return error;
}

void SetRingClosedErrorClass(napi_env env, napi_value ctor) {
  Addon& addon = AddonOf(env);
  napi_ref ref;
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_reference(env, ctor, 1, &ref));
  if (addon.ring_closed_error != nullptr) napi_delete_reference(env, addon.ring_closed_error);
  addon.ring_closed_error = ref;
}

}  // namespace iolab
