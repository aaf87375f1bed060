// renameat2(RENAME_NOREPLACE): puts a finished file at its name only if nothing is there, in one
// step. The results files a user names (src/write-target.ts) go in this way: link(2) and then
// unlink(2) of the temp name did the same in two steps, and a kill between them left both names.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>

#include <string>

#include "args.h"
#include "errors.h"
#include "registry.h"

namespace iolab {

// renameNoReplace(from, to): EEXIST when `to` exists; EINVAL where the file system cannot do it.
static Napi::Value RenameNoReplace(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string from = StringArg(env, info[0], "from");
  std::string to = StringArg(env, info[1], "to");
  // a NUL would cut the name short in C: another file than the one named
  if (from.find('\0') != std::string::npos) ThrowArgValue(env, "from", "must be a path without null bytes", info[0]);
  if (to.find('\0') != std::string::npos) ThrowArgValue(env, "to", "must be a path without null bytes", info[1]);
  if (renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) < 0) ThrowErrno(env, errno, "rename", to.c_str());
  return env.Undefined();
}

static void Init(Napi::Env env, Napi::Object exports) {
  exports.Set("renameNoReplace", Napi::Function::New(env, RenameNoReplace, "renameNoReplace"));
}

IOLAB_FEATURE(rename, Init);

}  // namespace iolab
