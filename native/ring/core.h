// The Ring's core: one io_uring instance owned by the JS thread and bound to Node's event loop.
//
// THE ONE RE-ENTRANCY RULE. Any call into JS from the addon (a stream handler, a Promise settled
// and its `then` looked up, a getter or iterator of an argument object, an element setter) can
// close the Ring, close a stream, start ops or detach buffers. So every native frame of a Ring
// that may call into JS holds a RingCore::Guard: each method of the JS class, from before its
// first argument read to its return; each reap, inside its callback scope (so what it defers,
// a teardown and close()'s Promise, is done before the continuations run); env teardown. While
// any guard is held (depth > 0):
//  - nothing is freed that a frame below may still hold: op records and batches going back to
//    their pools, finished streams giving up their slots, and the ring's own teardown wait on
//    one list, which the outermost Exit() runs, in one place (RunDeferred);
//  - a reap runs only when no other frame of the Ring is below it (from the loop, or from a
//    ring.submit() that JS called from outside the Ring), never inside a JS call of the Ring's;
//  - once close() has begun, Admit() refuses whatever would be queued: one check, one message
//    (RingClosedError).
// The loop's callbacks hold no guard between reaps: the continuations a reap's callback scope
// runs are ordinary JS, and a callback goes on only if the Ring is still there after them.
// Methods read their arguments into native memory (the op's record) before the first SQE of the
// call is queued, so no user code runs between queueing and submit. No other flag guards
// re-entrancy.
//
// - Ops are queued into the SQ (or a native backlog when the SQ is full) and go to the kernel
//   in one io_uring_submit per loop turn (a uv_prepare_t flushes before the loop polls).
// - Completions wake the loop through the ring fd itself, watched by a uv_poll_t (readable
//   while CQEs wait; the ring is COOP_TASKRUN, never DEFER_TASKRUN: setup.cc); its callback
//   reaps every CQE and settles through each op's table (op.h) inside one callback
//   scope. The core never names an op kind; parts of the Ring it does not know (its streams)
//   hang on it as RingParts.
// - The JS Ring object is held strongly while ops are in flight, so a Ring that JS dropped is
//   not collected (and its memory not freed) before the kernel is done with it.
#pragma once
#include <liburing.h>
#include <napi.h>
#include <uv.h>

#include <deque>
#include <utility>
#include <vector>

#include "addon.h"
#include "cancel.h"
#include "op.h"
#include "stats.h"

namespace iolab {

class RingCore;

// The JS object's side of the link, which the core writes but never calls into: `object` is
// the object's reference, which the core holds strongly while ops are in flight; `core` is
// cleared (and `stats` kept) when the core is torn down.
struct RingHandle {
  napi_ref object = nullptr;
  RingCore* core = nullptr;
  RingStats stats;
};

// A part of the Ring that hangs on the core (its streams and buffer rings). The core calls it at
// these points and knows nothing else of it; it is deleted after TearDown.
class RingPart {
 public:
  virtual ~RingPart() = default;
  // The prepare handle, before it flushes (what could not be queued when it was asked for).
  virtual void BeforeFlush() {}
  // After a reap, inside its callback scope and under the guard: hand what it gathered to JS.
  virtual void AfterReap(napi_value ring_object) {}
  // close() began.
  virtual void OnClose() {}
  // After io_uring_queue_exit. ops_left: ops the kernel never gave back (env teardown's
  // deadline) keep their memory.
  virtual void TearDown(bool in_cleanup, bool ops_left) {}
};

// The error of a closed Ring: the RingClosedError class src/ring/ring.ts registers for this env
// (a plain Error with its code and name until then).
Napi::Error RingClosedError(napi_env env);
void SetRingClosedErrorClass(napi_env env, napi_value ctor);

// What a method's caller asked for the ops the method queues (src/ring/ring.ts sets it just
// before the call, armOp): the ticket of its AbortSignal (0: none) and a timeout in ns (0: none).
struct OpControl {
  uint64_t ticket = 0;
  int64_t timeout_ns = 0;
  bool weak = false;  // ref: false: the ops do not keep the event loop alive
};

class RingCore {
 public:
  // Throws (Napi::Error) when io_uring cannot be set up.
  RingCore(napi_env env, unsigned entries, unsigned cq_entries, bool sqpoll, RingHandle* handle);

  // ---- the re-entrancy rule (above) ----
  class Guard {
   public:
    explicit Guard(RingCore* core) : core_(core) { core_->Enter(); }
    ~Guard() { core_->Exit(); }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

   private:
    RingCore* core_;
  };
  void Enter() { depth_++; }
  void Exit();
  // A reap that libuv's callback (the ring fd's poll, the prepare handle) began, with no other
  // frame of the Ring below: no JS is under it, so JS it runs may drain the nextTick queue.
  bool FromLoop() const { return from_loop_ && depth_ <= 1; }
  // Marks a libuv callback's frame for FromLoop (a torn-down core's memory lives until its
  // handles are closed, so the flag can be reset after any teardown inside).
  class LoopScope {
   public:
    explicit LoopScope(RingCore* core) : core_(core) { core_->from_loop_ = true; }
    ~LoopScope() { core_->from_loop_ = false; }
   private:
    RingCore* core_;
  };
  // fn(this, object, value) now, or, while a guard is held, when the outermost one is released.
  using DeferredFn = void (*)(RingCore* core, void* object, intptr_t value);
  void Defer(DeferredFn fn, void* object, intptr_t value = 0);
  // Throws RingClosedError once close() has begun (the one check before anything is queued).
  void Admit() const;
  // The control of the method on top of the stack (each method's frame sets its own and puts
  // back the one below when it returns, so a getter's nested call cannot take it); returns the
  // one it replaces.
  OpControl SwapControl(OpControl control) {
    OpControl before = control_;
    control_ = control;
    return before;
  }
  bool has_timeout() const { return control_.timeout_ns > 0; }
  // The AbortSignal of `ticket` fired: cancel its ops (RingCancel::CancelTicket).
  void CancelTicket(uint64_t ticket);

  // ---- records ----
  Op* AcquireOp(const OpClass* cls);
  // What the record holds is let go now; the record itself goes back to its pool per the rule.
  void ReleaseOp(Op* op);

  // ---- queueing (after Admit) ----
  // Into the SQ, or the backlog behind what waits already; counted in flight until settled.
  void Queue(Op* op);
  // True when n SQEs can go to the kernel now, inside the call: the Ring is open, no SQPOLL
  // thread reads the SQ on its own, nothing waits in the backlog, the SQ has room for n.
  bool CanSubmitNow(size_t n) const;
  // Submits inside a JS call. Those of `ops` of class `in_call` are over JS memory, the kernel's
  // only within this call: those it did not take get `unsent` (back to op memory, a class of
  // its own) and their SQE again before it can; it returns once each one it took has its CQE,
  // stashed for the next reap to settle.
  void SubmitInCall(Op* const* ops, size_t n, const OpClass* in_call, void (*unsent)(Op* op));
  // An SQE whose CQE is ignored (user_data 0: a stream's recv cancel), or null when the SQ stays
  // full; it may submit but never reaps.
  struct io_uring_sqe* FreeSqe();
  // Sends whatever is queued to the kernel (ring.submit() and the prepare handle).
  void Flush();
  // Every other Ring of the thread with ops queued and not submitted: submitted now.
  void FlushOthers();
  // One io_uring_submit of what the SQ holds, counted; returns its result.
  int SubmitQueued();

  // ring.close(): cancels in-flight ops; the Promise resolves once all have settled.
  napi_value Close();
  // The JS object was collected: nothing can be in flight (it was held while ops were).
  void Orphan();

  // ---- parts (RingPart), found by a key of their own ----
  void Attach(const void* key, RingPart* part);
  RingPart* Part(const void* key) const;

  napi_env env() const { return env_; }
  bool closing() const { return closing_; }
  bool in_cleanup() const { return in_cleanup_; }
  bool closed() const { return closing_ || torn_down_; }
  const RingStats& stats() const { return stats_; }
  RingStats* counters() { return &stats_; }
  unsigned setup_flags() const { return setup_flags_; }
  unsigned sq_entries() const { return ring_.sq.ring_entries; }
  unsigned cq_entries() const { return ring_.cq.ring_entries; }
  size_t in_flight() const { return in_flight_; }
  // An op in flight stops (weak) or starts keeping the event loop alive.
  void SetWeak(Op* op, bool weak);
  struct io_uring* uring() { return &ring_; }
  // Tests: cancel as on kernels without IORING_ASYNC_CANCEL_ANY (see RingCancel).
  void RefuseCancelAny() { cancel_.RefuseCancelAny(); }

 private:
  ~RingCore();
  static void OnPoll(uv_poll_t* handle, int status, int events);
  static void OnPrepare(uv_prepare_t* handle);
  static void OnHandleClosed(uv_handle_t* handle);
  static void OnEnvCleanup(napi_async_cleanup_hook_handle hook, void* arg);
  static void ReturnRecord(RingCore* core, void* op, intptr_t);
  static void TearDownEntry(RingCore* core, void*, intptr_t);

  void RunDeferred();
  void RequestTearDown();
  bool PrepSqe(Op* op);
  void QueueSqe(Op* op);
  void AddInFlight(size_t n);
  void ReapAndSettle();
  void ReapTurns();
  void Nudge();
  void Reap();
  size_t StashCqes(const std::vector<Op*>& mine);
  void SettleStashed();
  // Any CQE: a cancel's, a LINK_TIMEOUT's (LinkTag) or an op's.
  void OnAnyCqe(void* data, int res, unsigned flags);
  void OnCqe(Op* op, int res, unsigned flags);
  static uint64_t LinkTag(Op* op) { return uint64_t(reinterpret_cast<uintptr_t>(op)) | 1; }
  void OpDone(Op* op);
  void SyncLoopRef();
  void Hold(bool strong);
  void FinishClose();
  void TearDown();
  void ReleaseAsyncContext();
  void CleanupBlocking();

  napi_env env_;
  Addon* addon_;
  uv_loop_t* loop_ = nullptr;
  struct io_uring ring_ {};
  unsigned setup_flags_ = 0;
  uv_poll_t* poll_ = nullptr;
  uv_prepare_t* prepare_ = nullptr;
  int open_handles_ = 0;
  napi_async_context async_context_ = nullptr;
  napi_ref resource_ = nullptr;

  // The rule's state: how many guarded frames are on the stack, and what waits for the
  // outermost exit.
  int depth_ = 0;
  bool from_loop_ = false;  // inside OnPoll or OnPrepare (FromLoop)
  struct Deferred {
    DeferredFn fn;
    void* object;
    intptr_t value;
  };
  std::vector<Deferred> deferred_;
  std::vector<Deferred> running_;  // what RunDeferred runs now; both keep their memory between calls

  // CQEs taken from the CQ by SubmitInCall (in the middle of a JS call, where nothing is
  // settled), settled first by the next reap.
  struct Stashed {
    void* data;
    int res;
    unsigned flags;  // a stream's CQE needs its buffer id and IORING_CQE_F_MORE
  };
  std::vector<Stashed> stash_;
  std::vector<Op*> in_call_;  // SubmitInCall's scratch (it runs no JS, so it is never re-entered)
  std::deque<Op*> backlog_;   // SQ was full; submitted in order before anything newer
  unsigned unsubmitted_ = 0;  // SQEs prepared but not yet handed to the kernel
  size_t in_flight_ = 0;      // ops not yet settled (backlog + SQ + kernel)
  size_t weak_in_flight_ = 0; // those of them that are weak (op.h)
  bool loop_ref_ = false;     // the poll handle is ref()'d
  OpPool pools_[kOpPools];
  bool closing_ = false;
  bool torn_down_ = false;
  bool in_cleanup_ = false;   // env teardown: no JS can run
  // Registered from setup until the last handle's close callback, which removes it: the env's
  // teardown, once it called OnEnvCleanup, waits for that.
  napi_async_cleanup_hook_handle cleanup_hook_ = nullptr;
  std::vector<napi_deferred> close_waiters_;
  RingHandle* handle_ = nullptr;
  RingStats stats_;
  RingCancel cancel_;
  OpControl control_;
  std::vector<std::pair<const void*, RingPart*>> parts_;
};

}  // namespace iolab
