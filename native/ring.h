// The Ring: one io_uring instance owned by the JS thread and bound to Node's event loop.
//
// - Ops are queued into the SQ (or a native backlog when the SQ is full) and go to the kernel
//   in one io_uring_submit per loop turn (a uv_prepare_t flushes before the loop polls).
// - Completions arrive through an eventfd registered with the ring and watched by a uv_poll_t;
//   its callback reaps every CQE and settles the ops' Promises inside one callback scope.
// - Every op owns its memory (iovecs, msghdr, cmsg space, sockaddr, and a bounce buffer that
//   the kernel reads or writes instead of the JS buffer) until its CQE has arrived, so a JS
//   buffer that is detached, shrunk or collected in flight cannot be hit by the kernel. Reads
//   are copied into the JS buffer (as it is at completion) when they complete.
// - The JS Ring object is held strongly while ops are in flight, so a Ring that JS dropped is
//   not collected (and its memory not freed) before the kernel is done with it.
#pragma once
#include <liburing.h>
#include <napi.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <uv.h>

#include <deque>
#include <functional>
#include <memory>
#include <utility>
#include <string>
#include <vector>

namespace iolab {

// The kernel's IORING_MAX_ENTRIES: the most SQ entries a ring may ask for (the CQ: twice that).
constexpr unsigned kMaxRingEntries = 32768;

enum class OpKind : uint8_t {
  kNop, kRead, kWrite, kReadv, kWritev, kFsync, kSendmsg, kRecvmsg,
  kAccept, kConnect, kRecv, kSend, kClose, kSocket, kCancelFd,
};

class RingCore;

// Leaves new elements uninitialized on resize(): the bounce memory is either filled from the
// caller's views (writes) or by the kernel (reads; only the `res` bytes it wrote are copied
// out), so zero-filling it per op was pure cost.
template <typename T>
struct NoInitAllocator : std::allocator<T> {
  template <typename U>
  struct rebind { using other = NoInitAllocator<U>; };
  NoInitAllocator() = default;
  template <typename U>
  NoInitAllocator(const NoInitAllocator<U>&) noexcept {}
  template <typename U>
  void construct(U* p) noexcept { ::new (static_cast<void*>(p)) U; }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) { ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...); }
};

// One queued or in-flight op. Records are pooled per ring (vectors keep their capacity).
struct Op {
  RingCore* ring = nullptr;
  napi_deferred deferred = nullptr;
  OpKind kind = OpKind::kNop;
  const char* syscall = "nop";
  int fd = -1;
  uint64_t offset = 0;
  unsigned flags = 0;       // fsync flags, send/recv flags, socket type...
  int max_fds = 0;          // recvmsg
  std::vector<napi_ref> targets;    // views a read copies into at completion (held)
  std::vector<size_t> lengths;      // byte length of each target/source at submit
  std::vector<struct iovec> iov;    // into `bounce`
  std::vector<char, NoInitAllocator<char>> bounce;  // the memory the kernel reads or writes
  std::vector<char> control;        // cmsg space (sendmsg/recvmsg)
  struct msghdr msg {};
  struct sockaddr_storage addr {};
  socklen_t addrlen = 0;
  std::string path;                 // connect: the address, for errors
  Op* next_free = nullptr;
};

struct RingStats {
  double submit_calls = 0;   // io_uring_submit calls that entered the kernel
  double sqes_submitted = 0; // SQEs the kernel took
  double cqes_reaped = 0;    // CQEs handled (ops and internal cancels)
  double overflow_queued = 0;// ops that waited in the native backlog (SQ full)
  double cq_overflows = 0;   // times the CQ had overflowed and was flushed
};

class RingCore {
 public:
  // Throws (Napi::Error) when io_uring cannot be set up.
  RingCore(Napi::Env env, unsigned entries, unsigned cq_entries, bool sqpoll);
  ~RingCore();

  Op* AcquireOp(OpKind kind, const char* syscall, int fd);
  // Queues op (SQ or backlog), returns its Promise.
  napi_value Enqueue(Op* op);
  // Sends whatever is queued to the kernel (ring.submit() and the prepare handle).
  void Flush();
  // ring.close(): cancels in-flight ops; the Promise resolves once all have settled.
  napi_value Close();
  // The JS object was collected: nothing can be in flight (it was held while ops were).
  void Orphan();

  bool closed() const { return closing_ || torn_down_; }
  const RingStats& stats() const { return stats_; }
  unsigned setup_flags() const { return setup_flags_; }
  unsigned sq_entries() const { return ring_.sq.ring_entries; }
  unsigned cq_entries() const { return ring_.cq.ring_entries; }
  size_t in_flight() const { return in_flight_; }
  size_t backlog_size() const { return backlog_.size(); }

  // Property names of result objects, created once per ring (not re-internalized per op).
  enum Key { kBytes, kFds, kTruncated, kDataTruncated, kFdsTruncated, kEof, kCredentials, kFrom, kMaxFds, kControlFds, kKeyCount };
  napi_value KeyValue(Key key);
  // All keys at once (one reference lookup): keys[k] for k < kKeyCount.
  void KeyValues(napi_value* keys);

  // The JS wrapper: held strongly while ops are in flight, told when the core is torn down.
  struct Owner {
    virtual void Hold(bool strong) = 0;
    virtual void Detach() = 0;
  };
  void SetOwner(Owner* owner) { owner_ = owner; }

 private:
  static void OnPoll(uv_poll_t* handle, int status, int events);
  static void OnPrepare(uv_prepare_t* handle);
  static void OnHandleClosed(uv_handle_t* handle);
  static void OnEnvCleanup(void* arg);

  bool PrepSqe(Op* op);
  void ReapAndSettle();
  void Settle(Op* op, int res, bool in_cleanup);
  void ReleaseOp(Op* op);
  void OpDone();
  void SubmitCancelAll();
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
  napi_ref keys_ = nullptr;  // an array of the key strings (napi refs cannot hold strings)

  std::deque<Op*> backlog_;   // SQ was full; submitted in order before anything newer
  unsigned unsubmitted_ = 0;  // SQEs prepared but not yet handed to the kernel
  size_t in_flight_ = 0;      // ops not yet settled (backlog + SQ + kernel)
  Op* free_ops_ = nullptr;
  size_t free_count_ = 0;
  bool reaping_ = false;
  bool closing_ = false;
  bool torn_down_ = false;
  bool cleanup_hook_ = false;
  std::vector<napi_deferred> close_waiters_;
  Owner* owner_ = nullptr;
  RingStats stats_;
};

// The RingClosedError constructor (set from src/ring.ts) for this env, or a plain Error.
Napi::Error RingClosedError(Napi::Env env);

}  // namespace iolab
