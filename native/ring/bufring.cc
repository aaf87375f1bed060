// Provided-buffer rings and streams (bufring.h): registration, the multishot recv's
// lifecycle (rearm, ENOBUFS, pause), the ordered sends, and the events handed to JS.
#include "bufring.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include <algorithm>

#include "errors.h"
#include "live_objects.h"
#include "core.h"

namespace iolab {

enum : uint8_t { kInKernel = 0, kJs = 1, kSending = 2 };

RingStreams::~RingStreams() = default;

void RingStreams::SetDispatcher(napi_value fn, napi_value events) {
  if (dispatcher_ != nullptr) return;  // once per Ring (src/ring/ring.ts passes the same each time)
  napi_create_reference(env_, fn, 1, &dispatcher_);
  napi_create_reference(env_, events, 1, &events_array_);
}

// ---- buffer rings ----

BufRing* RingStreams::AddBufRing(unsigned count, unsigned size, napi_value* array_buffer) {
  BufRing* pool = new BufRing;
  pool->count = count;
  pool->size = size;
  pool->br_bytes = count * sizeof(struct io_uring_buf);
  pool->mem_bytes = size_t(count) * size;
  void* br = mmap(nullptr, pool->br_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  void* mem = mmap(nullptr, pool->mem_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (br == MAP_FAILED || mem == MAP_FAILED) {
    int err = errno;
    if (br != MAP_FAILED) munmap(br, pool->br_bytes);
    if (mem != MAP_FAILED) munmap(mem, pool->mem_bytes);
    delete pool;
    ThrowErrno(env_, err, "mmap");
  }
  pool->br = static_cast<struct io_uring_buf_ring*>(br);
  pool->mem = static_cast<char*>(mem);
  pool->bgid = core_->NextBgid();
  if (pool->bgid > 65535) {
    munmap(br, pool->br_bytes);
    munmap(mem, pool->mem_bytes);
    delete pool;
    ThrowRangeError(env_, "ERR_OUT_OF_RANGE", "a Ring takes at most 65536 buffer rings");
  }
  io_uring_buf_ring_init(pool->br);
  struct io_uring_buf_reg reg {};
  reg.ring_addr = reinterpret_cast<uintptr_t>(pool->br);
  reg.ring_entries = count;
  reg.bgid = uint16_t(pool->bgid);
  int ret = io_uring_register_buf_ring(core_->uring(), &reg, 0);
  if (ret < 0) {
    munmap(br, pool->br_bytes);
    munmap(mem, pool->mem_bytes);
    delete pool;
    ThrowErrno(env_, -ret, "io_uring_register_buf_ring");
  }
  const int mask = io_uring_buf_ring_mask(count);
  for (unsigned i = 0; i < count; i++) io_uring_buf_ring_add(pool->br, pool->at(i), size, uint16_t(i), mask, int(i));
  io_uring_buf_ring_advance(pool->br, int(count));
  pool->state.assign(count, kInKernel);
  pool->in_kernel = count;
  pool->refs = 1;  // the registration
  pools_.push_back(pool);
  LiveInc(Live::kBufferRings);
  // JS sees the memory as one ArrayBuffer; the memory stays until it is collected too.
  if (napi_create_external_arraybuffer(env_, pool->mem, pool->mem_bytes, FinalizeArrayBuffer, pool, array_buffer) == napi_ok) {
    pool->refs++;
    napi_create_reference(env_, *array_buffer, 0, &pool->array_buffer);
  } else {
    throw Napi::Error(env_, Napi::Error::New(env_, "could not expose the buffer ring's memory").Value());
  }
  return pool;
}

BufRing* RingStreams::FindBufRing(unsigned bgid) const {
  for (BufRing* pool : pools_)
    if (pool->bgid == bgid) return pool;
  return nullptr;
}

void RingStreams::FinalizeArrayBuffer(napi_env, void*, void* hint) { Unref(static_cast<BufRing*>(hint)); }

void RingStreams::Unref(BufRing* pool) {
  if (--pool->refs > 0) return;
  if (pool->mem != nullptr) munmap(pool->mem, pool->mem_bytes);
  LiveDec(Live::kBufferRings);
  delete pool;
}

void RingStreams::ReturnBuffer(BufRing* pool, unsigned id) {
  pool->state[id] = kInKernel;
  pool->in_kernel++;
  io_uring_buf_ring_add(pool->br, pool->at(id), pool->size, uint16_t(id), io_uring_buf_ring_mask(pool->count), 0);
  io_uring_buf_ring_advance(pool->br, 1);
  if (!starved_.empty() && !closing_) WakeStarved(pool);
}

void RingStreams::Release(BufRing* pool, unsigned id) { ReturnBuffer(pool, id); }

// ---- streams ----

int RingStreams::Open(int fd, BufRing* pool, size_t pause_at) {
  RingStream* s = new RingStream;
  s->fd = fd;
  s->pool = pool;
  s->pause_at = pause_at;
  if (!free_tokens_.empty()) {
    s->token = free_tokens_.back();
    free_tokens_.pop_back();
    streams_[size_t(s->token)] = s;
    core_->counters()->stream_slots_reused++;
  } else {
    s->token = int(streams_.size());
    streams_.push_back(s);
  }
  LiveInc(Live::kRingStreams);
  try {
    ArmRecv(s);
  } catch (...) {
    streams_[size_t(s->token)] = nullptr;
    free_tokens_.push_back(s->token);
    LiveDec(Live::kRingStreams);
    delete s;
    throw;
  }
  return s->token;
}

RingStream* RingStreams::Find(int token) const {
  return token >= 0 && size_t(token) < streams_.size() ? streams_[size_t(token)] : nullptr;
}

void RingStreams::Emit(RingStream* s, StreamEvent type, int32_t a, int32_t b) {
  events_.insert(events_.end(), {s->token, int32_t(type), a, b});
}

void RingStreams::ArmRecv(RingStream* s) {
  Op* op = core_->AcquireOp(OpKind::kRecvMultishot, s->fd);
  op->stream = s;
  op->offset = s->pool->bgid;
  s->recv = op;
  s->recv_cancel_sent = false;
  s->cancel_due = false;
  try {
    core_->EnqueueSilent(op);  // gives the record back when it throws
  } catch (...) {
    s->recv = nullptr;
    throw;
  }
}

// Cancels the armed recv by its user_data; the cancel's own CQE carries none and is ignored.
// A recv still in the core's backlog is not in the kernel for a cancel to find, and the SQ
// may have no free entry: then the cancel is due, and the prepare handle retries it.
void RingStreams::CancelRecv(RingStream* s) {
  if (s->recv == nullptr || s->recv_cancel_sent) return;
  struct io_uring_sqe* sqe = s->recv->in_kernel ? core_->FreeSqe() : nullptr;
  if (sqe == nullptr) {
    if (!s->cancel_due) cancels_due_.push_back(s->token);
    s->cancel_due = true;
    return;
  }
  io_uring_prep_cancel(sqe, s->recv, 0);
  io_uring_sqe_set_data(sqe, nullptr);
  s->recv_cancel_sent = true;
  s->cancel_due = false;
}

void RingStreams::RetryCancels() {
  std::vector<int> due;
  due.swap(cancels_due_);
  for (int token : due) {
    RingStream* s = Find(token);  // finished meanwhile (its token maybe reused): no flag set
    if (s == nullptr || !s->cancel_due) continue;
    s->cancel_due = false;
    CancelRecv(s);
  }
}

void RingStreams::MaybeRearm(RingStream* s) {
  if (closing_ || s->closing || s->recv != nullptr || s->recv_ended || s->paused || s->starved) return;
  ArmRecv(s);
}

// One buffer came back to pool: the stream that has waited longest for one and can take it is
// armed again (not every starved stream: with thousands waiting, all but one would get ENOBUFS
// again; not a paused one, which would keep the wake-up and leave the buffer unused).
void RingStreams::WakeStarved(BufRing* pool) {
  auto it = std::find_if(starved_.begin(), starved_.end(), [pool](RingStream* s) { return s->pool == pool && !s->paused; });
  if (it == starved_.end()) return;
  RingStream* s = *it;
  starved_.erase(it);
  s->starved = false;
  MaybeRearm(s);
}

// A paused stream that also waits for a buffer, resuming: it takes one now if the pool has one.
void RingStreams::Resume(RingStream* s) {
  s->paused = false;
  if (s->starved && s->pool->in_kernel > 0) {
    starved_.erase(std::find(starved_.begin(), starved_.end(), s));
    s->starved = false;
  }
  MaybeRearm(s);
}

void RingStreams::OnRecv(RingStream* s, int res, unsigned flags) {
  if (res == -ENOBUFS) core_->counters()->recv_no_buffers++;
  if (res > 0 && (flags & IORING_CQE_F_BUFFER) != 0) {
    unsigned id = flags >> IORING_CQE_BUFFER_SHIFT;
    if (id < s->pool->count) {
      s->pool->in_kernel--;
      if (s->closing || s->recv_ended || closing_) {
        ReturnBuffer(s->pool, id);  // nobody will take it
      } else {
        s->pool->state[id] = kJs;
        Emit(s, StreamEvent::kData, int32_t(id), res);
      }
    }
  }
  if ((flags & IORING_CQE_F_MORE) != 0) return;
  s->recv = nullptr;
  bool by_us = s->recv_cancel_sent;
  s->recv_cancel_sent = false;
  if (res > 0 || s->recv_ended) {
    // The kernel ended the multishot with data (or after an end JS already heard): go on.
  } else if (closing_) {
    s->recv_ended = true;
    if (!s->closing) Emit(s, StreamEvent::kEnd, kEndClosed, 0);
  } else if (res == -ENOBUFS && !s->closing && s->pool->in_kernel > 0) {
    // The pool was empty when the kernel tried, but a buffer came back before this CQE was
    // reaped (a send's CQE ahead of it in the same batch): no later return would wake it, so
    // it is armed again now (MaybeRearm below).
  } else if (res == -ENOBUFS && !s->closing) {
    // The pool is empty; nothing was read. Armed again once a buffer comes back.
    if (!s->starved) {
      s->starved = true;
      starved_.push_back(s);
    }
  } else if (res == -ECANCELED && by_us && !s->closing) {
    // Paused: armed again once its sends drained (MaybeRearm below does nothing meanwhile).
  } else {
    // EOF (0) or an error (a cancel by cancelFd: ECANCELED); JS hears it once, unless it
    // asked for the end itself (close()).
    s->recv_ended = true;
    if (!s->closing) Emit(s, StreamEvent::kEnd, res, 0);
  }
  MaybeRearm(s);
}

bool RingStreams::OnCqe(Op* op, int res, unsigned flags, bool in_cleanup) {
  RingStream* s = op->stream;
  if (op->kind == OpKind::kRecvMultishot) {
    bool done = (flags & IORING_CQE_F_MORE) == 0;
    if (in_cleanup) {
      if (done) s->recv = nullptr;
      return done;
    }
    OnRecv(s, res, flags);
    if (done) MaybeFinish(s);
    return done;
  }
  if (in_cleanup) {
    s->sends.pop_front();
    return true;
  }
  OnSend(s, op, res);
  return op->stream == nullptr;  // OnSend clears it once the op is done with
}

void RingStreams::StartSend(RingStream* s) {
  if (s->sends.empty()) return;
  if (closing_) {
    if (s->send_error == 0) s->send_error = kEndClosed;
    s->sends_failed = true;
    DropSends(s);
    return;
  }
  core_->EnqueueSilent(s->sends.front());
}

void RingStreams::OnSend(RingStream* s, Op* op, int res) {
  if (res > 0) {
    op->sent += unsigned(res);
    s->queued_bytes -= size_t(res);
    if (op->sent < op->length && !closing_) {
      core_->Requeue(op);  // short: the rest goes out before anything queued after it
      return;
    }
  }
  if (op->sent < op->length && s->send_error == 0) s->send_error = res < 0 ? res : closing_ ? kEndClosed : -EPIPE;
  s->queued_bytes -= op->length - op->sent;
  if (op->buf_id >= 0) ReturnBuffer(s->pool, unsigned(op->buf_id));
  s->sends.pop_front();
  op->stream = nullptr;  // done with: the core releases it
  if (s->send_error != 0) {
    // The rest would not arrive in order: dropped, their buffers back in the ring.
    s->sends_failed = true;
    DropSends(s);
    if (!s->recv_ended && !s->closing) {
      s->recv_ended = true;
      Emit(s, StreamEvent::kEnd, closing_ ? kEndClosed : s->send_error, 1);  // b = 1: a send's
      s->send_error = 0;  // told through the end event
    }
    CancelRecv(s);
  } else {
    StartSend(s);
  }
  if (s->paused && s->queued_bytes <= s->pause_at / 2) Resume(s);
  MaybeFinish(s);
}

void RingStreams::DropSends(RingStream* s) {
  while (!s->sends.empty()) {
    Op* op = s->sends.front();
    s->sends.pop_front();
    if (op->buf_id >= 0) ReturnBuffer(s->pool, unsigned(op->buf_id));
    core_->DropOp(op);
  }
  s->queued_bytes = 0;
}

void RingStreams::QueueSend(RingStream* s, Op* op) {
  op->stream = s;
  if (s->sends_failed) {  // an earlier send failed: nothing goes out now
    if (op->buf_id >= 0) ReturnBuffer(s->pool, unsigned(op->buf_id));
    core_->DropOp(op);
    return;
  }
  s->sends.push_back(op);
  s->queued_bytes += op->length;
  if (s->sends.size() == 1) {
    try {
      core_->EnqueueSilent(op);
    } catch (...) {
      s->sends.pop_front();
      s->queued_bytes -= op->length;
      throw;  // the core gave the record back
    }
  }
  if (!s->paused && s->queued_bytes > s->pause_at && s->recv != nullptr) {
    s->paused = true;
    CancelRecv(s);
  }
}

void RingStreams::SendBuffer(RingStream* s, unsigned id, unsigned length) {
  Op* op = core_->AcquireOp(OpKind::kStreamSend, s->fd);
  op->buf_id = int(id);
  op->length = length;
  s->pool->state[id] = kSending;
  try {
    QueueSend(s, op);
  } catch (...) {
    s->pool->state[id] = kJs;  // still JS's: the Ring is closed
    throw;
  }
}

void RingStreams::Write(RingStream* s, Op* op) {
  op->length = unsigned(op->bounce.size());
  QueueSend(s, op);
}

bool RingStreams::Close(RingStream* s) {
  s->closing = true;
  if (s->starved) {
    starved_.erase(std::find(starved_.begin(), starved_.end(), s));
    s->starved = false;
  }
  CancelRecv(s);
  return MaybeFinish(s, false);
}

// Finished once close() was asked and nothing of it is in the kernel or queued. JS hears
// kClosed from the reap; a close() that finishes at once is told by its return value.
bool RingStreams::MaybeFinish(RingStream* s, bool emit) {
  if (!s->closing || s->recv != nullptr || !s->sends.empty()) return false;
  if (emit) {
    Emit(s, StreamEvent::kClosed, s->send_error, 0);
    freed_now_.push_back(s->token);  // reusable once JS has heard kClosed
  } else {
    free_tokens_.push_back(s->token);
  }
  streams_[size_t(s->token)] = nullptr;
  LiveDec(Live::kRingStreams);
  delete s;
  return true;
}

void RingStreams::OnClose() {
  closing_ = true;
  for (RingStream* s : starved_) s->starved = false;
  starved_.clear();
}

// ---- to JS ----

void RingStreams::Dispatch(napi_value ring_object) {
  if (dispatching_) return;  // JS called in; the outer loop picks up what it added
  dispatching_ = true;
  std::vector<int32_t> batch;
  for (int round = 0; !events_.empty() && round < 64; round++) {
    batch.swap(events_);
    events_.clear();
    napi_value fn = nullptr, events = nullptr;
    if (dispatcher_ == nullptr || ring_object == nullptr ||
        napi_get_reference_value(env_, dispatcher_, &fn) != napi_ok || fn == nullptr ||
        napi_get_reference_value(env_, events_array_, &events) != napi_ok || events == nullptr)
      break;
    napi_typedarray_type type;
    size_t length = 0;
    void* data = nullptr;
    if (napi_get_typedarray_info(env_, events, &type, &length, &data, nullptr, nullptr) != napi_ok ||
        type != napi_int32_array || length < 4)
      break;
    for (size_t at = 0; at < batch.size();) {
      if (core_->closed()) {
        // A handler closed the Ring: the chunks not handed out yet go nowhere (their memory
        // goes with the Ring); ends and closes still do.
        size_t kept = at;
        for (size_t i = at; i < batch.size(); i += 4)
          if (batch[i + 1] != int32_t(StreamEvent::kData)) kept = std::copy(batch.begin() + i, batch.begin() + i + 4, batch.begin() + kept) - batch.begin();
        batch.resize(kept);
        if (at >= batch.size()) break;
      }
      size_t n = std::min(batch.size() - at, length / 4 * 4);
      // The array is read again after each call: JS cannot reach it, but a call may GC.
      if (napi_get_typedarray_info(env_, events, &type, &length, &data, nullptr, nullptr) != napi_ok || data == nullptr) break;
      memcpy(data, batch.data() + at, n * sizeof(int32_t));
      at += n;
      napi_value count, result;
      napi_create_uint32(env_, uint32_t(n / 4), &count);
      if (napi_call_function(env_, ring_object, fn, 1, &count, &result) != napi_ok) {
        // src/ring/ring.ts catches what callbacks throw; this is its own failure: report it as
        // Node reports an uncaught exception, and go on with the rest.
        napi_value error;
        if (napi_get_and_clear_last_exception(env_, &error) == napi_ok) napi_fatal_exception(env_, error);
      }
    }
    batch.clear();
  }
  events_.clear();
  dispatching_ = false;
  free_tokens_.insert(free_tokens_.end(), freed_now_.begin(), freed_now_.end());
  freed_now_.clear();
}

// After io_uring_queue_exit: nothing of ours is in the kernel (unless ops_left: env teardown
// gave up waiting, and then the buffer memory is kept, as the ops' records are).
void RingStreams::TearDown(bool in_cleanup, bool ops_left) {
  for (RingStream* s : streams_) {
    if (s == nullptr) continue;
    if (!ops_left) {
      while (!s->sends.empty()) {
        core_->DropOp(s->sends.front());
        s->sends.pop_front();
      }
    }
    LiveDec(Live::kRingStreams);
    delete s;
  }
  streams_.clear();
  for (BufRing* pool : pools_) {
    munmap(pool->br, pool->br_bytes);
    pool->br = nullptr;
    if (ops_left) pool->mem = nullptr;  // leaked on purpose: the kernel may still write
    if (pool->array_buffer != nullptr) {
      if (!in_cleanup) {
        // Views of it read nothing from here on, and its memory can go once it is collected.
        napi_value ab = nullptr;
        if (napi_get_reference_value(env_, pool->array_buffer, &ab) == napi_ok && ab != nullptr)
          napi_detach_arraybuffer(env_, ab);
        napi_delete_reference(env_, pool->array_buffer);
      }
      pool->array_buffer = nullptr;
    }
    Unref(pool);
  }
  pools_.clear();
  if (!in_cleanup) {
    if (dispatcher_ != nullptr) napi_delete_reference(env_, dispatcher_);
    if (events_array_ != nullptr) napi_delete_reference(env_, events_array_);
  }
  dispatcher_ = events_array_ = nullptr;
}

// ---- the op table's rows ----

void PrepRecvMultishot(struct io_uring_sqe* sqe, Op* op) {
  io_uring_prep_recv_multishot(sqe, op->fd, nullptr, 0, 0);
  sqe->flags |= IOSQE_BUFFER_SELECT;
  sqe->buf_group = uint16_t(op->offset);
}

// MSG_WAITALL: a stream socket's send completes whole unless it fails; what still went out
// short is sent on from where it stopped (OnSend).
void PrepStreamSend(struct io_uring_sqe* sqe, Op* op) {
  const char* base = op->buf_id >= 0 ? op->stream->pool->at(unsigned(op->buf_id)) : op->bounce.data();
  io_uring_prep_send(sqe, op->fd, base + op->sent, op->length - op->sent, MSG_NOSIGNAL | MSG_WAITALL);
}

}  // namespace iolab
