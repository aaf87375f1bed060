// A file's extended attributes copied from the file a command replaces onto its new contents
// (llistxattr/lgetxattr by the old file's path, never through a symlink; fsetxattr): `--force` keeps them, as `cp --preserve=xattr` and `sed -i`
// do (user.*, security.*, an ACL's system.posix_acl_*). Best effort per name: a name the
// target's file system or this process may not set (trusted.* without CAP_SYS_ADMIN) is
// returned to the caller, which says so; the others are copied.
#include <errno.h>
#include <sys/xattr.h>

#include <string>
#include <vector>

#include "args.h"
#include "errors.h"
#include "registry.h"

namespace iolab {

// The names of path's attributes; empty where the file system has none.
static std::vector<std::string> ListNames(Napi::Env env, const std::string& path) {
  std::vector<char> names;
  for (;;) {
    ssize_t n = llistxattr(path.c_str(), nullptr, 0);
    if (n < 0 && (errno == ENOTSUP || errno == EOPNOTSUPP)) return {};
    if (n < 0) ThrowErrno(env, errno, "llistxattr", path.c_str());
    if (n == 0) return {};
    names.resize(static_cast<size_t>(n));
    n = llistxattr(path.c_str(), names.data(), names.size());
    if (n >= 0) {
      names.resize(static_cast<size_t>(n));
      break;
    }
    if (errno != ERANGE) ThrowErrno(env, errno, "llistxattr", path.c_str());  // ERANGE: grew meanwhile, again
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < names.size();) {
    std::string name(&names[i]);
    i += name.size() + 1;
    if (!name.empty()) out.push_back(name);
  }
  return out;
}

// copyXattrs(fromPath, toFd): the names it could not copy.
static Napi::Value CopyXattrs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string from = StringArg(env, info[0], "fromPath");
  int to = FdArg(env, info[1]);
  Napi::Array failed = Napi::Array::New(env);
  uint32_t failures = 0;
  for (const std::string& name : ListNames(env, from)) {
    std::vector<char> value;
    ssize_t n;
    for (;;) {
      n = lgetxattr(from.c_str(), name.c_str(), nullptr, 0);
      if (n < 0) break;
      value.resize(static_cast<size_t>(n));
      n = lgetxattr(from.c_str(), name.c_str(), value.data(), value.size());
      if (n >= 0 || errno != ERANGE) break;
    }
    if (n == -1 && errno == ENODATA) continue;  // removed meanwhile
    if (n < 0 || fsetxattr(to, name.c_str(), value.data(), static_cast<size_t>(n), 0) < 0) {
      failed.Set(failures++, Napi::String::New(env, name));
    }
  }
  return failed;
}

static void Init(Napi::Env env, Napi::Object exports) {
  exports.Set("copyXattrs", Napi::Function::New(env, CopyXattrs, "copyXattrs"));
}

IOLAB_FEATURE(xattr_copy, Init);

}  // namespace iolab
