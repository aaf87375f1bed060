// Every check of a JS argument the addon's Node-aware files make, in one place and one error
// style (Node's): a value of the wrong type is a TypeError ERR_INVALID_ARG_TYPE ("The "fd"
// argument must be of type number. Received type string ('3')"), a number out of its range a
// RangeError ERR_OUT_OF_RANGE, a string outside its set a TypeError ERR_INVALID_ARG_VALUE. A
// name with a '.' in it ("options.fds") is called a property in the message, as Node does.
//
// The checks take raw napi_env/napi_value (Napi::Env and Napi::Value convert to them), so raw
// napi_callbacks on hot paths use them too. A good scalar costs one napi call on the fast path
// (napi_get_value_double, which also answers whether it is a number; inline, below); only the
// throwing paths live in args.cc. Errors are thrown as
// C++ exceptions (NAPI_CPP_EXCEPTIONS); a raw callback catches them with RawCallback.
#pragma once
#include <napi.h>
#include <stdint.h>
#include <sys/uio.h>

#include <string>
#include <vector>

namespace iolab {

// IOV_MAX: at most this many buffers in one call, as the kernel allows.
constexpr size_t kMaxBuffers = 1024;
// The largest integer a JS number holds exactly (2^53 - 1).
constexpr int64_t kMaxSafeInteger = (int64_t(1) << 53) - 1;

// A short description of a JS value for "Received ..." in argument errors, like Node's.
std::string DescribeValue(napi_env env, napi_value value);

// The throwing halves of the checks below (also for checks a file makes itself).
[[noreturn]] void ThrowArgType(napi_env env, const std::string& name, const char* expected, napi_value value);
[[noreturn]] void ThrowArgRange(napi_env env, const std::string& name, const std::string& rule,
                                const std::string& received);
[[noreturn]] void ThrowArgValue(napi_env env, const std::string& name, const std::string& rule, napi_value value);

// ---- scalars ----

[[noreturn]] void ThrowIntegerArg(napi_env env, napi_value value, const char* name, int64_t min, int64_t max);

// An integer in [min, max]: a number (TypeError otherwise) with no fraction, in range.
inline int64_t IntegerArg(napi_env env, napi_value value, const char* name, int64_t min, int64_t max) {
  double d;
  if (napi_get_value_double(env, value, &d) == napi_ok && d >= double(min) && d <= double(max) &&
      d == double(int64_t(d)))
    return int64_t(d);
  ThrowIntegerArg(env, value, name, min, max);
}

// The same, or `fallback` for undefined (an option left out).
inline int64_t OptionalIntegerArg(napi_env env, napi_value value, const char* name, int64_t min, int64_t max,
                                  int64_t fallback) {
  double d;
  if (napi_get_value_double(env, value, &d) == napi_ok) {
    if (d >= double(min) && d <= double(max) && d == double(int64_t(d))) return int64_t(d);
  } else {
    napi_valuetype type;
    if (napi_typeof(env, value, &type) == napi_ok && type == napi_undefined) return fallback;
  }
  ThrowIntegerArg(env, value, name, min, max);
}

// An argument's name in an error, as prefix + index + suffix ("messages[3].buffers"), put
// together only when an error is thrown: a batch names each of its elements this way.
struct ArgPath {
  const char* prefix;
  size_t index;
  const char* suffix;
  std::string str() const { return prefix + std::to_string(index) + suffix; }
};

// An fd: an integer in [0, 2^31-1].
inline int FdArg(napi_env env, napi_value value, const char* name = "fd") {
  return int(IntegerArg(env, value, name, 0, INT32_MAX));
}

// A byte count or length: an integer in [0, 2^53-1].
inline uint64_t SizeArg(napi_env env, napi_value value, const char* name) {
  return uint64_t(IntegerArg(env, value, name, 0, kMaxSafeInteger));
}

// The fd, when value is one (no throw): for lists whose element names are built only on error.
inline bool IsFd(napi_env env, napi_value value, int* fd) {
  double d;
  if (napi_get_value_double(env, value, &d) != napi_ok || !(d >= 0 && d <= double(INT32_MAX)) || d != double(int(d)))
    return false;
  *fd = int(d);
  return true;
}

// A file position: undefined or null -> -1 (the file's current position); a number or a
// bigint >= 0 -> that offset. With allow_current, -1 also means the current position (the
// Ring takes io_uring's spelling).
int64_t PositionSlow(napi_env env, napi_value value, const char* name, bool allow_current);
inline int64_t PositionArg(napi_env env, napi_value value, const char* name = "position", bool allow_current = false) {
  double d;
  if (napi_get_value_double(env, value, &d) == napi_ok) {
    if (d >= 0 && d <= double(kMaxSafeInteger) && d == double(int64_t(d))) return int64_t(d);
  } else {
    napi_valuetype type;
    if (napi_typeof(env, value, &type) == napi_ok && (type == napi_undefined || type == napi_null)) return -1;
  }
  return PositionSlow(env, value, name, allow_current);
}

// true or false (TypeError for anything else, "1" and 1 included).
bool BoolArg(napi_env env, napi_value value, const char* name);
// The same, or `fallback` for undefined.
bool OptionalBoolArg(napi_env env, napi_value value, const char* name, bool fallback);

std::string StringArg(napi_env env, napi_value value, const char* name);

// One of a fixed set of strings -> its value (TypeError ERR_INVALID_ARG_VALUE otherwise,
// listing the set). The list ends with a {nullptr, 0} entry.
struct Choice {
  const char* text;
  int value;
};
int ChoiceArg(napi_env env, napi_value value, const char* name, const Choice* choices);

// ---- views and buffer lists ----

// Bytes per element of a TypedArray type.
size_t ElementSize(napi_typedarray_type type);

// The bytes of a TypedArray or DataView (also over a SharedArrayBuffer). A detached view has
// data == nullptr and length 0.
struct View {
  char* data = nullptr;
  size_t length = 0;
};

// The view's bytes; false when value is no ArrayBufferView (nothing thrown).
bool ViewOf(napi_env env, napi_value value, View* view);
// The view's bytes; TypeError when value is no ArrayBufferView.
View ViewArg(napi_env env, napi_value value, const char* name);

// The elements of an Int32Array (TypeError for anything else), copied: a later call that runs
// JS (a getter) may detach the array and let the GC free its memory. *length is their count; at
// most `limit` are copied (the caller never reads past it).
std::vector<int32_t> Int32ArrayArg(napi_env env, napi_value value, const char* name, size_t* length, size_t limit);
// The same for a Float64Array (positions, which an Int32Array cannot hold).
std::vector<double> Float64ArrayArg(napi_env env, napi_value value, const char* name, size_t* length, size_t limit);

// iovecs with room for a few inline, so the common 1-8 buffer call allocates nothing.
class IovecArray {
 public:
  explicit IovecArray(size_t count) : size_(count) {
    if (count > kInline) heap_.resize(count);
  }
  struct iovec* data() { return size_ > kInline ? heap_.data() : inline_; }
  size_t size() const { return size_; }
  struct iovec& operator[](size_t i) { return data()[i]; }
  struct iovec* begin() { return data(); }
  struct iovec* end() { return data() + size_; }
  size_t total() {
    size_t n = 0;
    for (const iovec& v : *this) n += v.iov_len;
    return n;
  }

 private:
  static constexpr size_t kInline = 8;
  size_t size_;
  struct iovec inline_[kInline];
  std::vector<struct iovec> heap_;
};

// The elements of a buffer list: an Array of up to kMaxBuffers values (TypeError when not an
// Array, RangeError above the limit). Elements are fetched (which may run JS getters) but not
// checked; ViewList/IovecsArg check them.
class ListArg {
 public:
  ListArg(napi_env env, napi_value value, const char* name = "buffers");
  ListArg(const ListArg&) = delete;
  ListArg& operator=(const ListArg&) = delete;
  uint32_t size() const { return count_; }
  napi_value operator[](uint32_t i) const { return items_[i]; }
  // The i-th element's bytes; TypeError naming "name[i]" when it is no ArrayBufferView.
  View ViewAt(uint32_t i) const;

 private:
  napi_env env_;
  const char* name_;
  uint32_t count_ = 0;
  napi_value inline_[8];
  std::vector<napi_value> heap_;
  napi_value* items_ = inline_;
};

// A list of ArrayBufferViews -> iovecs over their bytes, in place (zero-length views kept).
// Call it LAST, after every other argument/option is read: reading an option may run a JS
// getter that detaches or shrinks a buffer, which would leave these iovecs pointing at freed
// memory. (All elements are fetched before any pointer is taken, for the same reason.)
IovecArray IovecsArg(napi_env env, napi_value value, const char* name = "buffers");

// ---- option objects ----

// An options argument: undefined or null (no options) or an object (TypeError otherwise).
// Getters return the fallback for an absent (undefined) property and check the rest as the
// scalar checks above do, named "<options>.<key>".
class OptionsArg {
 public:
  OptionsArg(napi_env env, napi_value value, const char* name = "options");
  bool present() const { return object_ != nullptr; }
  // The property (undefined when absent or when there are no options). A napi_value key is a
  // string the caller made once, for options read on every op.
  napi_value Get(const char* key) const;
  napi_value Get(napi_value key) const;
  bool Bool(const char* key, bool fallback) const;
  bool Bool(napi_value key, const char* key_name, bool fallback) const;
  int64_t Integer(const char* key, int64_t min, int64_t max, int64_t fallback) const;
  int64_t Integer(napi_value key, const char* key_name, int64_t min, int64_t max, int64_t fallback) const;
  // "<options>.<key>", for messages.
  std::string Name(const char* key) const { return std::string(name_) + "." + key; }
  napi_env env() const { return env_; }

 private:
  napi_env env_;
  napi_value object_ = nullptr;
  const char* name_;
};

// An Array of up to `max` fds (TypeError when not an array, RangeError above max naming
// limit_name, each element checked as "<name>[i]") into out[0..max). Returns the count.
size_t FdListArg(napi_env env, napi_value value, const char* name, size_t max, const char* limit_name, int* out);

// ---- raw callbacks ----

// Wraps a raw napi_callback that throws C++ exceptions: the exception becomes the JS one.
template <napi_value (*F)(napi_env, napi_callback_info)>
napi_value RawCallback(napi_env env, napi_callback_info info) {
  try {
    return F(env, info);
  } catch (const Napi::Error& e) {
    e.ThrowAsJavaScriptException();
    return nullptr;
  }
}

// A raw callback's first N arguments; missing ones read as undefined.
template <size_t N>
struct RawArgs {
  napi_value argv[N];
  size_t argc = N;
  napi_value self = nullptr;
  void* data = nullptr;
  RawArgs(napi_env env, napi_callback_info info) {
    if (napi_get_cb_info(env, info, &argc, argv, &self, &data) != napi_ok) throw Napi::Error::New(env);
  }
  napi_value operator[](size_t i) const { return argv[i]; }
};

}  // namespace iolab
