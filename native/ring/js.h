// The JS class Ring's shared pieces: the native half of each object, a method call's
// arguments, and queueing a filled record. js.cc defines the class and its per-op methods,
// js_batch.cc the batch methods it lists.
#pragma once
#include <errno.h>
#include <napi.h>
#include <unistd.h>

#include <type_traits>

#include "addon.h"
#include "args.h"
#include "core.h"
#include "errors.h"
#include "io_op.h"
#include "sys/unix_msg.h"
#include "sys/socket_address.h"

namespace iolab {

// The native half of one JS Ring object. Freed when the object and every method function made
// for it (js.cc) are collected: a function kept after its Ring is gone still finds it
// (closed) instead of freed memory.
struct RingJs {
  RingHandle handle;
  unsigned flags = 0, sq_entries = 0, cq_entries = 0;
  int refs = 1;  // the object, plus one per method function
  OpControl armed;  // armOp's, for the next method called (Call::Open takes it)
};

// A method call: its arguments and the Ring it was called on.
template <size_t N>
struct Call : RawArgs<N> {
  RingJs* ring = nullptr;
  Call(napi_env env, napi_callback_info info) : RawArgs<N>(env, info) {
    // Each Ring's own method functions carry it as their data; napi_unwrap (a private-symbol
    // lookup, ~60 ns) is for the prototype's methods called on it.
    void* data = this->data;
    if (data == nullptr && (napi_unwrap(env, this->self, &data) != napi_ok || data == nullptr))
      ThrowTypeError(env, "ERR_INVALID_THIS", "Value of \"this\" must be of type Ring");
    ring = static_cast<RingJs*>(data);
  }
  ~Call() {
    if (guarded_ == nullptr) return;
    guarded_->SwapControl(below_);
    guarded_->Exit();
  }
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;
  // The core, its re-entrancy guard held until the method returns (core.h): reading the
  // arguments may run JS that closes the Ring, and the core then stays as it is until this call
  // is done. RingClosedError when the core is gone already; one that is closing refuses at
  // Admit(), before anything is queued. The control armOp set (a signal, a timeout) is this
  // call's, for the ops it queues, and no other's.
  RingCore* Open(napi_env env) {
    OpControl control = ring->armed;
    ring->armed = OpControl{};
    RingCore* core = ring->handle.core;
    if (core == nullptr) throw RingClosedError(env);
    core->Enter();
    guarded_ = core;
    below_ = core->SwapControl(control);
    return core;
  }

 private:
  RingCore* guarded_ = nullptr;
  OpControl below_;
};

// A position (>= 0) on an fd that has none to seek (a pipe, a socket, a FIFO): ESPIPE, as
// pread/preadv answer. io_uring would read a pipe as a stream and a socket at 0 as one, and a
// readvBatch read that came back short would be read again over bytes already delivered. 0 when
// position is fine. One syscall: readvBatch asks once per call (a per-op ask cost the single
// ops a quarter of their rate in bench api).
inline int PositionRefusal(int fd, int64_t position) {
  return position >= 0 && lseek(fd, 0, SEEK_CUR) < 0 && errno == ESPIPE ? ESPIPE : 0;
}

// Fills the op and queues it. A fill that throws (an argument error), or a Ring that closed
// meanwhile, gives the record back to the pool; a fill that returns an errno (a fill returning
// int) makes a rejected Promise instead.
template <typename Fill>
inline napi_value Queue(RingCore* core, SingleOp* op, Fill fill) {
  int err = 0;
  try {
    if constexpr (std::is_same_v<decltype(fill()), int>) err = fill();
    else fill();
    if (err == 0) err = op->fault;
    if (err == 0) err = OpReadOnlyRefusal(op, true);
    core->Admit();
  } catch (...) {
    core->ReleaseOp(op);
    throw;
  }
  return err != 0 ? RefuseSingle(core, op, err) : QueueSingle(core, op);
}

// An op with nothing to fill from JS: queued, or RingClosedError.
inline napi_value Queue(RingCore* core, SingleOp* op) {
  return Queue(core, op, [] {});
}

// recvmsg's { maxFds?, controlFds? }: fds kept per message (default 0) and the control space
// in fds (default SCM_MAX_FD), read once per call.
struct RecvLimits {
  int max_fds = 0, control_fds = kMaxFdsPerMessage;
  RecvLimits(napi_env env, napi_value value) {
    OptionsArg options(env, value);
    if (!options.present()) return;
    Keys keys(env);
    max_fds = int(options.Integer(keys[Key::kMaxFds], "maxFds", 0, kMaxFdsPerMessage, 0));
    control_fds = int(options.Integer(keys[Key::kControlFds], "controlFds", 0, kMaxFdsPerMessage, kMaxFdsPerMessage));
  }
};

// The batch methods (js_batch.cc).
napi_value SendmsgBatch(napi_env env, napi_callback_info info);
napi_value RecvmsgBatch(napi_env env, napi_callback_info info);
napi_value CloseFds(napi_env env, napi_callback_info info);
napi_value SendmsgBatchFlat(napi_env env, napi_callback_info info);
napi_value RecvmsgBatchFlat(napi_env env, napi_callback_info info);
napi_value ReadvBatch(napi_env env, napi_callback_info info);
napi_value ReadvBatchFlat(napi_env env, napi_callback_info info);

// The buffer rings' and streams' methods (bufring_js.cc).
napi_value SetupBufRing(napi_env env, napi_callback_info info);
napi_value StreamsInit(napi_env env, napi_callback_info info);
napi_value RecvMultishot(napi_env env, napi_callback_info info);
napi_value BufRelease(napi_env env, napi_callback_info info);
napi_value BufReleaseMany(napi_env env, napi_callback_info info);
napi_value BufReleaseList(napi_env env, napi_callback_info info);
napi_value BufRingClose(napi_env env, napi_callback_info info);
napi_value StreamSend(napi_env env, napi_callback_info info);
napi_value StreamWrite(napi_env env, napi_callback_info info);
napi_value StreamClose(napi_env env, napi_callback_info info);
napi_value StreamQueued(napi_env env, napi_callback_info info);
napi_value StreamHold(napi_env env, napi_callback_info info);
napi_value StreamRef(napi_env env, napi_callback_info info);
napi_value StreamDrain(napi_env env, napi_callback_info info);

}  // namespace iolab
