// readv(2)/writev(2), and preadv(2)/pwritev(2) when a position is given. Synchronous: the
// buffers are the caller's own views, read or written in place; a short transfer is returned
// as is (callers loop where they must). EINTR is retried.
#include "vectored.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <unistd.h>

#include "errors.h"
#include "registry.h"

namespace iolab {

std::string DescribeValue(Napi::Value value) {
  switch (value.Type()) {
    case napi_undefined: return "undefined";
    case napi_null: return "null";
    case napi_boolean: return std::string("type boolean (") + (value.ToBoolean() ? "true" : "false") + ")";
    case napi_number: return "type number (" + value.ToString().Utf8Value() + ")";
    case napi_string: {
      std::string s = value.As<Napi::String>().Utf8Value();
      if (s.size() > 28) s = s.substr(0, 25) + "...";
      return "type string ('" + s + "')";
    }
    case napi_bigint: return "type bigint (" + value.ToString().Utf8Value() + "n)";
    case napi_symbol: return "type symbol";
    case napi_function: return "function";
    default:
      if (value.IsArray()) return "an instance of Array";
      if (value.IsArrayBuffer()) return "an instance of ArrayBuffer";
      return "an instance of Object";
  }
}

int64_t IntegerArg(Napi::Env env, Napi::Value value, const char* name, int64_t min, int64_t max) {
  if (!value.IsNumber()) {
    ThrowTypeError(env, "ERR_INVALID_ARG_TYPE",
                   std::string("The \"") + name + "\" argument must be of type number. Received " +
                       DescribeValue(value));
  }
  double d = value.As<Napi::Number>().DoubleValue();
  if (!(d >= double(min) && d <= double(max)) || d != double(int64_t(d))) {
    ThrowRangeError(env, "ERR_OUT_OF_RANGE",
                    std::string("The value of \"") + name + "\" is out of range. It must be an integer >= " +
                        std::to_string(min) + " and <= " + std::to_string(max) + ". Received " +
                        value.ToString().Utf8Value());
  }
  return int64_t(d);
}

int FdArg(Napi::Env env, Napi::Value value, const char* name) {
  return int(IntegerArg(env, value, name, 0, INT32_MAX));
}

std::vector<struct iovec> IovecsArg(Napi::Env env, Napi::Value value, const char* name) {
  if (!value.IsArray()) {
    ThrowTypeError(env, "ERR_INVALID_ARG_TYPE",
                   std::string("The \"") + name +
                       "\" argument must be an array of ArrayBufferView (Buffer, TypedArray or DataView). Received " +
                       DescribeValue(value));
  }
  Napi::Array array = value.As<Napi::Array>();
  uint32_t count = array.Length();
  if (count > kMaxBuffers) {
    ThrowRangeError(env, "ERR_OUT_OF_RANGE",
                    std::string("The value of \"") + name + ".length\" is out of range. It must be <= " +
                        std::to_string(kMaxBuffers) + " (IOV_MAX). Received " + std::to_string(count));
  }
  // Two passes: first every element is fetched (array.Get may run a JS getter, which could
  // detach or resize an earlier buffer), then pointers are taken with no JS running between.
  std::vector<Napi::Value> views(count);
  for (uint32_t i = 0; i < count; i++) {
    views[i] = array.Get(i);
    if (!views[i].IsTypedArray() && !views[i].IsDataView()) {
      ThrowTypeError(env, "ERR_INVALID_ARG_TYPE",
                     std::string("The \"") + name + "[" + std::to_string(i) +
                         "]\" argument must be an ArrayBufferView (Buffer, TypedArray or DataView). Received " +
                         DescribeValue(views[i]));
    }
  }
  std::vector<struct iovec> iov(count);
  for (uint32_t i = 0; i < count; i++) {
    // The raw calls give the view's data pointer directly, which also works for views over a
    // SharedArrayBuffer (Napi::ArrayBuffer::Data() refuses those).
    void* data = nullptr;
    size_t length = 0;
    napi_status status;
    if (views[i].IsTypedArray()) {
      napi_typedarray_type type;
      size_t elements = 0;
      status = napi_get_typedarray_info(env, views[i], &type, &elements, &data, nullptr, nullptr);
      length = Napi::TypedArray(env, views[i]).ByteLength();
    } else {
      status = napi_get_dataview_info(env, views[i], &length, &data, nullptr, nullptr);
    }
    NAPI_THROW_IF_FAILED(env, status, iov);
    iov[i].iov_base = length > 0 ? data : nullptr;
    iov[i].iov_len = length;
  }
  return iov;
}

// position: undefined/null -> -1 (no position); number or bigint >= 0 -> the offset.
static int64_t PositionArg(Napi::Env env, Napi::Value value) {
  if (value.IsUndefined() || value.IsNull()) return -1;
  if (value.IsBigInt()) {
    bool lossless = false;
    int64_t p = value.As<Napi::BigInt>().Int64Value(&lossless);
    if (!lossless || p < 0) {
      ThrowRangeError(env, "ERR_OUT_OF_RANGE",
                      "The value of \"position\" is out of range. It must be >= 0 and <= 2^63-1. Received " +
                          value.ToString().Utf8Value() + "n");
    }
    return p;
  }
  if (!value.IsNumber()) {
    ThrowTypeError(env, "ERR_INVALID_ARG_TYPE",
                   "The \"position\" argument must be of type number or bigint. Received " + DescribeValue(value));
  }
  return IntegerArg(env, value, "position", 0, (int64_t(1) << 53) - 1);
}

static Napi::Value Transfer(const Napi::CallbackInfo& info, bool write) {
  Napi::Env env = info.Env();
  int fd = FdArg(env, info[0]);
  int64_t position = PositionArg(env, info[2]);
  std::vector<struct iovec> iov = IovecsArg(env, info[1]);  // last: no JS runs after this
  const char* syscall = write ? (position >= 0 ? "pwritev" : "writev") : (position >= 0 ? "preadv" : "readv");
  ssize_t n;
  do {
    if (position >= 0) {
      n = write ? pwritev(fd, iov.data(), int(iov.size()), off_t(position))
                : preadv(fd, iov.data(), int(iov.size()), off_t(position));
    } else {
      n = write ? writev(fd, iov.data(), int(iov.size())) : readv(fd, iov.data(), int(iov.size()));
    }
  } while (n < 0 && errno == EINTR);
  if (n < 0) ThrowErrno(env, errno, syscall);
  return Napi::Number::New(env, double(n));
}

static Napi::Value Readv(const Napi::CallbackInfo& info) { return Transfer(info, false); }
static Napi::Value Writev(const Napi::CallbackInfo& info) { return Transfer(info, true); }

static void Init(Napi::Env env, Napi::Object exports) {
  exports.Set("readv", Napi::Function::New(env, Readv, "readv"));
  exports.Set("writev", Napi::Function::New(env, Writev, "writev"));
}

IOLAB_FEATURE(vectored, Init);

}  // namespace iolab
