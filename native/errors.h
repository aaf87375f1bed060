// errno -> JS Error shaped like Node's fs errors: message "ENOENT: no such file or directory,
// open '/x'", and properties code, errno (negative, as Node does), syscall, path.
#pragma once
#include <napi.h>

#include <string>

namespace iolab {

// err is a positive errno value (liburing's -res must be negated by the caller).
Napi::Error ErrnoError(Napi::Env env, int err, const char* syscall, const char* path = nullptr);

// The same naming `target` in the message only, with no `path`: for what is not a file (an IP
// address and port, whose error carries `address` and `port` as node:net's do).
Napi::Error ErrnoErrorNaming(Napi::Env env, int err, const char* syscall, const std::string& target);

// Throws ErrnoError as a C++ exception (NAPI_CPP_EXCEPTIONS); never returns.
[[noreturn]] void ThrowErrno(Napi::Env env, int err, const char* syscall, const char* path = nullptr);

// An Error with a code of iolab's own (e.g. ERR_RING_STREAM_CLOSED).
[[noreturn]] void ThrowError(Napi::Env env, const char* code, const std::string& message);
// Argument errors: TypeError / RangeError with Node's code names (ERR_INVALID_ARG_TYPE,
// ERR_OUT_OF_RANGE, ERR_INVALID_ARG_VALUE).
[[noreturn]] void ThrowTypeError(Napi::Env env, const char* code, const std::string& message);
[[noreturn]] void ThrowRangeError(Napi::Env env, const char* code, const std::string& message);

// errno's symbolic name ("ENOENT"), or "E<n>" when unknown.
std::string ErrnoName(int err);

}  // namespace iolab
