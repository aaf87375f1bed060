// An open file's status flags: O_NONBLOCK on or off (fcntl F_GETFL/F_SETFL). A demo opens a
// path with O_NONBLOCK so that opening a FIFO cannot wait for a writer, looks at what it got,
// and turns O_NONBLOCK off again for a regular file (through io_uring, a read of a file with
// O_NONBLOCK set returns EAGAIN instead of waiting for the disk).
#include <errno.h>
#include <fcntl.h>

#include "args.h"
#include "errors.h"
#include "registry.h"

namespace iolab {

static Napi::Value SetNonBlocking(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = FdArg(env, info[0]);
  bool on = BoolArg(env, info[1], "on");
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0) ThrowErrno(env, errno, "fcntl");
  int wanted = on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK);
  if (wanted != flags && fcntl(fd, F_SETFL, wanted) < 0) ThrowErrno(env, errno, "fcntl");
  return env.Undefined();
}

static void Init(Napi::Env env, Napi::Object exports) {
  exports.Set("setNonBlocking", Napi::Function::New(env, SetNonBlocking, "setNonBlocking"));
}

IOLAB_FEATURE(fd_flags, Init);

}  // namespace iolab
