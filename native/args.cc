// The throwing and the non-inline halves of args.h.
#include "args.h"

#include <limits.h>

#include <algorithm>

#include "errors.h"

namespace iolab {

std::string DescribeValue(napi_env env, napi_value raw) {
  Napi::Value value(env, raw);
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

// Node calls a dotted name ("options.fds") a property and a plain one an argument.
static const char* Kind(const std::string& name) {
  return name.find('.') != std::string::npos ? "property" : "argument";
}

void ThrowArgType(napi_env env, const std::string& name, const char* expected, napi_value value) {
  ThrowTypeError(env, "ERR_INVALID_ARG_TYPE",
                 "The \"" + name + "\" " + Kind(name) + " must be " + expected + ". Received " +
                     DescribeValue(env, value));
}

void ThrowArgRange(napi_env env, const std::string& name, const std::string& rule, const std::string& received) {
  ThrowRangeError(env, "ERR_OUT_OF_RANGE",
                  "The value of \"" + name + "\" is out of range. It must be " + rule + ". Received " + received);
}

void ThrowArgValue(napi_env env, const std::string& name, const std::string& rule, napi_value value) {
  ThrowTypeError(env, "ERR_INVALID_ARG_VALUE",
                 std::string("The ") + Kind(name) + " '" + name + "' " + rule + ". Received " + DescribeValue(env, value));
}

static std::string NumberText(napi_env env, napi_value value) {
  return Napi::Value(env, value).ToString().Utf8Value();
}

void ThrowIntegerArg(napi_env env, napi_value value, const char* name, int64_t min, int64_t max) {
  napi_valuetype type = napi_undefined;
  napi_typeof(env, value, &type);
  if (type != napi_number) ThrowArgType(env, name, "of type number", value);
  ThrowArgRange(env, name, "an integer >= " + std::to_string(min) + " and <= " + std::to_string(max),
                NumberText(env, value));
}

int64_t PositionSlow(napi_env env, napi_value value, const char* name, bool allow_current) {
  const std::string rule = allow_current ? "-1 or an integer >= 0 and <= 2^53-1 (a bigint: <= 2^63-1)"
                                         : "an integer >= 0 and <= 2^53-1 (a bigint: <= 2^63-1)";
  napi_valuetype type = napi_undefined;
  napi_typeof(env, value, &type);
  if (type == napi_bigint) {
    bool lossless = false;
    int64_t p = 0;
    napi_get_value_bigint_int64(env, value, &p, &lossless);
    if (!lossless || p < (allow_current ? -1 : 0)) ThrowArgRange(env, name, rule, NumberText(env, value) + "n");
    return p;
  }
  if (type != napi_number) ThrowArgType(env, name, "of type number or bigint", value);
  double d = 0;
  napi_get_value_double(env, value, &d);
  if (allow_current && d == -1) return -1;
  if (!(d >= 0 && d <= double(kMaxSafeInteger)) || d != double(int64_t(d))) ThrowArgRange(env, name, rule, NumberText(env, value));
  return int64_t(d);
}

bool BoolArg(napi_env env, napi_value value, const char* name) {
  bool b = false;
  napi_valuetype type = napi_undefined;
  if (napi_typeof(env, value, &type) != napi_ok || type != napi_boolean) ThrowArgType(env, name, "of type boolean", value);
  napi_get_value_bool(env, value, &b);
  return b;
}

bool OptionalBoolArg(napi_env env, napi_value value, const char* name, bool fallback) {
  napi_valuetype type = napi_undefined;
  napi_typeof(env, value, &type);
  if (type == napi_undefined) return fallback;
  if (type != napi_boolean) ThrowArgType(env, name, "of type boolean", value);
  bool b = false;
  napi_get_value_bool(env, value, &b);
  return b;
}

std::string StringArg(napi_env env, napi_value value, const char* name) {
  napi_valuetype type = napi_undefined;
  if (napi_typeof(env, value, &type) != napi_ok || type != napi_string) ThrowArgType(env, name, "of type string", value);
  return Napi::Value(env, value).As<Napi::String>().Utf8Value();
}

int ChoiceArg(napi_env env, napi_value value, const char* name, const Choice* choices) {
  napi_valuetype type = napi_undefined;
  napi_typeof(env, value, &type);
  if (type == napi_string) {
    std::string text = Napi::Value(env, value).As<Napi::String>().Utf8Value();
    for (const Choice* c = choices; c->text != nullptr; c++)
      if (text == c->text) return c->value;
  }
  std::string rule = "must be one of ";
  for (const Choice* c = choices; c->text != nullptr; c++) rule += std::string(c == choices ? "" : ", ") + "'" + c->text + "'";
  ThrowArgValue(env, name, rule, value);
}

// ---- views ----

size_t ElementSize(napi_typedarray_type type) {
  switch (type) {
    case napi_int8_array: case napi_uint8_array: case napi_uint8_clamped_array: return 1;
    case napi_int16_array: case napi_uint16_array: return 2;
    case napi_int32_array: case napi_uint32_array: case napi_float32_array: return 4;
    default: return 8;  // float64, bigint64, biguint64
  }
}

bool ViewOf(napi_env env, napi_value value, View* view) {
  // The raw calls give the view's data pointer directly, which also works for views over a
  // SharedArrayBuffer (Napi::ArrayBuffer::Data() refuses those). napi_get_typedarray_info
  // refuses anything but a TypedArray (napi_invalid_arg), so it is the type check too.
  bool is = false;
  void* data = nullptr;
  napi_typedarray_type type;
  size_t elements = 0;
  if (napi_get_typedarray_info(env, value, &type, &elements, &data, nullptr, nullptr) == napi_ok) {
    view->data = static_cast<char*>(data);
    view->length = data == nullptr ? 0 : elements * ElementSize(type);
    return true;
  }
  if (napi_is_dataview(env, value, &is) == napi_ok && is) {
    size_t bytes = 0;
    if (napi_get_dataview_info(env, value, &bytes, &data, nullptr, nullptr) != napi_ok) return false;
    view->data = static_cast<char*>(data);
    view->length = data == nullptr ? 0 : bytes;
    return true;
  }
  return false;
}

static const char kViewType[] = "an ArrayBufferView (Buffer, TypedArray or DataView)";

View ViewArg(napi_env env, napi_value value, const char* name) {
  View view;
  if (!ViewOf(env, value, &view)) ThrowArgType(env, name, kViewType, value);
  return view;
}

// The elements of a TypedArray of one type, copied (Int32ArrayArg, Float64ArrayArg).
template <typename T, napi_typedarray_type kType>
static std::vector<T> TypedElements(napi_env env, napi_value value, const char* name, const char* expected,
                                    size_t* length, size_t limit) {
  bool is_typed = false;
  napi_typedarray_type type;
  void* data = nullptr;
  if (napi_is_typedarray(env, value, &is_typed) != napi_ok || !is_typed ||
      napi_get_typedarray_info(env, value, &type, length, &data, nullptr, nullptr) != napi_ok || type != kType)
    ThrowArgType(env, name, expected, value);
  const T* elements = static_cast<const T*>(data);
  return std::vector<T>(elements, elements + std::min(*length, limit));
}

std::vector<int32_t> Int32ArrayArg(napi_env env, napi_value value, const char* name, size_t* length, size_t limit) {
  return TypedElements<int32_t, napi_int32_array>(env, value, name, "an Int32Array", length, limit);
}

std::vector<double> Float64ArrayArg(napi_env env, napi_value value, const char* name, size_t* length, size_t limit) {
  return TypedElements<double, napi_float64_array>(env, value, name, "a Float64Array", length, limit);
}

ListArg::ListArg(napi_env env, napi_value value, const char* name) : env_(env), name_(name) {
  bool is_array = false;
  napi_is_array(env, value, &is_array);
  if (!is_array) ThrowArgType(env, name, "an array of ArrayBufferView (Buffer, TypedArray or DataView)", value);
  NAPI_THROW_IF_FAILED_VOID(env, napi_get_array_length(env, value, &count_));
  if (count_ > kMaxBuffers) {
    ThrowArgRange(env, std::string(name) + ".length", "<= " + std::to_string(kMaxBuffers) + " (IOV_MAX)",
                  std::to_string(count_));
  }
  if (count_ > 8) {
    heap_.resize(count_);
    items_ = heap_.data();
  }
  for (uint32_t i = 0; i < count_; i++) NAPI_THROW_IF_FAILED_VOID(env, napi_get_element(env, value, i, &items_[i]));
}

View ListArg::ViewAt(uint32_t i) const {
  View view;
  if (!ViewOf(env_, items_[i], &view))
    ThrowArgType(env_, std::string(name_) + "[" + std::to_string(i) + "]", kViewType, items_[i]);
  return view;
}

IovecArray IovecsArg(napi_env env, napi_value value, const char* name) {
  // Two passes: ListArg fetches every element first (napi_get_element may run a JS getter,
  // which could detach or resize an earlier buffer), then pointers are taken with no JS between.
  ListArg list(env, value, name);
  IovecArray iov(list.size());
  for (uint32_t i = 0; i < list.size(); i++) {
    View v = list.ViewAt(i);
    iov[i].iov_base = v.length > 0 ? v.data : nullptr;
    iov[i].iov_len = v.length;
  }
  return iov;
}

// ---- option objects ----

OptionsArg::OptionsArg(napi_env env, napi_value value, const char* name) : env_(env), name_(name) {
  napi_valuetype type = napi_undefined;
  napi_typeof(env, value, &type);
  if (type == napi_undefined || type == napi_null) return;
  if (type != napi_object) ThrowArgType(env, name, "of type object", value);
  object_ = value;
}

napi_value OptionsArg::Get(const char* key) const {
  napi_value v = nullptr;
  if (object_ == nullptr) {
    napi_get_undefined(env_, &v);
    return v;
  }
  NAPI_THROW_IF_FAILED(env_, napi_get_named_property(env_, object_, key, &v), nullptr);
  return v;
}

napi_value OptionsArg::Get(napi_value key) const {
  napi_value v = nullptr;
  if (object_ == nullptr) {
    napi_get_undefined(env_, &v);
    return v;
  }
  NAPI_THROW_IF_FAILED(env_, napi_get_property(env_, object_, key, &v), nullptr);
  return v;
}

static bool IsUndefined(napi_env env, napi_value v) {
  napi_valuetype type = napi_undefined;
  napi_typeof(env, v, &type);
  return type == napi_undefined;
}

bool OptionsArg::Bool(const char* key, bool fallback) const { return Bool(nullptr, key, fallback); }

bool OptionsArg::Bool(napi_value key, const char* key_name, bool fallback) const {
  if (object_ == nullptr) return fallback;
  napi_value v = key != nullptr ? Get(key) : Get(key_name);
  if (IsUndefined(env_, v)) return fallback;
  return BoolArg(env_, v, Name(key_name).c_str());
}

int64_t OptionsArg::Integer(const char* key, int64_t min, int64_t max, int64_t fallback) const {
  return Integer(nullptr, key, min, max, fallback);
}

int64_t OptionsArg::Integer(napi_value key, const char* key_name, int64_t min, int64_t max, int64_t fallback) const {
  if (object_ == nullptr) return fallback;
  napi_value v = key != nullptr ? Get(key) : Get(key_name);
  if (IsUndefined(env_, v)) return fallback;
  napi_valuetype type;
  double d;
  if (napi_typeof(env_, v, &type) == napi_ok && type == napi_number && napi_get_value_double(env_, v, &d) == napi_ok &&
      d >= double(min) && d <= double(max) && d == double(int64_t(d)))
    return int64_t(d);
  ThrowIntegerArg(env_, v, Name(key_name).c_str(), min, max);
}

size_t FdListArg(napi_env env, napi_value value, const char* name, size_t max, const char* limit_name, int* out) {
  bool is_array = false;
  napi_is_array(env, value, &is_array);
  if (!is_array) ThrowArgType(env, name, "an array of fds", value);
  uint32_t n = 0;
  NAPI_THROW_IF_FAILED(env, napi_get_array_length(env, value, &n), 0);
  if (n > max)
    ThrowArgRange(env, std::string(name) + ".length", "<= " + std::to_string(max) + " (" + limit_name + ")",
                  std::to_string(n));
  for (uint32_t i = 0; i < n; i++) {
    napi_value element;
    NAPI_THROW_IF_FAILED(env, napi_get_element(env, value, i, &element), 0);
    if (!IsFd(env, element, &out[i]))
      out[i] = FdArg(env, element, (std::string(name) + "[" + std::to_string(i) + "]").c_str());
  }
  return n;
}

}  // namespace iolab
