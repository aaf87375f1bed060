// Provided-buffer rings (bufring.h): registration, buffers coming back and the streams waiting
// for one, the memory freed once the Ring and its ArrayBuffer are both gone. The streams
// themselves are stream.cc.
#include "bufring.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include <algorithm>

#include "errors.h"
#include "live_objects.h"

namespace iolab {

static const char kStreamsKey = 0;  // RingStreams' key on the core

RingStreams* RingStreams::Of(RingCore* core) {
  RingPart* part = core->Part(&kStreamsKey);
  if (part != nullptr) return static_cast<RingStreams*>(part);
  RingStreams* streams = new RingStreams(core->env(), core);
  core->Attach(&kStreamsKey, streams);
  return streams;
}

RingStreams::~RingStreams() = default;

void RingStreams::SetDispatcher(napi_value fn, napi_value events) {
  if (dispatcher_ != nullptr) return;  // once per Ring (src/ring/ring.ts passes the same each time)
  napi_create_reference(env_, fn, 1, &dispatcher_);
  napi_create_reference(env_, events, 1, &events_array_);
}

BufRing* RingStreams::AddBufRing(unsigned count, unsigned size, napi_value* array_buffer) {
  if (next_bgid_ > 65535) ThrowRangeError(env_, "ERR_OUT_OF_RANGE", "a Ring takes at most 65536 buffer rings");
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
  pool->bgid = next_bgid_++;
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
  pool->state.assign(count, kBufInKernel);
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
  pool->state[id] = kBufInKernel;
  pool->in_kernel++;
  io_uring_buf_ring_add(pool->br, pool->at(id), pool->size, uint16_t(id), io_uring_buf_ring_mask(pool->count), 0);
  io_uring_buf_ring_advance(pool->br, 1);
  if (!starved_.empty() && !closing_) WakeStarved(pool);
}

void RingStreams::Release(BufRing* pool, unsigned id) { ReturnBuffer(pool, id); }

// One buffer came back to pool: the stream that has waited longest for one and can take it is
// armed again (not every starved stream: with thousands waiting, all but one would get ENOBUFS
// again; not a paused one, which would keep the wake-up and leave the buffer unused).
void RingStreams::WakeStarved(BufRing* pool) {
  auto it = std::find_if(starved_.begin(), starved_.end(), [pool](RingStream* s) { return s->pool == pool && !s->paused && !s->held; });
  if (it == starved_.end()) return;
  RingStream* s = *it;
  starved_.erase(it);
  s->starved = false;
  MaybeRearm(s);
}

void RingStreams::Unstarve(RingStream* s) {
  if (!s->starved) return;
  starved_.erase(std::find(starved_.begin(), starved_.end(), s));
  s->starved = false;
}

// A paused stream that also waits for a buffer, resuming: it takes one now if the pool has one.
void RingStreams::Resume(RingStream* s) {
  s->paused = false;
  if (s->pool->in_kernel > 0) Unstarve(s);
  MaybeRearm(s);
}

// After io_uring_queue_exit: nothing of ours is in the kernel (unless ops_left: env teardown
// gave up waiting, and then the buffer memory is kept, as the ops' records are).
void RingStreams::TearDown(bool in_cleanup, bool ops_left) {
  for (RingStream* s : streams_) {
    if (s == nullptr) continue;
    if (!ops_left) {
      while (!s->sends.empty()) {
        core_->ReleaseOp(s->sends.front());
        s->sends.pop_front();
      }
    }
    if (!s->finished) LiveDec(Live::kRingStreams);
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

}  // namespace iolab
