// The limits the addon checks against, exported once so that TypeScript never copies them:
// `constants` = { IOV_MAX, SCM_MAX_FD, UNIX_PATH_MAX, UNIX_ABSTRACT_MAX, PAGE_SIZE,
// IORING_MAX_ENTRIES }.
#include <sys/un.h>
#include <unistd.h>

#include "args.h"
#include "registry.h"
#include "ring/setup.h"
#include "sys/unix_msg.h"
#include "sys/unix_socket.h"

namespace iolab {

static void Init(Napi::Env env, Napi::Object exports) {
  Napi::Object constants = Napi::Object::New(env);
  constants.Set("IOV_MAX", Napi::Number::New(env, double(kMaxBuffers)));
  constants.Set("SCM_MAX_FD", Napi::Number::New(env, kMaxFdsPerMessage));
  constants.Set("UNIX_PATH_MAX", Napi::Number::New(env, double(kMaxSocketPathBytes)));
  constants.Set("UNIX_ABSTRACT_MAX", Napi::Number::New(env, double(sizeof(sockaddr_un::sun_path))));
  constants.Set("PAGE_SIZE", Napi::Number::New(env, double(sysconf(_SC_PAGESIZE))));
  constants.Set("IORING_MAX_ENTRIES", Napi::Number::New(env, kMaxRingEntries));
  constants.Freeze();
  exports.Set("constants", constants);
}

IOLAB_FEATURE(constants, Init);

}  // namespace iolab
