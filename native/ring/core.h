// The Ring's core: one io_uring instance owned by the JS thread and bound to Node's event loop.
//
// - Ops are queued into the SQ (or a native backlog when the SQ is full) and go to the kernel
//   in one io_uring_submit per loop turn (a uv_prepare_t flushes before the loop polls).
// - Completions arrive through an eventfd registered with the ring and watched by a uv_poll_t;
//   its callback reaps every CQE and settles the ops' Promises inside one callback scope.
// - Every op owns its memory (op.h) until its CQE has arrived, so a JS buffer that is
//   detached, shrunk or collected in flight cannot be hit by the kernel.
// - The JS Ring object is held strongly while ops are in flight, so a Ring that JS dropped is
//   not collected (and its memory not freed) before the kernel is done with it.
#pragma once
#include <liburing.h>
#include <napi.h>
#include <uv.h>

#include <deque>
#include <vector>

#include "bufring.h"
#include "cancel.h"
#include "group.h"
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

class RingCore {
 public:
  // Throws (Napi::Error) when io_uring cannot be set up.
  RingCore(napi_env env, unsigned entries, unsigned cq_entries, bool sqpoll, RingHandle* handle);

  // A clean record for an op of this kind (syscall name from the op table).
  Op* AcquireOp(OpKind kind, int fd);
  // A record that was never queued (filling it threw) goes back to the pool.
  void DropOp(Op* op);
  // Queues op (SQ or backlog), returns its Promise. Enqueue, Refuse and their group forms throw
  // RingClosedError (the record given back) once close() has begun: JS run while the method
  // read its arguments may have called it.
  napi_value Enqueue(Op* op);
  // An op that cannot be queued (err: a positive errno): a Promise rejected with the errno
  // error of its syscall, and the record back to the pool.
  napi_value Refuse(Op* op, int err);
  // Queues every op of a batch (group.h) and returns its one Promise; the core owns the
  // group from here.
  napi_value EnqueueGroup(OpGroup* group);
  // True when n SQEs can go to the kernel now, inside the call: the Ring is open, no SQPOLL
  // thread reads the SQ on its own, nothing waits in the backlog, the SQ has room for n.
  bool CanSubmitNow(size_t n) const;
  // EnqueueGroup, then submits at once. Its direct reads (kReadvDirect, into JS memory) are the
  // kernel's only inside this call: those it did not take become ordinary reads before it can,
  // and it returns once every one it took has its CQE (stashed for the next reap). When
  // CanSubmitNow no longer holds (JS run while the arguments were read queued ops or closed
  // the Ring), they become ordinary reads and the group is queued as any.
  napi_value EnqueueGroupNow(OpGroup* group);
  // A batch that was never queued (filling it threw, or err != 0: a rejected Promise instead).
  void DropGroup(OpGroup* group);
  napi_value RefuseGroup(OpGroup* group, int err, const char* syscall);
  // Sends whatever is queued to the kernel (ring.submit() and the prepare handle).
  void Flush();
  // One io_uring_submit of what the SQ holds, counted; returns its result.
  int SubmitQueued();
  // Stream ops (bufring.cc): queued without a Promise, counted in flight like any op
  // (throws RingClosedError once close() has begun); a send that went out short goes to the
  // kernel again for the rest (Requeue: still in flight). FreeSqe: an SQE whose CQE is ignored
  // (user_data 0: a stream's recv cancel), or null when the SQ stays full; it may submit but
  // never reaps, so no JS runs inside it.
  void EnqueueSilent(Op* op);
  void Requeue(Op* op);
  struct io_uring_sqe* FreeSqe();
  RingStreams* streams();  // made on first use
  struct io_uring* uring() { return &ring_; }
  unsigned NextBgid() { return next_bgid_++; }
  // ring.close(): cancels in-flight ops; the Promise resolves once all have settled.
  napi_value Close();
  // The JS object was collected: nothing can be in flight (it was held while ops were).
  void Orphan();

  bool closed() const { return closing_ || torn_down_; }
  const RingStats& stats() const { return stats_; }
  RingStats* counters() { return &stats_; }
  unsigned setup_flags() const { return setup_flags_; }
  unsigned sq_entries() const { return ring_.sq.ring_entries; }
  unsigned cq_entries() const { return ring_.cq.ring_entries; }
  size_t in_flight() const { return in_flight_; }
  // Tests: cancel as on kernels without IORING_ASYNC_CANCEL_ANY (see RingCancel).
  void RefuseCancelAny() { cancel_.RefuseCancelAny(); }

 private:
  ~RingCore();
  static void OnPoll(uv_poll_t* handle, int status, int events);
  static void OnPrepare(uv_prepare_t* handle);
  static void OnHandleClosed(uv_handle_t* handle);
  static void OnEnvCleanup(void* arg);

  void RefuseIfClosed(Op* op, OpGroup* group);
  void SubmitDirect(OpGroup* group);
  size_t StashCqes(const std::vector<Op*>& mine);
  void SettleStashed(bool in_cleanup);
  bool PrepSqe(Op* op);
  void QueueSqe(Op* op);
  void AddInFlight(size_t n);
  void ReapAndSettle();
  void DispatchStreams();
  void TearDownStreams(bool in_cleanup);
  void Settle(Op* op, int res, unsigned flags, bool in_cleanup);
  void SettleMember(Op* op, int res, bool in_cleanup);
  void Abandon(Op* op, bool in_cleanup);
  void ReleaseOp(Op* op);
  void OpDone();
  void Hold(bool strong);
  void FinishClose();
  void TearDown(bool in_cleanup);
  void CleanupBlocking();

  napi_env env_;
  uv_loop_t* loop_ = nullptr;
  struct io_uring ring_ {};
  unsigned setup_flags_ = 0;
  int event_fd_ = -1;
  uv_poll_t* poll_ = nullptr;
  uv_prepare_t* prepare_ = nullptr;
  int open_handles_ = 0;
  napi_async_context async_context_ = nullptr;
  napi_ref resource_ = nullptr;

  // CQEs taken from the CQ by SubmitDirect (in the middle of a JS call, where nothing is
  // settled), settled first by the next reap.
  struct Stashed {
    void* data;
    int res;
    unsigned flags;  // a stream's CQE needs its buffer id and IORING_CQE_F_MORE
  };
  std::vector<Stashed> stash_;
  std::vector<Op*> direct_;  // SubmitDirect's scratch (it runs no JS, so it is never re-entered)
  std::deque<Op*> backlog_;   // SQ was full; submitted in order before anything newer
  unsigned unsubmitted_ = 0;  // SQEs prepared but not yet handed to the kernel
  size_t in_flight_ = 0;      // ops not yet settled (backlog + SQ + kernel)
  OpPool pool_;
  bool reaping_ = false;
  bool closing_ = false;
  bool torn_down_ = false;
  bool cleanup_hook_ = false;
  std::vector<napi_deferred> close_waiters_;
  RingHandle* handle_ = nullptr;
  RingStats stats_;
  RingCancel cancel_;
  RingStreams* streams_ = nullptr;
  bool streams_teardown_due_ = false;  // torn down while reaping: streams freed after it
  unsigned next_bgid_ = 0;
};

}  // namespace iolab
