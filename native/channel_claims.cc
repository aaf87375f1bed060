// What a channel's setup uses before it has an end: channelClaim and channelUnclaim
// (channel_claims.h), and channelPeerPidfd, the process at the other end of its socket.
#include "channel_claims.h"

#include <errno.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <mutex>
#include <set>

#include "args.h"
#include "errors.h"
#include "registry.h"

namespace iolab {
namespace {

std::mutex claims_mutex;
std::set<SocketKey>* claims = new std::set<SocketKey>();  // never freed: no exit-time destructor races a worker

// channelClaim(socket): ERR_CHANNEL_BUSY when a channel of this process holds it already.
napi_value Claim(napi_env env, napi_callback_info info) {
  RawArgs<1> args(env, info);
  SocketKey key = SocketKeyOf(env, FdArg(env, args[0], "socket"));
  std::lock_guard<std::mutex> lock(claims_mutex);
  if (!claims->insert(key).second)
    ThrowError(env, "ERR_CHANNEL_BUSY", "the socket already carries a channel in this process: one channel per socket (a second would take the first one's wake-ups)");
  return nullptr;
}

// channelUnclaim(socket): a setup that failed before its end took the claim over.
napi_value UnclaimMethod(napi_env env, napi_callback_info info) {
  RawArgs<1> args(env, info);
  struct stat st;
  if (fstat(FdArg(env, args[0], "socket"), &st) == 0) Unclaim({uint64_t(st.st_dev), uint64_t(st.st_ino)});
  return nullptr;
}

// channelPeerPidfd(socket) -> a pidfd (the caller's to close) of the process SO_PEERCRED names:
// the one that made the socketpair, or connected or listened. -1: it has ended (ESRCH); -2:
// nothing to watch: it is this process (a thread of it, or a socketpair made here), which no
// pidfd tells apart, or pidfd_open is refused here.
napi_value PeerPidfd(napi_env env, napi_callback_info info) {
  RawArgs<1> args(env, info);
  int fd = FdArg(env, args[0], "socket");
  struct ucred cred = {};
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) ThrowErrno(env, errno, "getsockopt");
  if (cred.pid <= 0 || cred.pid == getpid()) return Napi::Number::New(env, -2);
  return Napi::Number::New(env, PidfdOpen(env, cred.pid));
}

void Init(Napi::Env env, Napi::Object exports) {
  napi_value fn;
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_function(env, "channelPeerPidfd", NAPI_AUTO_LENGTH, RawCallback<PeerPidfd>, nullptr, &fn));
  exports.Set("channelPeerPidfd", Napi::Value(env, fn));
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_function(env, "channelClaim", NAPI_AUTO_LENGTH, RawCallback<Claim>, nullptr, &fn));
  exports.Set("channelClaim", Napi::Value(env, fn));
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_function(env, "channelUnclaim", NAPI_AUTO_LENGTH, RawCallback<UnclaimMethod>, nullptr, &fn));
  exports.Set("channelUnclaim", Napi::Value(env, fn));
}

}  // namespace

int PidfdOpen(napi_env env, int pid) {
  int fd = int(syscall(SYS_pidfd_open, pid_t(pid), 0));
  if (fd >= 0) return fd;
  if (errno == ESRCH) return -1;
  if (errno == ENOSYS || errno == EPERM || errno == EACCES) return -2;  // before 5.3, or seccomp
  ThrowErrno(env, errno, "pidfd_open");
}

SocketKey SocketKeyOf(napi_env env, int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) ThrowErrno(env, errno, "fstat");
  return {uint64_t(st.st_dev), uint64_t(st.st_ino)};
}

void Unclaim(SocketKey key) {
  std::lock_guard<std::mutex> lock(claims_mutex);
  claims->erase(key);
}

IOLAB_FEATURE(channel_claims, Init);

}  // namespace iolab
