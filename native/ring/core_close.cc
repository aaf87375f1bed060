// The Ring's core: close() and its cancels, the teardown (at the outermost exit, per the rule in
// core.h), the JS object collected, and env teardown.
#include <errno.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>

#include "core.h"
#include "live_objects.h"

namespace iolab {

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
  for (auto& part : parts_) part.second->OnClose();
  // Ops that never reached the kernel are settled now (RingClosedError, or a stream's end).
  while (!backlog_.empty()) {
    Op* op = backlog_.front();
    backlog_.pop_front();
    OnCqe(op, -ECANCELED, 0);
  }
  if (in_flight_ > 0) cancel_.CancelAll();
  else RequestTearDown();
  return promise;
}

void RingCore::FinishClose() {
  std::vector<napi_deferred> waiters;
  waiters.swap(close_waiters_);
  TearDown();
  ReleaseAsyncContext();
  if (in_cleanup_) return;  // nobody can be told
  napi_value undefined;
  napi_get_undefined(env_, &undefined);
  for (napi_deferred d : waiters) napi_resolve_deferred(env_, d, undefined);
}

void RingCore::Orphan() {
  handle_ = nullptr;
  // Ops in flight held the JS object, so none are left when it is collected.
  if (!torn_down_ && in_flight_ == 0) RequestTearDown();
}

void RingCore::TearDown() {
  if (torn_down_) return;
  torn_down_ = true;
  uv_poll_stop(poll_);  // before the ring fd closes: it is the fd polled
  uv_prepare_stop(prepare_);
  io_uring_queue_exit(&ring_);
  for (auto& part : parts_) part.second->TearDown(in_cleanup_, in_flight_ > 0);
  uv_close(reinterpret_cast<uv_handle_t*>(poll_), OnHandleClosed);
  uv_close(reinterpret_cast<uv_handle_t*>(prepare_), OnHandleClosed);
  std::vector<RingCore*>& rings = addon_->rings;
  rings.erase(std::find(rings.begin(), rings.end(), this));
  LiveDec(Live::kRings);
  if (handle_ != nullptr) {
    if (in_flight_ > 0 && !in_cleanup_) Hold(false);
    handle_->stats = stats_;
    handle_->core = nullptr;
    handle_ = nullptr;
  }
}

// After the teardown. A reap's callback scope open around it keeps what it opened with.
void RingCore::ReleaseAsyncContext() {
  if (resource_ == nullptr) return;
  if (!in_cleanup_) napi_async_destroy(env_, async_context_);
  napi_delete_reference(env_, resource_);
  resource_ = nullptr;
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
  if (--core->open_handles_ > 0) return;
  napi_async_cleanup_hook_handle hook = core->cleanup_hook_;
  delete core;
  // Last: an env being torn down goes on from here (and may unload this code).
  if (hook != nullptr) napi_remove_async_cleanup_hook(hook);
}

// Env teardown (process or worker exit) with the Ring still open: no JS can run any more.
// Cancel everything, WAIT for the kernel to hand back every op, then free. An op the kernel
// will not give back within the deadline is leaked on purpose (its memory may still be hit).
// A Ring closed before (its handles closing) has nothing to do here: the hook is removed, and
// the teardown let go on, by the last close callback.
void RingCore::OnEnvCleanup(napi_async_cleanup_hook_handle, void* arg) {
  static_cast<RingCore*>(arg)->CleanupBlocking();
}

void RingCore::CleanupBlocking() {
  if (torn_down_) return;
  in_cleanup_ = true;
  Guard guard(this);  // no JS runs here; records and the teardown go at its exit, as anywhere
  SettleStashed();
  while (!backlog_.empty()) {
    Op* op = backlog_.front();
    backlog_.pop_front();
    OnCqe(op, -ECANCELED, 0);
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
      OnAnyCqe(data, res, flags);
      if (cancel_.due()) cancel_.Resume();
      continue;
    }
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - start.tv_sec >= 3) break;
    if (ret == -ETIME) cancel_.CancelAll();  // again, for ops the kernel was busy with
  }
  // Whatever is still in flight keeps its memory (leaked): the kernel may still write to it.
  RequestTearDown();
}

}  // namespace iolab
