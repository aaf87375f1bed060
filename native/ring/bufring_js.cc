// The Ring's methods for buffer rings and streams (bufring.h); src/ring/ring.ts wraps them in
// class BufferRing and RingStream. Each checks what it can cheaply and throws before touching
// the kernel; a buffer JS does not hold (released, or handed to a send) is refused, so the
// buffer ring never gets an id twice.
#include <errno.h>
#include <sys/socket.h>

#include <string>
#include <vector>

#include "bufring.h"
#include "js.h"

namespace iolab {

// setupBufRing(count, size) -> [bgid, ArrayBuffer of count * size bytes]
napi_value SetupBufRing(napi_env env, napi_callback_info info) {
  Call<2> call(env, info);
  RingCore* core = call.Open(env);
  unsigned count = unsigned(IntegerArg(env, call[0], "count", 1, kMaxBufRingEntries));
  if ((count & (count - 1)) != 0)
    ThrowArgRange(env, "count", "a power of two (the kernel's rule for a buffer ring)", std::to_string(count));
  unsigned size = unsigned(IntegerArg(env, call[1], "size", 1, 1 << 20));
  if (uint64_t(count) * size > (uint64_t(1) << 32))
    ThrowArgRange(env, "count * size", "<= 4 GiB", std::to_string(uint64_t(count) * size));
  core->Admit();
  napi_value array_buffer;
  BufRing* pool = RingStreams::Of(core)->AddBufRing(count, size, &array_buffer);
  napi_value out, bgid;
  napi_create_array_with_length(env, 2, &out);
  napi_create_uint32(env, pool->bgid(), &bgid);
  napi_set_element(env, out, 0, bgid);
  napi_set_element(env, out, 1, array_buffer);
  return out;
}

// streamsInit(dispatch, events): the module-level function JS events go to, and its array.
napi_value StreamsInit(napi_env env, napi_callback_info info) {
  Call<2> call(env, info);
  RingCore* core = call.Open(env);
  napi_valuetype type;
  napi_typeof(env, call[0], &type);
  if (type != napi_function) ThrowArgType(env, "dispatch", "a function", call[0]);
  bool is_typed = false;
  napi_is_typedarray(env, call[1], &is_typed);
  if (!is_typed) ThrowArgType(env, "events", "an Int32Array", call[1]);
  core->Admit();
  RingStreams::Of(core)->SetDispatcher(call[0], call[1]);
  return nullptr;
}

static BufRing* PoolArg(napi_env env, RingCore* core, napi_value value) {
  unsigned bgid = unsigned(IntegerArg(env, value, "bufferRing", 0, 65535));
  BufRing* pool = RingStreams::Of(core)->FindBufRing(bgid);
  if (pool == nullptr) ThrowArgValue(env, "bufferRing", "must be a buffer ring of this Ring", value);
  return pool;
}

static unsigned HeldBufferArg(napi_env env, BufRing* pool, napi_value value) {
  unsigned id = unsigned(IntegerArg(env, value, "id", 0, pool->count() - 1));
  if (pool->state[id] != kBufJs)
    ThrowError(env, "ERR_RING_BUFFER_RETURNED",
              "buffer " + std::to_string(id) + " is not held: it was released or sent, and belongs to the buffer ring again");
  return id;
}

static RingStream* StreamArg(napi_env env, RingCore* core, napi_value value) {
  int token = int(IntegerArg(env, value, "stream", 0, INT32_MAX));
  RingStream* s = RingStreams::Of(core)->Find(token);
  if (s == nullptr || s->closing()) ThrowError(env, "ERR_RING_STREAM_CLOSED", "the stream is closed");
  return s;
}

// recvMultishot(fd, bgid, pauseAt) -> the stream's token. The fd must be a socket: asked now,
// so the error comes as the call's, not as an end later.
napi_value RecvMultishot(napi_env env, napi_callback_info info) {
  Call<3> call(env, info);
  RingCore* core = call.Open(env);
  int fd = FdArg(env, call[0]);
  BufRing* pool = PoolArg(env, core, call[1]);
  size_t pause_at = size_t(IntegerArg(env, call[2], "options.pauseAt", 1, kMaxSafeInteger));
  int type;
  socklen_t len = sizeof(type);
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0) ThrowErrno(env, errno, "recv");
  return Napi::Number::New(env, RingStreams::Of(core)->Open(fd, pool, pause_at));
}

// bufRelease(bgid, id): the buffer goes back to the kernel.
napi_value BufRelease(napi_env env, napi_callback_info info) {
  Call<2> call(env, info);
  RingCore* core = call.Open(env);
  BufRing* pool = PoolArg(env, core, call[0]);
  unsigned id = HeldBufferArg(env, pool, call[1]);
  core->Admit();
  RingStreams::Of(core)->Release(pool, id);
  return nullptr;
}

// bufReleaseList(bgid, ids): the Int32Array bufReleaseMany reads its ids from (src/ring/stream.ts
// fills it while a dispatch copies chunks out); given once, so no call reads an array's info.
napi_value BufReleaseList(napi_env env, napi_callback_info info) {
  Call<2> call(env, info);
  RingCore* core = call.Open(env);
  BufRing* pool = PoolArg(env, core, call[0]);
  core->Admit();
  RingStreams::Of(core)->SetReleaseList(pool, call[1]);
  return nullptr;
}

// bufReleaseMany(bgid, count): the first count ids of the pool's release list back to the kernel,
// as bufRelease each: one call for every chunk a dispatch copied out. Each is checked before any
// goes back, so a bad one changes nothing.
napi_value BufReleaseMany(napi_env env, napi_callback_info info) {
  Call<2> call(env, info);
  RingCore* core = call.Open(env);
  BufRing* pool = PoolArg(env, core, call[0]);
  size_t count = size_t(IntegerArg(env, call[1], "count", 0, double(pool->release_capacity)));
  core->Admit();
  const int32_t* ids = pool->release_ids;
  for (size_t i = 0; i < count; i++) {
    if (ids[i] < 0 || unsigned(ids[i]) >= pool->count() || pool->state[ids[i]] != kBufJs)
      ThrowError(env, "ERR_RING_BUFFER_RETURNED", "buffer " + std::to_string(ids[i]) + " is not held: it was released or sent, and belongs to the buffer ring again");
  }
  RingStreams* streams = RingStreams::Of(core);
  for (size_t i = 0; i < count; i++) streams->Release(pool, unsigned(ids[i]));
  return nullptr;
}

// bufRingClose(bgid) -> false when a stream that is not finished uses it (nothing changed).
napi_value BufRingClose(napi_env env, napi_callback_info info) {
  Call<1> call(env, info);
  RingCore* core = call.Open(env);
  BufRing* pool = PoolArg(env, core, call[0]);
  core->Admit();
  return Napi::Boolean::New(env, RingStreams::Of(core)->ClosePool(pool));
}

// streamSend(token, id, length): buffer id's first length bytes, from the buffer ring's memory.
napi_value StreamSend(napi_env env, napi_callback_info info) {
  Call<3> call(env, info);
  RingCore* core = call.Open(env);
  RingStream* s = StreamArg(env, core, call[0]);
  unsigned id = HeldBufferArg(env, s->pool, call[1]);
  unsigned length = unsigned(IntegerArg(env, call[2], "length", 1, s->pool->size()));
  RingStreams::Of(core)->SendBuffer(s, id, length);
  return nullptr;
}

// streamWrite(token, data[, later[, latin1]]): the bytes copied now, sent in order with the
// stream's other sends; returns the bytes now waiting to be sent. `later` true: sent at the next
// submit even when the socket could take them inside this call (RingStreams::Write). A string is
// encoded here (UTF-8, or Latin-1 when `latin1`), as net.Socket writes strings from its native
// handle: no Buffer is made for it in JS.
napi_value StreamWrite(napi_env env, napi_callback_info info) {
  Call<4> call(env, info);
  RingCore* core = call.Open(env);
  RingStream* s = StreamArg(env, core, call[0]);
  napi_valuetype type = napi_undefined;
  napi_typeof(env, call[1], &type);
  View bytes;
  thread_local std::vector<char> text;
  if (type == napi_string) {
    bool latin1 = OptionalBoolArg(env, call[3], "latin1", false);
    // One pass, no length query first (a scan of its own): a UTF-16 unit is one Latin-1 byte,
    // at most three UTF-8 bytes (a surrogate pair, two units, four).
    size_t units = 0;
    napi_get_value_string_utf16(env, call[1], nullptr, 0, &units);
    size_t room = (latin1 ? units : units * 3) + 1;
    // (every unit is a byte at least: over 1 GiB of units is over 1 GiB of bytes)
    if (units > (1u << 30)) ThrowArgRange(env, "data's length", "<= 1 GiB", std::to_string(units));
    if (text.size() < room) text.resize(room);
    size_t length = 0;
    if (latin1) napi_get_value_string_latin1(env, call[1], text.data(), room, &length);
    else napi_get_value_string_utf8(env, call[1], text.data(), room, &length);
    bytes.data = text.data();
    bytes.length = length;
  } else {
    bytes = ViewArg(env, call[1], "data");
  }
  if (bytes.length == 0) return Napi::Number::New(env, double(stream_unsent(&s->core)));
  if (bytes.length > (1u << 30)) ThrowArgRange(env, "data.byteLength", "<= 1 GiB", std::to_string(bytes.length));
  bool later = OptionalBoolArg(env, call[2], "later", false);
  int err = RingStreams::Of(core)->Write(s, bytes.data, bytes.length, later);
  if (text.size() > (1u << 20)) std::vector<char>().swap(text);  // a large string's room is not kept
  if (err) ThrowErrno(env, err, "send");
  return Napi::Number::New(env, double(stream_unsent(&s->core)));
}

// streamClose(token): stops receiving; JS hears kClosed once the queued sends are done, or
// true comes back when nothing was in flight (then no kClosed comes).
napi_value StreamClose(napi_env env, napi_callback_info info) {
  Call<1> call(env, info);
  RingCore* core = call.Open(env);
  return Napi::Boolean::New(env, RingStreams::Of(core)->Close(StreamArg(env, core, call[0])));
}

// streamHold(token, on): JS pauses (true) or resumes (false) the stream's receiving.
napi_value StreamHold(napi_env env, napi_callback_info info) {
  Call<2> call(env, info);
  RingCore* core = call.Open(env);
  RingStream* s = StreamArg(env, core, call[0]);
  RingStreams::Of(core)->Hold(s, BoolArg(env, call[1], "paused"));
  return nullptr;
}

// streamDrain(token, bytes): kDrained once at most `bytes` wait to be sent; false (no event)
// when that is so now.
napi_value StreamDrain(napi_env env, napi_callback_info info) {
  Call<2> call(env, info);
  RingCore* core = call.Open(env);
  RingStream* s = StreamArg(env, core, call[0]);
  int64_t bytes = IntegerArg(env, call[1], "bytes", 0, int64_t(1) << 40);
  return Napi::Boolean::New(env, RingStreams::Of(core)->Drain(s, bytes));
}

// streamRef(token, ref): the stream's ops keep the event loop alive (true) or not (false).
napi_value StreamRef(napi_env env, napi_callback_info info) {
  Call<2> call(env, info);
  RingCore* core = call.Open(env);
  RingStream* s = StreamArg(env, core, call[0]);
  RingStreams::Of(core)->SetRef(s, BoolArg(env, call[1], "ref"));
  return nullptr;
}

// streamQueued(token): bytes queued to send and not yet sent.
napi_value StreamQueued(napi_env env, napi_callback_info info) {
  Call<1> call(env, info);
  RingCore* core = call.Open(env);
  core->Admit();
  return Napi::Number::New(env, double(stream_unsent(&StreamArg(env, core, call[0])->core)));
}

}  // namespace iolab
