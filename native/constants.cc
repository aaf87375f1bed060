// `constants`: the limits the addon checks against, exported once so that TypeScript never
// copies them (IOV_MAX, SCM_MAX_FD, UNIX_PATH_MAX, UNIX_ABSTRACT_MAX, PAGE_SIZE,
// IORING_MAX_ENTRIES), and the flag bits the calls take as numbers: MSG_* (recv, send), SOCK_*
// and O_* (shmOpen's numeric flags, as fs.constants has them).
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "args.h"
#include "registry.h"
#include "ring/setup.h"
#include "sys/socket_address.h"
#include "sys/unix_msg.h"

namespace iolab {

static void Init(Napi::Env env, Napi::Object exports) {
  Napi::Object constants = Napi::Object::New(env);
  constants.Set("IOV_MAX", Napi::Number::New(env, double(kMaxBuffers)));
  constants.Set("SCM_MAX_FD", Napi::Number::New(env, kMaxFdsPerMessage));
  constants.Set("UNIX_PATH_MAX", Napi::Number::New(env, double(kMaxSocketPathBytes)));
  constants.Set("UNIX_ABSTRACT_MAX", Napi::Number::New(env, double(sizeof(sockaddr_un::sun_path))));
  constants.Set("PAGE_SIZE", Napi::Number::New(env, double(sysconf(_SC_PAGESIZE))));
  constants.Set("IORING_MAX_ENTRIES", Napi::Number::New(env, kMaxRingEntries));
  static const struct { const char* name; int value; } flags[] = {
      {"MSG_OOB", MSG_OOB}, {"MSG_PEEK", MSG_PEEK}, {"MSG_DONTROUTE", MSG_DONTROUTE}, {"MSG_CTRUNC", MSG_CTRUNC},
      {"MSG_TRUNC", MSG_TRUNC}, {"MSG_DONTWAIT", MSG_DONTWAIT}, {"MSG_EOR", MSG_EOR}, {"MSG_WAITALL", MSG_WAITALL},
      {"MSG_NOSIGNAL", MSG_NOSIGNAL}, {"MSG_MORE", MSG_MORE}, {"MSG_ERRQUEUE", MSG_ERRQUEUE},
      {"MSG_CMSG_CLOEXEC", MSG_CMSG_CLOEXEC},
      {"SOCK_STREAM", SOCK_STREAM}, {"SOCK_DGRAM", SOCK_DGRAM}, {"SOCK_SEQPACKET", SOCK_SEQPACKET},
      {"SOCK_RAW", SOCK_RAW}, {"SOCK_NONBLOCK", SOCK_NONBLOCK}, {"SOCK_CLOEXEC", SOCK_CLOEXEC},
      {"O_RDONLY", O_RDONLY}, {"O_WRONLY", O_WRONLY}, {"O_RDWR", O_RDWR}, {"O_CREAT", O_CREAT}, {"O_EXCL", O_EXCL},
      {"O_NOCTTY", O_NOCTTY}, {"O_TRUNC", O_TRUNC}, {"O_APPEND", O_APPEND}, {"O_NONBLOCK", O_NONBLOCK},
      {"O_DSYNC", O_DSYNC}, {"O_SYNC", O_SYNC}, {"O_DIRECT", O_DIRECT}, {"O_DIRECTORY", O_DIRECTORY},
      {"O_NOFOLLOW", O_NOFOLLOW}, {"O_NOATIME", O_NOATIME}, {"O_CLOEXEC", O_CLOEXEC},
  };
  for (const auto& f : flags) constants.Set(f.name, Napi::Number::New(env, f.value));
  constants.Freeze();
  exports.Set("constants", constants);
}

IOLAB_FEATURE(constants, Init);

}  // namespace iolab
