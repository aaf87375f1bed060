#include "live_objects.h"

#include <unistd.h>

#include "registry.h"

namespace iolab {

std::atomic<int64_t> live_counters[static_cast<int>(Live::kCount)];

OwnedFd::OwnedFd(int fd) : fd_(fd) {
  if (fd_ >= 0) LiveInc(Live::kOwnedFds);
}

OwnedFd::~OwnedFd() {
  if (fd_ >= 0) {
    close(fd_);
    LiveDec(Live::kOwnedFds);
  }
}

int OwnedFd::release() {
  int fd = fd_;
  if (fd_ >= 0) LiveDec(Live::kOwnedFds);
  fd_ = -1;
  return fd;
}

static Napi::Value LiveObjects(const Napi::CallbackInfo& info) {
  static const char* const names[] = {"rings",    "ringOps",    "heldBuffers",   "mappings",
                                      "ownedFds", "nativeJobs", "nativeServers", "bufferRings",
                                      "ringStreams"};
  static_assert(sizeof(names) / sizeof(names[0]) == static_cast<int>(Live::kCount),
                "one name per counter");
  Napi::Object out = Napi::Object::New(info.Env());
  for (int i = 0; i < static_cast<int>(Live::kCount); i++)
    out.Set(names[i], Napi::Number::New(info.Env(), double(live_counters[i].load())));
  return out;
}

static void Init(Napi::Env env, Napi::Object exports) {
  exports.Set("liveObjects", Napi::Function::New(env, LiveObjects));
  exports.Set("sanitized", Napi::Boolean::New(env,
#ifdef IOLAB_ASAN
                                              true
#else
                                              false
#endif
                                              ));
}

IOLAB_FEATURE(live_objects, Init);

}  // namespace iolab
