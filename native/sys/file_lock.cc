// flock(2): an advisory lock on an open file, held until it is released or the fd is closed
// (also when the process dies). fdpass recv locks a file beside its socket path so that two
// receivers never both decide the path is theirs.
#include <errno.h>
#include <sys/file.h>

#include "args.h"
#include "errors.h"
#include "registry.h"

namespace iolab {

static const Choice kLockOps[] = {{"exclusive", LOCK_EX}, {"shared", LOCK_SH}, {"unlock", LOCK_UN}, {nullptr, 0}};

// flock(fd, op, { wait }) -> true when done; false when another holder has it and wait is false.
static Napi::Value Flock(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = FdArg(env, info[0]);
  int op = ChoiceArg(env, info[1], "operation", kLockOps);
  OptionsArg options(env, info[2]);
  bool wait = options.Bool("wait", false);
  int r;
  do r = flock(fd, op | (wait || op == LOCK_UN ? 0 : LOCK_NB));
  while (r < 0 && errno == EINTR);
  if (r < 0) {
    if (errno == EWOULDBLOCK) return Napi::Boolean::New(env, false);
    ThrowErrno(env, errno, "flock");
  }
  return Napi::Boolean::New(env, true);
}

static void Init(Napi::Env env, Napi::Object exports) {
  exports.Set("flock", Napi::Function::New(env, Flock, "flock"));
}

IOLAB_FEATURE(file_lock, Init);

}  // namespace iolab
