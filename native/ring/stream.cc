// Streams on a Ring (bufring.h): the stream core's ops (native/stream/stream.h decides when a
// recv is armed or cancelled (ENOBUFS, pause) and what each send carries; this file queues
// them), a stream's finish, the events handed to JS once per reap, and the two op kinds (a
// stream's recv, a stream's send) whose tables the core calls.
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include <algorithm>

#include "bufring.h"
#include "copy.h"
#include "live_objects.h"
#include "sys/mappings.h"

namespace iolab {

// ---- the op kinds ----

static Op* MakeStreamOp() { return new StreamOp; }

static bool ClearStreamOp(napi_env, Op* op) {
  static_cast<StreamOp*>(op)->stream = nullptr;
  return true;
}

static void PrepRecvMultishot(struct io_uring_sqe* sqe, Op* op) {
  StreamOp* s = static_cast<StreamOp*>(op);
  stream_prep_recv(sqe, &s->stream->core, s->fd);
}

static void PrepStreamSend(struct io_uring_sqe* sqe, Op* op) {
  StreamOp* s = static_cast<StreamOp*>(op);
  stream_prep_send(sqe, &s->stream->core, s->fd);
}

static size_t NoBytes(const Op*) { return 0; }  // the kernel picks the buffer
static size_t SendBytes(const Op* op) { return static_cast<const StreamOp*>(op)->stream->core.send_len; }

static Next CompleteRecv(RingCore* core, Op* op, int& res, unsigned flags) {
  StreamOp* s = static_cast<StreamOp*>(op);
  if (core->in_cleanup()) {  // no JS can be told, and nothing goes on
    bool done = (flags & IORING_CQE_F_MORE) == 0;
    if (done) s->stream->recv = nullptr;
    return done ? Next::kDone : Next::kMore;
  }
  return s->stream->owner->OnRecvCqe(s, res, flags);
}

static Next CompleteSend(RingCore* core, Op* op, int& res, unsigned) {
  StreamOp* s = static_cast<StreamOp*>(op);
  if (core->in_cleanup()) {  // nothing goes on: the buffer back to the ring, nothing woken or sent
    RingStream* st = s->stream;
    stream_pool_stop(&st->pool->core);
    stream_send_stop(&st->core, kEndClosed);
    stream_send_done(&st->core, res);
    return Next::kDone;
  }
  return s->stream->owner->OnSendCqe(s, res);
}

// What JS hears of a stream op goes out with the reap's events (AfterReap): the record only.
static void GiveBack(RingCore* core, Op* op, int) { core->ReleaseOp(op); }

static const OpClass kStreamRecv = {kStreamPool, MakeStreamOp, ClearStreamOp, PrepRecvMultishot, NoBytes, CompleteRecv, GiveBack, GiveBack};
static const OpClass kStreamSend = {kStreamPool, MakeStreamOp, ClearStreamOp, PrepStreamSend, SendBytes, CompleteSend, GiveBack, GiveBack};

StreamOp* RingStreams::NewOp(bool send, RingStream* s) {
  StreamOp* op = static_cast<StreamOp*>(core_->AcquireOp(send ? &kStreamSend : &kStreamRecv));
  op->stream = s;
  op->fd = s->fd;
  op->weak = s->weak;
  return op;
}

// ---- opening, finding ----

int RingStreams::Open(int fd, BufRing* pool, size_t pause_at) {
  core_->Admit();
  RingStream* s = new RingStream;
  s->owner = this;
  s->fd = fd;
  s->pool = pool;
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
  stream_open(&s->core, &pool->core, s, pause_at, pause_at / 2);
  return s->token;
}

RingStream* RingStreams::Find(int token) const {
  RingStream* s = token >= 0 && size_t(token) < streams_.size() ? streams_[size_t(token)] : nullptr;
  return s != nullptr && !s->finished ? s : nullptr;
}

void RingStreams::Emit(RingStream* s, StreamEvent type, int32_t a, int32_t b) {
  events_.insert(events_.end(), {s->token, int32_t(type), a, b});
}

// ---- the recv ----

const struct stream_ops RingStreams::kStreamOps = {RingStreams::ArmRecv, RingStreams::CancelRecv, RingStreams::QueueSend, RingStreams::TrySend};

void RingStreams::ArmRecv(struct stream* core) {
  RingStream* s = static_cast<RingStream*>(core->owner);
  RingStreams* self = s->owner;
  s->recv = self->NewOp(false, s);
  s->cancel_due = false;
  self->core_->Queue(s->recv);
}

void RingStreams::CancelRecv(struct stream* core) {
  RingStream* s = static_cast<RingStream*>(core->owner);
  s->owner->CancelRecv(s);
}

// Cancels the armed recv by its user_data; the cancel's own CQE carries none and is ignored.
// A recv still in the core's backlog is not in the kernel for a cancel to find, and the SQ
// may have no free entry: then the cancel is due, and the prepare handle retries it.
void RingStreams::CancelRecv(RingStream* s) {
  if (s->recv == nullptr) return;
  struct io_uring_sqe* sqe = s->recv->in_kernel ? core_->FreeSqe() : nullptr;
  if (sqe == nullptr) {
    if (!s->cancel_due) cancels_due_.push_back(s->token);
    s->cancel_due = true;
    return;
  }
  io_uring_prep_cancel(sqe, s->recv, 0);
  io_uring_sqe_set_data(sqe, nullptr);
  s->cancel_due = false;
}

void RingStreams::BeforeFlush() {
  if (cancels_due_.empty()) return;
  std::vector<int> due;
  due.swap(cancels_due_);
  for (int token : due) {
    RingStream* s = Find(token);  // finished meanwhile: its slot is not reused before this runs
    if (s == nullptr || !s->cancel_due) continue;
    s->cancel_due = false;
    CancelRecv(s);
  }
}

void RingStreams::OnRecv(RingStream* s, int res, unsigned flags) {
  if (res > 0 && (flags & IORING_CQE_F_BUFFER) != 0) {
    unsigned id = flags >> IORING_CQE_BUFFER_SHIFT;
    if (id < s->pool->count()) {
      stream_pool_taken(&s->pool->core);
      if (s->core.closing || s->core.ended || closing_) {
        ReturnBuffer(s->pool, id);  // nobody will take it
      } else {
        s->pool->state[id] = kBufJs;
        Emit(s, StreamEvent::kData, int32_t(id), res);
      }
    }
  }
  if ((flags & IORING_CQE_F_MORE) != 0) return;
  s->recv = nullptr;
  if (res == -ENOBUFS) core_->counters()->recv_no_buffers++;
  if (closing_ && res <= 0 && !s->core.ended) {
    // ring.close() ended it: told as such, unless the stream's own close() asked first.
    s->core.armed = s->core.cancel_sent = false;
    s->core.ended = true;
    if (!s->core.closing) Emit(s, StreamEvent::kEnd, kEndClosed, 0);
  } else if (stream_recv_end(&s->core, res) == STREAM_ENDED && !s->core.closing) {
    // EOF (0) or an error (a cancel by cancelFd: ECANCELED); JS hears it once.
    Emit(s, StreamEvent::kEnd, res, 0);
  }
}

Next RingStreams::OnRecvCqe(StreamOp* op, int res, unsigned flags) {
  RingStream* s = op->stream;
  OnRecv(s, res, flags);
  if ((flags & IORING_CQE_F_MORE) != 0) return Next::kMore;
  MaybeFinish(s);
  return Next::kDone;
}

// ---- the sends (the stream core's: one in flight, the rest in the stream's queue) ----

void RingStreams::QueueSend(struct stream* core) {
  RingStream* s = static_cast<RingStream*>(core->owner);
  s->owner->core_->Queue(s->owner->NewOp(true, s));
}

// A write that nothing is ahead of goes to the socket inside the JS call, as net's uv_try_write:
// its callback can say written at once, with no SQE, CQE or second call into JS for it.
// Not a view of iolab's own mmap, which may fault: its bytes go through the queue's checked
// copy, so a view that faults sends nothing at all (the kernel's send would take its first part).
long RingStreams::TrySend(struct stream* core, const void* data, uint32_t len) {
  RingStream* s = static_cast<RingStream*>(core->owner);
  if (s->owner->send_later_ || InMapping(data, len)) return -EAGAIN;
  ssize_t took = ::send(s->fd, data, len, MSG_DONTWAIT | MSG_NOSIGNAL);
  if (took > 0) s->owner->core_->counters()->stream_sends_direct++;
  return took >= 0 ? long(took) : -long(errno);
}

// The pool's count of buffers the send side copied, moved into ring.stats.
void RingStreams::CountCopies(BufRing* pool) {
  core_->counters()->stream_sends_copied += double(pool->core.copied);
  pool->core.copied = 0;
}

Next RingStreams::OnSendCqe(StreamOp* op, int res) {
  RingStream* s = op->stream;
  enum stream_send_end end = stream_send_done(&s->core, res);
  CountCopies(s->pool);
  if (end == STREAM_SEND_FAILED) SendFailed(s);
  else if (s->drain_at >= 0 && stream_unsent(&s->core) <= size_t(s->drain_at) && !s->core.closing) {
    s->drain_at = -1;
    Emit(s, StreamEvent::kDrained, 0, 0);
  }
  MaybeFinish(s);
  return Next::kDone;
}

// The send side stopped on an error (what was queued behind is dropped): JS hears it once, as
// the end of receiving, which stops too, since what it echoes would not arrive in order. Sends
// that ring.close() cut short (cancelled: ECANCELED) are told as its end.
void RingStreams::SendFailed(RingStream* s) {
  s->send_error = closing_ ? kEndClosed : s->core.send_error;
  if (!s->core.ended && !s->core.closing) {
    Emit(s, StreamEvent::kEnd, s->send_error, 1);  // b = 1: a send's
    s->send_error = 0;  // told through the end event
  }
  stream_end(&s->core);
}

void RingStreams::SendBuffer(RingStream* s, unsigned id, unsigned length) {
  core_->Admit();
  s->pool->state[id] = kBufRing;
  // ENOMEM (its buffer back, the send side stopped) only when a send is ahead: its CQE tells.
  stream_send_buffer(&s->core, id, length);
  CountCopies(s->pool);
}

static int CopyIn(void* to, const void* view, size_t n) { return CopyFromView(to, view, n); }

int RingStreams::Write(RingStream* s, const char* data, size_t length, bool later) {
  core_->Admit();
  send_later_ = later;
  int err = -stream_send_bytes(&s->core, data, uint32_t(length), CopyIn);
  send_later_ = false;
  return err;
}

// ---- pause and resume by JS (a reader that wants no more for now) ----

// Chunks the kernel took before the cancel landed still come to JS; nothing is lost, as with
// the pause for queued sends above.
bool RingStreams::Drain(RingStream* s, int64_t bytes) {
  core_->Admit();
  if (stream_unsent(&s->core) <= size_t(bytes)) {
    s->drain_at = -1;
    return false;
  }
  s->drain_at = bytes;
  return true;
}

// The armed recv follows at once; a send in flight keeps what it had (it ends when the peer
// reads), the next ones follow.
void RingStreams::SetRef(RingStream* s, bool ref) {
  s->weak = !ref;
  if (s->recv != nullptr) core_->SetWeak(s->recv, s->weak);
}

void RingStreams::Hold(RingStream* s, bool on) {
  core_->Admit();
  stream_hold(&s->core, on);
}

// ---- closing ----

bool RingStreams::Close(RingStream* s) {
  core_->Admit();
  stream_close(&s->core);
  return MaybeFinish(s, false);
}

// Finished once close() was asked and nothing of it is in the kernel or queued. JS hears
// kClosed from the reap; a close() that finishes at once is told by its return value. Its slot
// (token) is reused only once no guarded frame is left (core.h): every event of it already
// gathered reaches JS with its own token first.
bool RingStreams::MaybeFinish(RingStream* s, bool emit) {
  if (!s->core.closing || s->recv != nullptr || s->core.send_busy || s->finished) return false;
  if (emit) Emit(s, StreamEvent::kClosed, s->send_error, 0);
  s->finished = true;
  LiveDec(Live::kRingStreams);
  core_->Defer(FreeSlot, this, s->token);
  return true;
}

void RingStreams::FreeSlot(RingCore*, void* streams, intptr_t token) {
  RingStreams* self = static_cast<RingStreams*>(streams);
  if (size_t(token) >= self->streams_.size()) return;  // torn down meanwhile
  delete self->streams_[size_t(token)];
  self->streams_[size_t(token)] = nullptr;
  self->free_tokens_.push_back(int(token));
}

void RingStreams::OnClose() {
  closing_ = true;
  for (BufRing* pool : pools_) stream_pool_stop(&pool->core);
  for (RingStream* s : streams_)
    if (s != nullptr && !s->finished) stream_send_stop(&s->core, kEndClosed);  // the send in flight ends it
}

// ---- to JS ----

void RingStreams::AfterReap(napi_value ring_object) {
  // (a member, swapped with events_ each round: neither gives its memory back between reaps)
  std::vector<int32_t>& batch = reaped_;
  for (int round = 0; !events_.empty() && round < 64; round++) {
    batch.swap(events_);
    events_.clear();
    napi_value fn = nullptr;
    if (dispatcher_ == nullptr || ring_object == nullptr || events_data_ == nullptr || events_length_ < 4 ||
        napi_get_reference_value(env_, dispatcher_, &fn) != napi_ok || fn == nullptr)
      break;
    const size_t length = events_length_;
    for (size_t at = 0; at < batch.size();) {
      if (closing_) {
        // A handler closed the Ring: the chunks not handed out yet go nowhere (their memory
        // goes with the Ring); ends and closes still do.
        size_t kept = at;
        for (size_t i = at; i < batch.size(); i += 4)
          if (batch[i + 1] != int32_t(StreamEvent::kData)) kept = std::copy(batch.begin() + i, batch.begin() + i + 4, batch.begin() + kept) - batch.begin();
        batch.resize(kept);
        if (at >= batch.size()) break;
      }
      size_t n = std::min(batch.size() - at, length / 4 * 4);
      memcpy(events_data_, batch.data() + at, n * sizeof(int32_t));
      at += n;
      napi_value args[2], result;
      napi_create_uint32(env_, uint32_t(n / 4), &args[0]);
      napi_get_boolean(env_, core_->FromLoop(), &args[1]);
      if (napi_call_function(env_, ring_object, fn, 2, args, &result) != napi_ok) {
        // src/ring/stream.ts catches what handlers throw; this is its own failure: report it as
        // Node reports an uncaught exception, and go on with the rest.
        napi_value error;
        if (napi_get_and_clear_last_exception(env_, &error) == napi_ok) napi_fatal_exception(env_, error);
      }
    }
    batch.clear();
  }
  events_.clear();
}

}  // namespace iolab
