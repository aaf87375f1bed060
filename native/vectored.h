// Vectored I/O (readv/writev/preadv/pwritev) and the argument checks every native feature that
// takes an fd or a list of buffers shares (unix_socket.cc's sendmsg/recvmsg use them too).
#pragma once
#include <napi.h>
#include <sys/uio.h>

#include <string>
#include <vector>

namespace iolab {

// Up to IOV_MAX (1024) buffers per call, as the kernel allows.
constexpr size_t kMaxBuffers = 1024;

// A short description of a JS value for "Received ..." in argument errors, like Node's.
std::string DescribeValue(Napi::Value value);

// fd argument: a number (TypeError ERR_INVALID_ARG_TYPE otherwise) that is an integer in
// [0, 2^31-1] (RangeError ERR_OUT_OF_RANGE otherwise).
int FdArg(Napi::Env env, Napi::Value value, const char* name = "fd");

// Integer argument in [min, max] (TypeError when not a number, RangeError when out of range).
int64_t IntegerArg(Napi::Env env, Napi::Value value, const char* name, int64_t min, int64_t max);

// An array of ArrayBufferViews -> iovecs over their bytes (TypeError ERR_INVALID_ARG_TYPE when
// it is not one; RangeError ERR_OUT_OF_RANGE above kMaxBuffers). Zero-length views are kept.
// The views stay alive for the call because the caller's arguments reference them. Call it
// LAST, after every other argument/option is read: reading an option may run a JS getter that
// detaches or shrinks a buffer, which would leave these iovecs pointing at freed memory.
std::vector<struct iovec> IovecsArg(Napi::Env env, Napi::Value value, const char* name = "buffers");

}  // namespace iolab
