#include "errors.h"

#include <ctype.h>
#include <string.h>

#include "registry.h"

namespace iolab {

std::string ErrnoName(int err) {
  const char* name = strerrorname_np(err);
  return name != nullptr ? std::string(name) : "E" + std::to_string(err);
}

static Napi::Error NewErrnoError(Napi::Env env, int err, const char* syscall, const char* shown) {
  std::string code = ErrnoName(err);
  // Node (libuv) words its messages in lower case: "ENOENT: no such file or directory, open".
  std::string text = strerror(err);
  if (!text.empty()) text[0] = char(tolower(static_cast<unsigned char>(text[0])));
  std::string message = code + ": " + text + ", " + syscall;
  if (shown != nullptr) message += std::string(" '") + shown + "'";
  Napi::Error error = Napi::Error::New(env, message);
  Napi::Object obj = error.Value();
  obj.Set("errno", Napi::Number::New(env, -err));
  obj.Set("code", Napi::String::New(env, code));
  obj.Set("syscall", Napi::String::New(env, syscall));
  return error;
}

Napi::Error ErrnoError(Napi::Env env, int err, const char* syscall, const char* path) {
  Napi::Error error = NewErrnoError(env, err, syscall, path);
  if (path != nullptr) error.Value().Set("path", Napi::String::New(env, path));
  return error;
}

Napi::Error ErrnoErrorNaming(Napi::Env env, int err, const char* syscall, const std::string& target) {
  return NewErrnoError(env, err, syscall, target.c_str());
}

void ThrowErrno(Napi::Env env, int err, const char* syscall, const char* path) {
  throw ErrnoError(env, err, syscall, path);
}

static void SetCode(Napi::Error& error, Napi::Env env, const char* code) {
  error.Value().Set("code", Napi::String::New(env, code));
}

void ThrowTypeError(Napi::Env env, const char* code, const std::string& message) {
  Napi::TypeError error = Napi::TypeError::New(env, message);
  SetCode(error, env, code);
  throw error;
}

void ThrowError(Napi::Env env, const char* code, const std::string& message) {
  Napi::Error error = Napi::Error::New(env, message);
  SetCode(error, env, code);
  throw error;
}

void ThrowRangeError(Napi::Env env, const char* code, const std::string& message) {
  Napi::RangeError error = Napi::RangeError::New(env, message);
  SetCode(error, env, code);
  throw error;
}

// errnoName(n) lets JS name a native errno (used where a number comes back from C code).
static void Init(Napi::Env env, Napi::Object exports) {
  exports.Set("errnoName", Napi::Function::New(env, [](const Napi::CallbackInfo& info) {
    return Napi::String::New(info.Env(), ErrnoName(info[0].As<Napi::Number>().Int32Value()));
  }));
}

IOLAB_FEATURE(errors, Init);

}  // namespace iolab
