// memfds and file seals: memfd_create(2) (always close-on-exec), and fcntl's F_ADD_SEALS /
// F_GET_SEALS. A receiver that finds F_SEAL_SHRINK on a passed fd knows the file can never get
// shorter, so a mapping of its current size can never fault (SIGBUS) under it.
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>

#include <string>

#include "args.h"
#include "errors.h"
#include "registry.h"

namespace iolab {

// memfd_create's name limit (249 bytes: NAME_MAX minus the "memfd:" prefix).
constexpr size_t kMaxMemfdName = 249;

static Napi::Value MemfdCreate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string name = StringArg(env, info[0], "name");
  if (name.size() > kMaxMemfdName || name.find('\0') != std::string::npos) {
    ThrowArgValue(env, "name", "must be at most 249 bytes long, with no NUL", info[0]);
  }
  OptionsArg options(env, info[1]);
  bool sealing = options.Bool("allowSealing", true);
  int fd = memfd_create(name.c_str(), MFD_CLOEXEC | (sealing ? MFD_ALLOW_SEALING : 0));
  if (fd < 0) ThrowErrno(env, errno, "memfd_create");
  return Napi::Number::New(env, fd);
}

static Napi::Value AddSeals(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = FdArg(env, info[0]);
  int seals = int(IntegerArg(env, info[1], "seals", 0, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE |
                                                           F_SEAL_FUTURE_WRITE));
  if (fcntl(fd, F_ADD_SEALS, seals) < 0) ThrowErrno(env, errno, "fcntl");
  return env.Undefined();
}

// The seals of fd, or undefined when the file cannot carry seals at all (not on tmpfs or
// hugetlbfs: fcntl fails with EINVAL, or EPERM on some file systems).
static Napi::Value GetSeals(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = FdArg(env, info[0]);
  int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0) {
    if (errno == EBADF) ThrowErrno(env, errno, "fcntl");
    return env.Undefined();
  }
  return Napi::Number::New(env, seals);
}

static void Init(Napi::Env env, Napi::Object exports) {
  exports.Set("memfdCreate", Napi::Function::New(env, MemfdCreate, "memfdCreate"));
  exports.Set("addSeals", Napi::Function::New(env, AddSeals, "addSeals"));
  exports.Set("getSeals", Napi::Function::New(env, GetSeals, "getSeals"));
  Napi::Object seals = Napi::Object::New(env);
  seals.Set("F_SEAL_SEAL", Napi::Number::New(env, F_SEAL_SEAL));
  seals.Set("F_SEAL_SHRINK", Napi::Number::New(env, F_SEAL_SHRINK));
  seals.Set("F_SEAL_GROW", Napi::Number::New(env, F_SEAL_GROW));
  seals.Set("F_SEAL_WRITE", Napi::Number::New(env, F_SEAL_WRITE));
  seals.Set("F_SEAL_FUTURE_WRITE", Napi::Number::New(env, F_SEAL_FUTURE_WRITE));
  seals.Freeze();
  exports.Set("seals", seals);
}

IOLAB_FEATURE(memfd, Init);

}  // namespace iolab
