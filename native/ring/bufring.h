// Provided-buffer rings and streams on a Ring: the kernel picks a buffer of the ring for each
// chunk a multishot recv takes (IORING_OP_RECV with IORING_RECV_MULTISHOT and
// IOSQE_BUFFER_SELECT), JS gets (buffer id, length) through one call per reap for every
// stream's chunks (no Promise, no napi call per chunk), and sends go out of the same buffers,
// in order, one at a time per stream, the buffer going back to the ring when its send is done.
//
// Who owns a buffer: the kernel while it sits in the ring; JS from the chunk event on, until
// it releases it or hands it to a send; that send until it completes. The memory is one
// mapping, exposed to JS as one external ArrayBuffer, freed only once the ring is gone AND
// that ArrayBuffer was collected (it is detached when the Ring is torn down).
#pragma once
#include <liburing.h>
#include <napi.h>

#include <deque>
#include <vector>

#include "op.h"

namespace iolab {

class RingCore;
struct RingStream;

// The kernel's limit on a buffer ring's entries (io_uring/kbuf.c).
constexpr unsigned kMaxBufRingEntries = 32768;

// What one event is, in the Int32Array JS reads: [token, type, a, b] per event.
enum class StreamEvent : int32_t {
  kData = 1,   // a: buffer id, b: length (the buffer is JS's now)
  kEnd = 2,    // receiving ended: a = 0 (EOF), -errno, or kEndClosed; b = 1 when a send failed
  kClosed = 3, // the stream is finished (close() asked, nothing left in flight): a = first send error or 0
};
constexpr int32_t kEndClosed = -(1 << 30);  // ended by ring.close()

struct BufRing {
  unsigned bgid = 0, count = 0, size = 0;
  struct io_uring_buf_ring* br = nullptr;
  size_t br_bytes = 0;
  char* mem = nullptr;
  size_t mem_bytes = 0;
  std::vector<uint8_t> state;  // per buffer: kInKernel, kJs, kSending
  unsigned in_kernel = 0;      // buffers in the ring, as far as the CQEs reaped so far tell
  napi_ref array_buffer = nullptr;  // weak: detached at teardown when still alive
  int refs = 0;                     // the Ring's registration + the external ArrayBuffer
  char* at(unsigned id) const { return mem + size_t(id) * size; }
};

struct RingStream {
  int token = 0;
  int fd = -1;
  BufRing* pool = nullptr;
  Op* recv = nullptr;            // the armed multishot recv, or none
  bool recv_cancel_sent = false;
  bool cancel_due = false;       // its cancel waits for an SQE, or for the recv to leave the backlog
  bool recv_ended = false;       // EOF, an error or cancel: receiving is over for good
  bool paused = false;           // too much queued to send: recv cancelled until it drains
  bool starved = false;          // ENOBUFS: in the starved list, rearmed when a buffer comes back
  bool closing = false;          // close() asked: finished once nothing is in flight
  std::deque<Op*> sends;         // front: in the kernel; the rest wait their turn
  size_t queued_bytes = 0;       // bytes not yet sent
  size_t pause_at = 0;
  int send_error = 0;            // the first send's error not yet told through kEnd
  bool sends_failed = false;     // a send failed: later sends are dropped
};

// The Ring's streams and buffer rings (one per core, made on first use).
class RingStreams {
 public:
  RingStreams(napi_env env, RingCore* core) : env_(env), core_(core) {}
  ~RingStreams();

  // JS's side: the dispatcher (a module-level function, called with the ring object as `this`
  // and the event count) and the Int32Array the events are written into.
  void SetDispatcher(napi_value fn, napi_value events);
  // Registers a buffer ring; returns it and its memory as an external ArrayBuffer.
  BufRing* AddBufRing(unsigned count, unsigned size, napi_value* array_buffer);
  BufRing* FindBufRing(unsigned bgid) const;
  // Arms a multishot recv on fd; returns the stream's token.
  int Open(int fd, BufRing* pool, size_t pause_at);
  RingStream* Find(int token) const;
  void Release(BufRing* pool, unsigned id);            // JS gives a buffer back
  void SendBuffer(RingStream* s, unsigned id, unsigned length);
  void Write(RingStream* s, Op* op);                   // op's bounce holds the bytes
  bool Close(RingStream* s);  // true: finished at once (no kClosed comes)

  // The core's side.
  // A stream op's CQE; true when the op is done with (the core releases it).
  bool OnCqe(Op* op, int res, unsigned flags, bool in_cleanup);
  // Calls JS with the events gathered since the last call (inside the reap's callback scope).
  void Dispatch(napi_value ring_object);
  // Ring close: streams stop receiving; their sends are cancelled with everything else.
  void OnClose();
  // The ring is gone (after io_uring_queue_exit): free what the kernel can no longer touch.
  void TearDown(bool in_cleanup, bool ops_left);
  bool has_events() const { return !events_.empty(); }
  // Recv cancels that could not be queued when asked (the prepare handle retries them).
  bool cancels_due() const { return !cancels_due_.empty(); }
  void RetryCancels();
  bool dispatching() const { return dispatching_; }

 private:
  void Emit(RingStream* s, StreamEvent type, int32_t a, int32_t b);
  void ArmRecv(RingStream* s);
  void CancelRecv(RingStream* s);
  void ReturnBuffer(BufRing* pool, unsigned id);
  void StartSend(RingStream* s);
  void OnRecv(RingStream* s, int res, unsigned flags);
  void QueueSend(RingStream* s, Op* op);
  void OnSend(RingStream* s, Op* op, int res);
  void DropSends(RingStream* s);
  void MaybeRearm(RingStream* s);
  bool MaybeFinish(RingStream* s, bool emit = true);
  void WakeStarved(BufRing* pool);
  void Resume(RingStream* s);
  static void FinalizeArrayBuffer(napi_env env, void* data, void* hint);
  static void Unref(BufRing* pool);

  napi_env env_;
  RingCore* core_;
  napi_ref dispatcher_ = nullptr;
  napi_ref events_array_ = nullptr;
  std::vector<int32_t> events_;
  std::vector<BufRing*> pools_;
  std::vector<RingStream*> streams_;  // by token; nullptr: free
  std::vector<int> free_tokens_, freed_now_;  // freed_now_: reusable after the next dispatch
  std::vector<RingStream*> starved_;
  std::vector<int> cancels_due_;  // tokens; a stream's cancel_due says whether it still wants it
  bool dispatching_ = false;
  bool closing_ = false;
};

// The op table's rows for stream ops (op.cc).
void PrepRecvMultishot(struct io_uring_sqe* sqe, Op* op);
void PrepStreamSend(struct io_uring_sqe* sqe, Op* op);

// The Ring's methods (js.cc lists them in kMethods).
napi_value SetupBufRing(napi_env env, napi_callback_info info);
napi_value StreamsInit(napi_env env, napi_callback_info info);
napi_value RecvMultishot(napi_env env, napi_callback_info info);
napi_value BufRelease(napi_env env, napi_callback_info info);
napi_value StreamSend(napi_env env, napi_callback_info info);
napi_value StreamWrite(napi_env env, napi_callback_info info);
napi_value StreamClose(napi_env env, napi_callback_info info);
napi_value StreamQueued(napi_env env, napi_callback_info info);

}  // namespace iolab
