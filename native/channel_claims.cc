// channelClaim and channelUnclaim (channel_claims.h).
#include "channel_claims.h"

#include <errno.h>
#include <sys/stat.h>

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

void Init(Napi::Env env, Napi::Object exports) {
  napi_value fn;
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_function(env, "channelClaim", NAPI_AUTO_LENGTH, RawCallback<Claim>, nullptr, &fn));
  exports.Set("channelClaim", Napi::Value(env, fn));
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_function(env, "channelUnclaim", NAPI_AUTO_LENGTH, RawCallback<UnclaimMethod>, nullptr, &fn));
  exports.Set("channelUnclaim", Napi::Value(env, fn));
}

}  // namespace

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
