// The Ring's core: io_uring setup, the event-loop binding (eventfd + uv_poll_t, uv_prepare_t
// flush), batching, reaping, close/cancel and env teardown. The JS-facing ops are in
// ring_ops.cc (argument parsing, SQE preparation, result values).
#include "ring.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <mutex>
#include <unordered_map>

#include "errors.h"
#include "live_objects.h"

namespace iolab {

// ---- RingClosedError: the class src/ring.ts registers, per env ----

static std::mutex closed_error_mutex;
static std::unordered_map<napi_env, napi_ref> closed_error_classes;

static void ForgetClosedErrorClass(void* arg) {
  std::lock_guard<std::mutex> lock(closed_error_mutex);
  closed_error_classes.erase(static_cast<napi_env>(arg));
}

void SetRingClosedErrorClass(Napi::Env env, Napi::Function ctor) {
  napi_ref ref;
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_reference(env, ctor, 1, &ref));
  std::lock_guard<std::mutex> lock(closed_error_mutex);
  auto it = closed_error_classes.find(env);
  if (it != closed_error_classes.end()) {
    napi_delete_reference(env, it->second);
    it->second = ref;
  } else {
    closed_error_classes[env] = ref;
    napi_add_env_cleanup_hook(env, ForgetClosedErrorClass, env);
  }
}

Napi::Error RingClosedError(Napi::Env env) {
  const char* message = "the Ring is closed";
  napi_ref ref = nullptr;
  {
    std::lock_guard<std::mutex> lock(closed_error_mutex);
    auto it = closed_error_classes.find(env);
    if (it != closed_error_classes.end()) ref = it->second;
  }
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

// ---- setup ----

static int ReadIoUringDisabled() {
  FILE* f = fopen("/proc/sys/kernel/io_uring_disabled", "re");
  if (f == nullptr) return -1;
  int value = -1;
  if (fscanf(f, "%d", &value) != 1) value = -1;
  fclose(f);
  return value;
}

// One sentence that says io_uring is unavailable and why (EPERM/ENOSYS from io_uring_setup).
static Napi::Error UnavailableError(Napi::Env env, int err) {
  std::string name = ErrnoName(err);
  int disabled = ReadIoUringDisabled();
  std::string message;
  if (disabled == 2) {
    message = "io_uring is unavailable: io_uring_setup was refused (" + name +
              ") because the kernel.io_uring_disabled sysctl is 2";
  } else if (err == ENOSYS) {
    message = "io_uring is unavailable: io_uring_setup was refused (ENOSYS), as a seccomp profile "
              "(Docker's default) or a kernel without io_uring does";
  } else {
    message = "io_uring is unavailable: io_uring_setup was refused (" + name +
              "), as a seccomp profile or the io_uring_disabled sysctl does";
  }
  Napi::Error error = Napi::Error::New(env, message);
  Napi::Object obj = error.Value();
  obj.Set("code", "ERR_IOURING_UNAVAILABLE");
  obj.Set("errno", Napi::Number::New(env, -err));
  obj.Set("syscall", "io_uring_setup");
  return error;
}

RingCore::RingCore(Napi::Env env, unsigned entries, unsigned cq_entries, bool sqpoll) : env_(env) {
  unsigned base = IORING_SETUP_SUBMIT_ALL;
  if (cq_entries != 0) base |= IORING_SETUP_CQSIZE;
  if (sqpoll) base |= IORING_SETUP_SQPOLL;
  // First the kernel accepts: deferred task work run only when we reap (fewest interruptions),
  // then cooperative task work, then nothing. TASKRUN_FLAG tells us when task work is pending.
  const unsigned tries[] = {
      base | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_TASKRUN_FLAG,
      base | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
      base | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG,
      base | IORING_SETUP_COOP_TASKRUN,
      base,
      base & ~IORING_SETUP_SUBMIT_ALL,
  };
  int ret = -EINVAL;
  for (unsigned flags : tries) {
    struct io_uring_params params;
    memset(&params, 0, sizeof(params));
    params.flags = flags;
    params.cq_entries = cq_entries;
    if (sqpoll) params.sq_thread_idle = 100;
    ret = io_uring_queue_init_params(entries, &ring_, &params);
    if (ret == 0) {
      setup_flags_ = flags;
      break;
    }
    if (ret != -EINVAL) break;
  }
  if (ret == -EPERM || ret == -ENOSYS || ret == -EACCES) throw UnavailableError(env, -ret);
  if (ret < 0) ThrowErrno(env, -ret, "io_uring_setup");

  event_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (event_fd_ < 0) {
    int err = errno;
    io_uring_queue_exit(&ring_);
    ThrowErrno(env, err, "eventfd");
  }
  ret = io_uring_register_eventfd(&ring_, event_fd_);
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
  static const char* const key_names[kKeyCount] = {"bytes", "fds", "truncated", "dataTruncated",
                                                   "fdsTruncated", "eof", "credentials", "from",
                                                   "maxFds", "controlFds"};
  Napi::Array keys = Napi::Array::New(env, kKeyCount);
  for (int i = 0; i < kKeyCount; i++) keys.Set(uint32_t(i), Napi::String::New(env, key_names[i]));
  napi_create_reference(env, keys, 1, &keys_);

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

napi_value RingCore::KeyValue(Key key) {
  napi_value keys, value;
  napi_get_reference_value(env_, keys_, &keys);
  napi_get_element(env_, keys, uint32_t(key), &value);
  return value;
}

void RingCore::KeyValues(napi_value* out) {
  napi_value keys;
  napi_get_reference_value(env_, keys_, &keys);
  for (int i = 0; i < kKeyCount; i++) napi_get_element(env_, keys, uint32_t(i), &out[i]);
}

RingCore::~RingCore() {
  while (free_ops_ != nullptr) {
    Op* next = free_ops_->next_free;
    delete free_ops_;
    free_ops_ = next;
  }
}

// ---- op records ----

Op* RingCore::AcquireOp(OpKind kind, const char* syscall, int fd) {
  Op* op = free_ops_;
  if (op != nullptr) {
    free_ops_ = op->next_free;
    free_count_--;
  } else {
    op = new Op;
  }
  op->ring = this;
  op->kind = kind;
  op->syscall = syscall;
  op->fd = fd;
  op->offset = 0;
  op->flags = 0;
  op->max_fds = 0;
  op->deferred = nullptr;
  op->next_free = nullptr;
  return op;
}

// Back to the pool, or freed. Only called once the kernel is done with the op's memory.
void RingCore::ReleaseOp(Op* op) {
  for (napi_ref ref : op->targets) {
    napi_delete_reference(env_, ref);
    LiveDec(Live::kHeldBuffers);
  }
  op->targets.clear();
  op->lengths.clear();
  op->iov.clear();
  op->path.clear();
  op->deferred = nullptr;
  if (torn_down_ || free_count_ >= 256 || op->bounce.capacity() > (1u << 20)) {
    delete op;
    return;
  }
  op->next_free = free_ops_;
  free_ops_ = op;
  free_count_++;
}

// Abandons an op whose promise will never be settled (only when the env is going away).
void RingCore::OpDone() {
  in_flight_--;
  LiveDec(Live::kRingOps);
  if (in_flight_ == 0 && !torn_down_) {
    uv_unref(reinterpret_cast<uv_handle_t*>(poll_));
    if (owner_ != nullptr) owner_->Hold(false);
  }
}

napi_value RingCore::Enqueue(Op* op) {
  napi_value promise;
  napi_status status = napi_create_promise(env_, &op->deferred, &promise);
  if (status != napi_ok) {
    ReleaseOp(op);
    NAPI_THROW_IF_FAILED(env_, status, nullptr);
  }
  if (in_flight_++ == 0) {
    uv_ref(reinterpret_cast<uv_handle_t*>(poll_));
    if (owner_ != nullptr) owner_->Hold(true);
  }
  LiveInc(Live::kRingOps);
  if (!backlog_.empty() || !PrepSqe(op)) {
    backlog_.push_back(op);
    stats_.overflow_queued++;
  }
  return promise;
}

// ---- submission ----

void RingCore::Flush() {
  if (torn_down_) return;
  for (int round = 0; round < 64; round++) {
    if (unsubmitted_ > 0) {
      int ret = io_uring_submit(&ring_);
      stats_.submit_calls++;
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
      stats_.sqes_submitted += ret;
      unsubmitted_ -= std::min<unsigned>(unsubmitted_, unsigned(ret));
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
  if (core->unsubmitted_ > 0 || !core->backlog_.empty()) core->Flush();
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
  for (int turn = 0; turn < 4; turn++) {
    core->ReapAndSettle();
    if (core->torn_down_ || (core->unsubmitted_ == 0 && core->backlog_.empty())) return;
    core->Flush();
    if (core->torn_down_ || io_uring_cq_ready(&core->ring_) == 0) return;
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
  } done[64];
  for (;;) {
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
      break;
    }
    empty_rounds = 0;
    for (unsigned i = 0; i < n; i++) {
      done[i].op = static_cast<Op*>(io_uring_cqe_get_data(cqes[i]));
      done[i].res = cqes[i]->res;
    }
    io_uring_cq_advance(&ring_, n);
    stats_.cqes_reaped += n;
    for (unsigned i = 0; i < n; i++)
      if (done[i].op != nullptr) Settle(done[i].op, done[i].res, false);
  }
  if (closing_ && in_flight_ == 0) FinishClose();

  napi_close_callback_scope(env_, callback_scope);  // runs nextTicks and microtasks
  napi_close_handle_scope(env_, handle_scope);
  reaping_ = false;
}

// Settles one op with its CQE result (ring_ops.cc builds the value), then releases it.
void SettleOp(napi_env env, Op* op, int res, bool closing);
void DiscardOpResult(Op* op, int res);

void RingCore::Settle(Op* op, int res, bool in_cleanup) {
  if (in_cleanup) {
    DiscardOpResult(op, res);
  } else {
    try {
      SettleOp(env_, op, res, closing_);
    } catch (const Napi::Error&) {
      // Building the value failed (out of memory in V8): nothing sensible left to do.
    }
  }
  ReleaseOp(op);
  OpDone();
}

// ---- close ----

void RingCore::SubmitCancelAll() {
  struct io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (sqe == nullptr) {
    int ret = io_uring_submit(&ring_);
    if (ret > 0) unsubmitted_ -= std::min<unsigned>(unsubmitted_, unsigned(ret));
    sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) return;
  }
  io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY);
  io_uring_sqe_set_data(sqe, nullptr);
  unsubmitted_++;
  int ret = io_uring_submit(&ring_);
  stats_.submit_calls++;
  if (ret > 0) {
    stats_.sqes_submitted += ret;
    unsubmitted_ -= std::min<unsigned>(unsubmitted_, unsigned(ret));
  }
}

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
  // Ops that never reached the kernel are rejected now.
  while (!backlog_.empty()) {
    Op* op = backlog_.front();
    backlog_.pop_front();
    napi_reject_deferred(env_, op->deferred, RingClosedError(env_).Value());
    ReleaseOp(op);
    OpDone();
  }
  if (in_flight_ > 0) SubmitCancelAll();
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
  owner_ = nullptr;
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
  uv_poll_stop(poll_);
  uv_prepare_stop(prepare_);
  close(event_fd_);  // not polled any more (libuv allows closing once the poll is stopped)
  event_fd_ = -1;
  uv_close(reinterpret_cast<uv_handle_t*>(poll_), OnHandleClosed);
  uv_close(reinterpret_cast<uv_handle_t*>(prepare_), OnHandleClosed);
  if (!in_cleanup) napi_async_destroy(env_, async_context_);
  napi_delete_reference(env_, resource_);
  napi_delete_reference(env_, keys_);
  LiveDec(Live::kRings);
  if (owner_ != nullptr) {
    if (in_flight_ > 0 && !in_cleanup) owner_->Hold(false);
    owner_->Detach();
    owner_ = nullptr;
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
  while (!backlog_.empty()) {
    Op* op = backlog_.front();
    backlog_.pop_front();
    ReleaseOp(op);
    OpDone();
  }
  if (in_flight_ > 0) SubmitCancelAll();
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  while (in_flight_ > 0) {
    struct io_uring_cqe* cqe = nullptr;
    struct __kernel_timespec timeout = {0, 50 * 1000 * 1000};
    int ret = io_uring_wait_cqe_timeout(&ring_, &cqe, &timeout);
    if (ret == 0 && cqe != nullptr) {
      Op* op = static_cast<Op*>(io_uring_cqe_get_data(cqe));
      int res = cqe->res;
      io_uring_cqe_seen(&ring_, cqe);
      if (op != nullptr) Settle(op, res, true);
      continue;
    }
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - start.tv_sec >= 3) break;
    if (ret == -ETIME) SubmitCancelAll();
  }
  // Whatever is still in flight keeps its memory (leaked): the kernel may still write to it.
  TearDown(true);
}

}  // namespace iolab
