// A channel end's methods that move messages (channel_end.h): send and sendMany copy into the
// outgoing queue (native/channel/channel.c checks the room and the reader's tail), take hands
// out what the incoming queue holds, many messages per call: copied into a buffer of JS's, or
// left in place (zeroCopy). Every offset and length JS gets is one channel_take checked; JS
// never sizes a view from the queue.
#include <errno.h>
#include <string.h>

#include <string>

#include "args.h"
#include "channel_end.h"
#include "errors.h"
#include "ring/copy.h"
#include "sys/mappings.h"

namespace iolab {
namespace {

// The copy channel_put makes: a view of iolab's own mmap may fault (its file shrank), so the
// kernel copies it (EFAULT, as ring.send gives); any other view is plain memory.
extern "C" int CopyIntoQueue(void* to, const void* from, size_t n) {
  if (!InMapping(from, n)) {
    memcpy(to, from, n);
    return 0;
  }
  return CopyFromView(to, from, n);
}

// Throws what a channel_put result other than 0 and 1 means.
void ThrowSendResult(napi_env env, int sent) {
  if (sent == CHANNEL_SEND_FAULT) ThrowErrno(env, EFAULT, "send");  // as ring.send of the same view
  if (sent == CHANNEL_SEND_PEER_CLOSED) ThrowError(env, "ERR_CHANNEL_CLOSED", "the other side closed the channel");
  if (sent == CHANNEL_SEND_CORRUPT)
    ThrowError(env, "ERR_CHANNEL_PROTOCOL", "the queue's tail is one no reader publishes: the other side wrote over it");
}

[[noreturn]] void ThrowTooLong(napi_env env, const std::string& name, uint64_t max, uint64_t bytes) {
  ThrowArgRange(env, name, "at most " + std::to_string(max) + " bytes (half the channel's capacity, less 8)", std::to_string(bytes) + " bytes");
}

// A message's name in argument errors: "message", or "messages[i]" for element i of a list
// (index -1: the one message). Put together only when an error is thrown.
std::string MessageName(int64_t index) {
  return index < 0 ? std::string("message") : "messages[" + std::to_string(index) + "]";
}

// Puts one message (a view, or an Array of views sent as one) into the queue, unpublished:
// channel_put's result, or a throw for a message that is neither or too long. Reading an
// Array's elements may run JS (a getter) that closed the channel: then ERR_CHANNEL_CLOSED.
int PutMessage(napi_env env, ChannelEnd* end, napi_value message, int64_t index) {
  uint64_t max = channel_max_message(end->ring.capacity);
  View view;
  if (ViewOf(env, message, &view)) {
    if (view.length > max) ThrowTooLong(env, MessageName(index), max, view.length);
    struct iovec iov = {view.data, view.length};
    return channel_put(&end->ring, &iov, 1, view.length, CopyIntoQueue);
  }
  bool is_array = false;
  napi_is_array(env, message, &is_array);
  if (!is_array) ThrowArgType(env, MessageName(index), "an ArrayBufferView or an Array of them", message);
  IovecArray iov = IovecsArg(env, message, MessageName(index).c_str());
  if (end->freed) ThrowChannelClosed(env);
  uint64_t total = iov.total();
  if (total > max) ThrowTooLong(env, MessageName(index), max, total);
  return channel_put(&end->ring, iov.data(), int(iov.size()), total, CopyIntoQueue);
}

}  // namespace

// send(message) -> true: copied in and published; false: it does not fit now (nothing written).
napi_value ChannelSend(napi_env env, napi_callback_info info) {
  RawArgs<1> args(env, info);
  ChannelEnd* end = OpenEnd(env, args.self);
  int sent = PutMessage(env, end, args[0], -1);
  if (sent == 1) channel_publish(&end->ring);
  ThrowSendResult(env, sent);
  return Boolean(env, sent == 1);
}

// sendMany(messages, from) -> how many of messages[from...] were copied in, in order, all
// published at once: it stops at the first that does not fit now. A message that cannot be
// sent (no view, too long, a view that faults, the other side closed) throws once the ones
// before it are published, with `sent`: how many those were.
napi_value ChannelSendMany(napi_env env, napi_callback_info info) {
  RawArgs<2> args(env, info);
  ChannelEnd* end = OpenEnd(env, args.self);
  bool is_array = false;
  napi_is_array(env, args[0], &is_array);
  if (!is_array) ThrowArgType(env, "messages", "an Array", args[0]);
  uint32_t length = 0;
  napi_get_array_length(env, args[0], &length);
  uint32_t from = uint32_t(IntegerArg(env, args[1], "from", 0, length));
  uint32_t sent = 0;
  try {
    for (uint32_t i = from; i < length; i++) {
      napi_value message;
      NAPI_THROW_IF_FAILED(env, napi_get_element(env, args[0], i, &message), nullptr);
      if (end->freed) ThrowChannelClosed(env);  // the element's getter closed the channel
      int put = PutMessage(env, end, message, i);
      if (put == 0) break;
      ThrowSendResult(env, put);
      sent++;
    }
  } catch (Napi::Error& e) {
    if (!end->freed) channel_publish(&end->ring);
    e.Value().Set("sent", Napi::Number::New(env, sent));
    throw;
  }
  channel_publish(&end->ring);
  return Napi::Number::New(env, sent);
}

// take(pool, at, max, out) -> how many messages (> 0) this side takes at once, at most max, as
// [offset, length] pairs in out (a Uint32Array of at least 2 * max). With a pool (an
// ArrayBuffer) they are copied into it from byte `at` on, each at a multiple of 8, while they
// fit, and let go of in the queue: offsets into the pool. With none (null) they stay in the
// queue, held until the next take (zeroCopy): offsets into the region. Else 0: none there; -1:
// the other side closed and every message was taken; -2: the queue holds what no writer makes;
// -3: the next message alone does not fit in the pool's room (its length in out[1]).
napi_value ChannelTake(napi_env env, napi_callback_info info) {
  RawArgs<4> args(env, info);
  ChannelEnd* end = OpenEnd(env, args.self);
  char* pool = nullptr;
  size_t pool_bytes = 0;
  napi_valuetype type;
  napi_typeof(env, args[0], &type);
  if (type != napi_null) {
    bool is_buffer = false;
    napi_is_arraybuffer(env, args[0], &is_buffer);
    if (!is_buffer) ThrowArgType(env, "pool", "an ArrayBuffer or null", args[0]);
    void* data = nullptr;
    napi_get_arraybuffer_info(env, args[0], &data, &pool_bytes);
    pool = static_cast<char*>(data);
  }
  uint64_t at = uint64_t(IntegerArg(env, args[1], "at", 0, int64_t(pool_bytes)));
  uint32_t max = uint32_t(IntegerArg(env, args[2], "max", 1, 1 << 16));
  napi_typedarray_type out_type;
  size_t out_length = 0;
  void* out_data = nullptr;
  bool is_typed = false;
  napi_is_typedarray(env, args[3], &is_typed);
  if (is_typed) napi_get_typedarray_info(env, args[3], &out_type, &out_length, &out_data, nullptr, nullptr);
  if (!is_typed || out_type != napi_uint32_array || out_length < 2 * size_t(max))
    ThrowArgType(env, "out", "a Uint32Array of 2 * max elements", args[3]);
  uint32_t* out = static_cast<uint32_t*>(out_data);
  // a pool is filled from `at` rounded up to 8; its room is what is left past that
  uint64_t start = (at + 7) & ~uint64_t(7);
  uint64_t room = pool == nullptr ? 0 : start < pool_bytes ? pool_bytes - start : 0;
  if (pool != nullptr && room == 0) {
    out[1] = 0;
    return Napi::Number::New(env, CHANNEL_TOO_BIG);
  }
  if (end->taken.size() < max) end->taken.resize(max);
  int got = channel_take(&end->ring, end->taken.data(), max, room);
  if (got == CHANNEL_TOO_BIG) out[1] = end->taken[0].length;
  if (got <= 0) return Napi::Number::New(env, got);
  const unsigned char* region = static_cast<const unsigned char*>(end->region->addr);
  for (int i = 0; i < got; i++) {
    const channel_message& m = end->taken[size_t(i)];
    if (pool != nullptr) {
      // the bytes are the other side's, which it may change meanwhile: the copy may hold a mix
      if (m.length > 0) memcpy(pool + start, region + m.offset, m.length);
      out[2 * i] = uint32_t(start);
      start += (uint64_t(m.length) + 7) & ~uint64_t(7);
    } else {
      out[2 * i] = uint32_t(m.offset);
    }
    out[2 * i + 1] = m.length;
  }
  if (pool != nullptr) channel_release(&end->ring);  // copied: the writer may reuse the room now
  return Napi::Number::New(env, got);
}

}  // namespace iolab
