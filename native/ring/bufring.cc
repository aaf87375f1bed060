// Provided-buffer rings (bufring.h) over the stream core's pool (native/stream/stream.h:
// registration, buffers coming back and the streams waiting for one), the memory freed once the
// Ring and its ArrayBuffer are both gone. The streams
// themselves are stream.cc.
#include "bufring.h"

#include <algorithm>

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

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
  napi_typedarray_type type;
  void* data = nullptr;
  if (napi_get_typedarray_info(env_, events, &type, &events_length_, &data, nullptr, nullptr) != napi_ok || type != napi_int32_array)
    events_length_ = 0;
  events_data_ = static_cast<int32_t*>(data);
}

BufRing* RingStreams::AddBufRing(unsigned count, unsigned size, napi_value* array_buffer) {
  if (next_bgid_ > 65535) ThrowRangeError(env_, "ERR_OUT_OF_RANGE", "a Ring takes at most 65536 buffer rings");
  size_t mem_bytes = size_t(count) * size;
  void* mem = mmap(nullptr, mem_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) ThrowErrno(env_, errno, "mmap");
  BufRing* pool = new BufRing;
  const char* syscall = nullptr;
  int ret = stream_pool_register(core_->uring(), &pool->core, static_cast<unsigned char*>(mem), count, size,
                                 next_bgid_, 0, &syscall);
  if (ret < 0) {
    munmap(mem, mem_bytes);
    delete pool;
    ThrowErrno(env_, -ret, syscall);
  }
  next_bgid_++;
  pool->core.ops = &kStreamOps;
  pool->core.owner = this;
  pool->mem_bytes = mem_bytes;
  pool->state.assign(count, kBufRing);
  pool->refs = 1;  // the registration
  pools_.push_back(pool);
  LiveInc(Live::kBufferRings);
  // JS sees the memory as one ArrayBuffer; the memory stays until it is collected too.
  if (napi_create_external_arraybuffer(env_, mem, mem_bytes, FinalizeArrayBuffer, pool, array_buffer) == napi_ok) {
    pool->refs++;
    napi_create_reference(env_, *array_buffer, 0, &pool->array_buffer);
  } else {
    throw Napi::Error(env_, Napi::Error::New(env_, "could not expose the buffer ring's memory").Value());
  }
  return pool;
}

BufRing* RingStreams::FindBufRing(unsigned bgid) const {
  for (BufRing* pool : pools_)
    if (pool->bgid() == bgid) return pool;
  return nullptr;
}

void RingStreams::FinalizeArrayBuffer(napi_env, void*, void* hint) { Unref(static_cast<BufRing*>(hint)); }

void RingStreams::Unref(BufRing* pool) {
  if (--pool->refs > 0) return;
  if (pool->core.mem != nullptr) munmap(pool->core.mem, pool->mem_bytes);
  LiveDec(Live::kBufferRings);
  delete pool;
}

// The stream core wakes a starved stream per its policy (native/stream/stream.h); no JS runs.
void RingStreams::ReturnBuffer(BufRing* pool, unsigned id) {
  pool->state[id] = kBufRing;
  stream_pool_return(&pool->core, id);
}

void RingStreams::Release(BufRing* pool, unsigned id) { ReturnBuffer(pool, id); }

// The ArrayBuffer JS sees, detached (views read nothing from here on) and no longer ours to
// detach; its memory goes once it is collected too.
void RingStreams::Detach(BufRing* pool) {
  if (pool->array_buffer == nullptr) return;
  napi_value ab = nullptr;
  if (napi_get_reference_value(env_, pool->array_buffer, &ab) == napi_ok && ab != nullptr)
    napi_detach_arraybuffer(env_, ab);
  napi_delete_reference(env_, pool->array_buffer);
  pool->array_buffer = nullptr;
}

bool RingStreams::ClosePool(BufRing* pool) {
  for (const RingStream* s : streams_)
    if (s != nullptr && s->pool == pool && !s->finished) return false;
  pools_.erase(std::find(pools_.begin(), pools_.end(), pool));
  // A finished stream of it may still have its slot until the outermost frame lets go (core.h).
  core_->Defer(DropPool, this, reinterpret_cast<intptr_t>(pool));
  return true;
}

void RingStreams::DropPool(RingCore* core, void* streams, intptr_t value) {
  RingStreams* self = static_cast<RingStreams*>(streams);
  BufRing* pool = reinterpret_cast<BufRing*>(value);
  stream_pool_unregister(core->uring(), &pool->core);
  self->Detach(pool);
  self->DropReleaseList(pool, false);
  Unref(pool);
}

void RingStreams::SetReleaseList(BufRing* pool, napi_value ids) {
  napi_typedarray_type type;
  size_t length = 0;
  void* data = nullptr;
  if (napi_get_typedarray_info(env_, ids, &type, &length, &data, nullptr, nullptr) != napi_ok || type != napi_int32_array)
    ThrowTypeError(env_, "ERR_INVALID_ARG_TYPE", "The \"ids\" argument must be an Int32Array");
  DropReleaseList(pool, false);
  napi_create_reference(env_, ids, 1, &pool->release_list);
  pool->release_ids = static_cast<const int32_t*>(data);
  pool->release_capacity = length;
}

void RingStreams::DropReleaseList(BufRing* pool, bool in_cleanup) {
  if (pool->release_list != nullptr && !in_cleanup) napi_delete_reference(env_, pool->release_list);
  pool->release_list = nullptr;
  pool->release_ids = nullptr;
  pool->release_capacity = 0;
}

// After io_uring_queue_exit: nothing of ours is in the kernel (unless ops_left: env teardown
// gave up waiting, and then the buffer memory is kept, as the ops' records are).
void RingStreams::TearDown(bool in_cleanup, bool ops_left) {
  for (RingStream* s : streams_) {
    if (s == nullptr) continue;
    if (!ops_left) stream_free(&s->core);  // else kept: a send may still read its queue
    if (!s->finished) LiveDec(Live::kRingStreams);
    delete s;
  }
  streams_.clear();
  for (BufRing* pool : pools_) {
    stream_pool_unregister(nullptr, &pool->core);  // the ring is gone: its registration with it
    if (ops_left) pool->core.mem = nullptr;  // leaked on purpose: the kernel may still write
    if (!in_cleanup) Detach(pool);
    pool->array_buffer = nullptr;
    DropReleaseList(pool, in_cleanup);
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
