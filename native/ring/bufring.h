// Provided-buffer rings and streams on a Ring: the kernel picks a buffer of the ring for each
// chunk a multishot recv takes (IORING_OP_RECV with IORING_RECV_MULTISHOT and
// IOSQE_BUFFER_SELECT), JS gets (buffer id, length) through one call per reap for every
// stream's chunks (no Promise, no napi call per chunk), and sends go out of the same buffers,
// in order, one at a time per stream, by the stream core's send policy (native/stream/stream.h).
//
// Who owns a buffer: the kernel while it sits in the ring; JS from the chunk event on, until
// it releases it or hands it to a send; then the stream core, which sends it and gives it back
// to the ring, or copies it into the stream's queue (a send is ahead of it, or the socket is
// full) and gives it back at once. The memory is one
// mapping, exposed to JS as one external ArrayBuffer, freed only once the ring is gone AND
// that ArrayBuffer was collected (it is detached when the Ring is torn down).
//
// RingStreams is a RingPart: the core calls it at its fixed points and never names it; a
// stream's recv and sends are two op kinds (stream.cc) over StreamOp records.
#pragma once
#include <liburing.h>
#include <napi.h>

#include <vector>

#include "core.h"
#include "op.h"
#include "stream/stream.h"

namespace iolab {

struct RingStream;
class RingStreams;

// The kernel's limit on a buffer ring's entries (io_uring/kbuf.c).
constexpr unsigned kMaxBufRingEntries = 32768;

// What one event is, in the Int32Array JS reads: [token, type, a, b] per event.
enum class StreamEvent : int32_t {
  kData = 1,   // a: buffer id, b: length (the buffer is JS's now)
  kEnd = 2,    // receiving ended: a = 0 (EOF), -errno, or kEndClosed; b = 1 when a send failed
  kClosed = 3, // the stream is finished (close() asked, nothing left in flight): a = first send error or 0
  kDrained = 4, // the bytes queued to send fell to what streamDrain asked for
};
constexpr int32_t kEndClosed = -(1 << 30);  // ended by ring.close()

// A buffer ring: the stream core's pool (native/stream/stream.h: the ring, its buffers, the
// starved streams) and what the Ring adds: whose each buffer is, and the memory's lifetime.
struct BufRing {
  struct stream_pool core {};
  size_t mem_bytes = 0;
  std::vector<uint8_t> state;  // per buffer: kBufJs while JS holds it, else kBufRing
  napi_ref array_buffer = nullptr;  // weak: detached at teardown when still alive
  // The Int32Array JS lists ids in for bufReleaseMany (src/ring/stream.ts), held; its memory is
  // off the V8 heap (count ints), so the pointer stays good while the reference holds it.
  napi_ref release_list = nullptr;
  const int32_t* release_ids = nullptr;
  size_t release_capacity = 0;
  int refs = 0;                     // the Ring's registration + the external ArrayBuffer
  unsigned bgid() const { return core.bgid; }
  unsigned count() const { return core.count; }
  unsigned size() const { return core.size; }
};
// kBufRing: in the ring, or the stream core's (a send's) on the way back to it.
enum : uint8_t { kBufRing = 0, kBufJs = 1 };

// A stream's recv or send: the record of one SQE the stream core asked for (what the kernel
// touches is the core's: the provided buffers, the stream's queue).
struct StreamOp : Op {
  RingStream* stream = nullptr;
  int fd = -1;
};

// A stream: the stream core's (its recv armed, paused, starved, closing; its sends) and what the
// Ring adds: its token, the recv's record, the send error JS has not heard yet.
struct RingStream {
  struct stream core {};
  RingStreams* owner = nullptr;
  int token = 0;
  int fd = -1;
  BufRing* pool = nullptr;
  StreamOp* recv = nullptr;      // the armed multishot recv's record, or none
  bool cancel_due = false;       // its cancel waits for an SQE, or for the recv to leave the backlog
  bool weak = false;             // unref()'d: its ops do not keep the event loop alive
  int64_t drain_at = -1;         // kDrained once the unsent bytes are at most this (-1: not asked)
  bool finished = false;         // nothing left: its slot is free once the rule allows (core.h)
  int send_error = 0;            // the send side's error not yet told through kEnd
  bool closing() const { return core.closing; }
};

// A Ring's streams and buffer rings (one per core, made on first use).
class RingStreams : public RingPart {
 public:
  // This Ring's, made and hung on the core on first use.
  static RingStreams* Of(RingCore* core);
  RingStreams(napi_env env, RingCore* core) : env_(env), core_(core) {}
  ~RingStreams() override;

  // JS's side: the dispatcher (a module-level function, called with the ring object as `this`
  // and the event count) and the Int32Array the events are written into.
  void SetDispatcher(napi_value fn, napi_value events);
  // bufReleaseMany's list of ids for `pool` (JS's Int32Array, held from now on).
  void SetReleaseList(BufRing* pool, napi_value ids);
  void DropReleaseList(BufRing* pool, bool in_cleanup);
  // Registers a buffer ring; returns it and its memory as an external ArrayBuffer.
  BufRing* AddBufRing(unsigned count, unsigned size, napi_value* array_buffer);
  BufRing* FindBufRing(unsigned bgid) const;
  // Arms a multishot recv on fd; returns the stream's token.
  int Open(int fd, BufRing* pool, size_t pause_at);
  RingStream* Find(int token) const;                   // null once it is finished
  void Release(BufRing* pool, unsigned id);            // JS gives a buffer back
  // JS closes a buffer ring no unfinished stream uses (false: one does, nothing changed): it is
  // no longer found at once; unregistered and its memory detached when the guard allows.
  bool ClosePool(BufRing* pool);
  void SendBuffer(RingStream* s, unsigned id, unsigned length);
  // The bytes are copied; EFAULT (nothing queued) when the view faults, ENOMEM. `later`: not
  // offered to the socket inside the call even when nothing is ahead; they go with the next
  // submit, one io_uring_enter for the sends of every stream written meanwhile.
  int Write(RingStream* s, const char* data, size_t length, bool later = false);
  bool Close(RingStream* s);  // true: finished at once (no kClosed comes)
  void Hold(RingStream* s, bool on);  // JS pauses (true) or resumes (false) receiving
  void SetRef(RingStream* s, bool ref);  // JS's ref() (true) / unref() (false)
  // kDrained once at most `bytes` wait to be sent; false when that is so already (no event).
  bool Drain(RingStream* s, int64_t bytes);

  // The core's side (RingPart).
  void BeforeFlush() override;                  // recv cancels that could not be queued when asked
  void AfterReap(napi_value ring_object) override;  // the events gathered, to JS in one call
  void OnClose() override;                      // streams stop receiving
  void TearDown(bool in_cleanup, bool ops_left) override;

  // The stream op kinds' (stream.cc): a CQE of a stream's recv or send.
  Next OnRecvCqe(StreamOp* op, int res, unsigned flags);
  Next OnSendCqe(StreamOp* op, int res);

 private:
  void Emit(RingStream* s, StreamEvent type, int32_t a, int32_t b);
  StreamOp* NewOp(bool send, RingStream* s);
  // The stream core's stream_ops: arm queues the recv's record, cancel its cancel, send a send's.
  static const struct stream_ops kStreamOps;
  static void ArmRecv(struct stream* core);
  static void CancelRecv(struct stream* core);
  static void QueueSend(struct stream* core);
  static long TrySend(struct stream* core, const void* data, uint32_t len);
  void CancelRecv(RingStream* s);
  void ReturnBuffer(BufRing* pool, unsigned id);
  void OnRecv(RingStream* s, int res, unsigned flags);
  void SendFailed(RingStream* s);
  void CountCopies(BufRing* pool);
  bool MaybeFinish(RingStream* s, bool emit = true);
  static void FreeSlot(RingCore* core, void* streams, intptr_t token);
  static void DropPool(RingCore* core, void* streams, intptr_t pool);
  void Detach(BufRing* pool);
  static void FinalizeArrayBuffer(napi_env env, void* data, void* hint);
  static void Unref(BufRing* pool);

  napi_env env_;
  RingCore* core_;
  napi_ref dispatcher_ = nullptr;
  napi_ref events_array_ = nullptr;
  // The events array's memory, read once: JS never detaches it, and at 16 KiB it is off the V8
  // heap, where a GC does not move it.
  int32_t* events_data_ = nullptr;
  size_t events_length_ = 0;
  std::vector<int32_t> reaped_;  // the events being handed to JS (AfterReap)
  std::vector<int32_t> events_;
  std::vector<BufRing*> pools_;
  unsigned next_bgid_ = 0;
  std::vector<RingStream*> streams_;  // by token; nullptr: free
  std::vector<int> free_tokens_;
  std::vector<int> cancels_due_;  // tokens; a stream's cancel_due says whether it still wants it
  bool closing_ = false;
  bool send_later_ = false;  // a Write(later) is under way: TrySend takes nothing
};

}  // namespace iolab
