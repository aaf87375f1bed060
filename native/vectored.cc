// readv(2)/writev(2), and preadv(2)/pwritev(2) when a position is given (with one buffer, the
// plain read/write/pread/pwrite, as libuv does). Synchronous: the buffers are the caller's own
// views, read or written in place; a short transfer is returned as is (callers loop where they
// must). EINTR is retried.
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

// Bytes per element of each napi_typedarray_type, in enum order.
static size_t ElementSize(napi_typedarray_type type) {
  switch (type) {
    case napi_int8_array: case napi_uint8_array: case napi_uint8_clamped_array: return 1;
    case napi_int16_array: case napi_uint16_array: return 2;
    case napi_int32_array: case napi_uint32_array: case napi_float32_array: return 4;
    default: return 8;  // float64, bigint64, biguint64
  }
}

[[noreturn]] static void NotAView(Napi::Env env, const char* name, uint32_t i, Napi::Value value) {
  ThrowTypeError(env, "ERR_INVALID_ARG_TYPE",
                 std::string("The \"") + name + "[" + std::to_string(i) +
                     "]\" argument must be an ArrayBufferView (Buffer, TypedArray or DataView). Received " +
                     DescribeValue(value));
}

IovecArray IovecsArg(Napi::Env env, Napi::Value value, const char* name) {
  if (!value.IsArray()) {
    ThrowTypeError(env, "ERR_INVALID_ARG_TYPE",
                   std::string("The \"") + name +
                       "\" argument must be an array of ArrayBufferView (Buffer, TypedArray or DataView). Received " +
                       DescribeValue(value));
  }
  napi_value array = value;
  uint32_t count = 0;
  NAPI_THROW_IF_FAILED(env, napi_get_array_length(env, array, &count), IovecArray(0));
  if (count > kMaxBuffers) {
    ThrowRangeError(env, "ERR_OUT_OF_RANGE",
                    std::string("The value of \"") + name + ".length\" is out of range. It must be <= " +
                        std::to_string(kMaxBuffers) + " (IOV_MAX). Received " + std::to_string(count));
  }
  // Two passes: first every element is fetched (napi_get_element may run a JS getter, which
  // could detach or resize an earlier buffer), then pointers are taken with no JS running
  // between. Raw N-API calls, one info call per view: this is the hot path of every sync call.
  napi_value inline_views[8];
  std::vector<napi_value> heap_views(count > 8 ? count : 0);
  napi_value* views = count > 8 ? heap_views.data() : inline_views;
  for (uint32_t i = 0; i < count; i++) {
    NAPI_THROW_IF_FAILED(env, napi_get_element(env, array, i, &views[i]), IovecArray(0));
  }
  IovecArray iov(count);
  for (uint32_t i = 0; i < count; i++) {
    // The raw calls give the view's data pointer directly, which also works for views over a
    // SharedArrayBuffer (Napi::ArrayBuffer::Data() refuses those).
    void* data = nullptr;
    size_t length = 0;
    bool is_typed = false;
    NAPI_THROW_IF_FAILED(env, napi_is_typedarray(env, views[i], &is_typed), IovecArray(0));
    if (is_typed) {
      napi_typedarray_type type;
      size_t elements = 0;
      NAPI_THROW_IF_FAILED(env, napi_get_typedarray_info(env, views[i], &type, &elements, &data, nullptr, nullptr),
                           IovecArray(0));
      length = elements * ElementSize(type);
    } else {
      bool is_dataview = false;
      NAPI_THROW_IF_FAILED(env, napi_is_dataview(env, views[i], &is_dataview), IovecArray(0));
      if (!is_dataview) NotAView(env, name, i, Napi::Value(env, views[i]));
      NAPI_THROW_IF_FAILED(env, napi_get_dataview_info(env, views[i], &length, &data, nullptr, nullptr),
                           IovecArray(0));
    }
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

// The hot path: raw napi_callbacks (no node-addon-api CallbackInfo/function-data wrappers), one
// napi_typeof per scalar argument; anything not on the fast path goes through the checked
// helpers above, which throw the same errors as before.
static int FastFd(napi_env env, napi_value value) {
  napi_valuetype type;
  double d;
  if (napi_typeof(env, value, &type) == napi_ok && type == napi_number &&
      napi_get_value_double(env, value, &d) == napi_ok && d >= 0 && d <= double(INT32_MAX) && d == double(int(d)))
    return int(d);
  return FdArg(Napi::Env(env), Napi::Value(env, value));
}

static int64_t FastPosition(napi_env env, napi_value value) {
  napi_valuetype type;
  if (napi_typeof(env, value, &type) == napi_ok) {
    if (type == napi_undefined || type == napi_null) return -1;
    double d;
    if (type == napi_number && napi_get_value_double(env, value, &d) == napi_ok && d >= 0 &&
        d <= double((int64_t(1) << 53) - 1) && d == double(int64_t(d)))
      return int64_t(d);
  }
  return PositionArg(Napi::Env(env), Napi::Value(env, value));
}

static napi_value Transfer(napi_env env, napi_callback_info cbinfo, bool write) {
  size_t argc = 3;
  napi_value argv[3];
  if (napi_get_cb_info(env, cbinfo, &argc, argv, nullptr, nullptr) != napi_ok) return nullptr;
  // Missing arguments read as undefined (napi_get_cb_info fills them in).
  try {
    int fd = FastFd(env, argv[0]);
    int64_t position = FastPosition(env, argv[2]);
    IovecArray iov = IovecsArg(Napi::Env(env), Napi::Value(env, argv[1]));  // last: no JS runs after this
    ssize_t n;
    do {
      if (iov.size() == 1) {
        // One buffer: the plain call (as libuv does) skips the kernel's iovec import.
        void* base = iov[0].iov_base;
        size_t len = iov[0].iov_len;
        if (position >= 0) n = write ? pwrite(fd, base, len, off_t(position)) : pread(fd, base, len, off_t(position));
        else n = write ? ::write(fd, base, len) : ::read(fd, base, len);
      } else if (position >= 0) {
        n = write ? pwritev(fd, iov.data(), int(iov.size()), off_t(position))
                  : preadv(fd, iov.data(), int(iov.size()), off_t(position));
      } else {
        n = write ? writev(fd, iov.data(), int(iov.size())) : readv(fd, iov.data(), int(iov.size()));
      }
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
      const char* syscall = write ? (position >= 0 ? "pwritev" : "writev") : (position >= 0 ? "preadv" : "readv");
      ThrowErrno(Napi::Env(env), errno, syscall);
    }
    napi_value result;
    napi_create_int64(env, int64_t(n), &result);
    return result;
  } catch (const Napi::Error& e) {
    e.ThrowAsJavaScriptException();
    return nullptr;
  }
}

static napi_value Readv(napi_env env, napi_callback_info info) { return Transfer(env, info, false); }
static napi_value Writev(napi_env env, napi_callback_info info) { return Transfer(env, info, true); }

static void Init(Napi::Env env, Napi::Object exports) {
  napi_value fn;
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_function(env, "readv", NAPI_AUTO_LENGTH, Readv, nullptr, &fn));
  exports.Set("readv", Napi::Value(env, fn));
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_function(env, "writev", NAPI_AUTO_LENGTH, Writev, nullptr, &fn));
  exports.Set("writev", Napi::Value(env, fn));
}

IOLAB_FEATURE(vectored, Init);

}  // namespace iolab
