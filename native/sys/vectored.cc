// readv(2)/writev(2), and preadv(2)/pwritev(2) when a position is given (with one buffer, the
// plain read/write/pread/pwrite, as libuv does). Synchronous: the buffers are the caller's own
// views, read or written in place; a short transfer is returned as is (callers loop where they
// must). EINTR is retried.
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <unistd.h>

#include "args.h"
#include "errors.h"
#include "registry.h"

namespace iolab {

// The hot path: raw napi_callbacks (no node-addon-api CallbackInfo/function-data wrappers); the
// args.h checks cost one napi_typeof per scalar.
template <bool write>
static napi_value Transfer(napi_env env, napi_callback_info cbinfo) {
  RawArgs<3> args(env, cbinfo);
  int fd = FdArg(env, args[0]);
  int64_t position = PositionArg(env, args[2]);
  IovecArray iov = IovecsArg(env, args[1]);  // last: no JS runs after this
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
    ThrowErrno(env, errno, syscall);
  }
  napi_value result;
  napi_create_int64(env, int64_t(n), &result);
  return result;
}

static void Init(Napi::Env env, Napi::Object exports) {
  napi_value fn;
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_function(env, "readv", NAPI_AUTO_LENGTH, RawCallback<Transfer<false>>, nullptr, &fn));
  exports.Set("readv", Napi::Value(env, fn));
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_function(env, "writev", NAPI_AUTO_LENGTH, RawCallback<Transfer<true>>, nullptr, &fn));
  exports.Set("writev", Napi::Value(env, fn));
}

IOLAB_FEATURE(vectored, Init);

}  // namespace iolab
