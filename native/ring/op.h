// What the core knows of an op: a record with a common header, and the table of functions its
// kind brings (as fio's engines bring `struct ioengine_ops`). The core submits, reaps and settles
// through the table and never names a kind; each kind's record type adds its own state (io_op.h:
// ops with a Promise or in a batch, group.h: batch members, bufring.h: a stream's recv and sends).
#pragma once
#include <liburing.h>
#include <napi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace iolab {

class RingCore;
struct Op;

// What the core does with an op after its CQE (OpClass::complete).
enum class Next : uint8_t {
  kDone,   // it left the kernel for good: settle it
  kMore,   // a multishot op: more CQEs come, it stays in the kernel
  kAgain,  // queue it again (the rest of a short send, a direct read that must run through bounce memory)
};

// Which of the core's record pools a kind's records come from: kinds that share a record type
// share a pool (a record changes kind only within its type).
enum OpPoolIndex : uint8_t { kSinglePool, kMemberPool, kStreamPool, kOpPools };

// One op kind's functions, which the core calls.
struct OpClass {
  OpPoolIndex pool;
  Op* (*make)();                         // a fresh record of the kind's type
  // Lets go of what the record holds (views, fds); false when it is not worth keeping for
  // reuse (a bounce buffer over 1 MiB).
  bool (*clear)(napi_env env, Op* op);
  void (*prepare)(struct io_uring_sqe* sqe, Op* op);  // its SQE (the core sets user_data)
  size_t (*bytes)(const Op* op);         // bytes of its buffers (the ring_queue probe's)
  // Its CQE, or -ECANCELED for one that never reached the kernel (close()); no JS runs here.
  // It may change res for settle (a read that could not be copied out: -EFAULT).
  Next (*complete)(RingCore* core, Op* op, int& res, unsigned flags);
  // kDone: JS hears the result (resolve, reject, an event; JS may run: the core holds its
  // guard). The kind gives the record back (core->ReleaseOp) once nothing needs it.
  void (*settle)(RingCore* core, Op* op, int res);
  // kDone while the env goes away: nobody can be told; close what would have been handed over,
  // give the record back.
  void (*abandon)(RingCore* core, Op* op, int res);
};

// The header every record starts with: its kind, and the core's bookkeeping.
struct Op {
  const OpClass* cls = nullptr;
  // The pool's free list, or the cancel layer's list of ops in the kernel.
  Op* next = nullptr;
  Op* prev = nullptr;
  bool in_kernel = false;
  bool cancel_sent = false;
  // What the call that queued it asked (OpControl, core.h): the AbortSignal's ticket that
  // cancels it (0: none), and a timeout: a LINK_TIMEOUT SQE after its own (0: none), whose
  // timespec the kernel reads at submit.
  bool cancel_wanted = false;  // aborted while no SQE was free: the cancel layer queues it later
  bool link_pending = false;   // its LINK_TIMEOUT's CQE has not come yet
  bool timed_out = false;      // that CQE said the timeout fired (-ETIME)
  bool parked = false;         // its own CQE came first: kept until the timeout's comes
  bool weak = false;           // does not keep the event loop alive (an unref()'d socket's or server's)
  int parked_res = 0;
  unsigned parked_flags = 0;
  uint64_t ticket = 0;
  int64_t timeout_ns = 0;
  struct __kernel_timespec timeout {};
  virtual ~Op() = default;
};

// The bounce memory's allocator. It leaves new elements uninitialized on resize(): the memory is
// either filled from the caller's views (writes) or by the kernel (reads; only the `res` bytes
// it wrote are copied out), so zero-filling it per op was pure cost. Blocks of a page or more
// are page-aligned, as the page-cache pages the kernel copies from are.
template <typename T>
struct NoInitAllocator : std::allocator<T> {
  static constexpr std::align_val_t kAlign{4096};
  template <typename U>
  struct rebind { using other = NoInitAllocator<U>; };
  NoInitAllocator() = default;
  template <typename U>
  NoInitAllocator(const NoInitAllocator<U>&) noexcept {}
  // Small blocks (a 1-byte message) keep malloc's alignment; deallocate sees the same n.
  T* allocate(size_t n) {
    if (n * sizeof(T) < 4096) return static_cast<T*>(::operator new(n * sizeof(T)));
    return static_cast<T*>(::operator new(n * sizeof(T), kAlign));
  }
  void deallocate(T* p, size_t n) noexcept {
    if (n * sizeof(T) < 4096) ::operator delete(p);
    else ::operator delete(p, kAlign);
  }
  template <typename U>
  void construct(U* p) noexcept { ::new (static_cast<void*>(p)) U; }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) { ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...); }
};
using Bounce = std::vector<char, NoInitAllocator<char>>;

// A ring's records of one type, kept for reuse (their vectors keep their capacity): at most 256.
class OpPool {
 public:
  OpPool() = default;
  OpPool(const OpPool&) = delete;
  OpPool& operator=(const OpPool&) = delete;
  ~OpPool();
  Op* Acquire(const OpClass* cls);
  // A cleared record kept, or freed (keep == false: the ring is gone).
  void Release(Op* op, bool keep);

 private:
  Op* free_ = nullptr;
  size_t count_ = 0;
};

}  // namespace iolab
