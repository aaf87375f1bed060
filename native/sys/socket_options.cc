// setsockopt(fd, option, value) and getsockopt(fd, option) by the option's name: one table of the
// options iolab offers, each a flag (true/false), a number (a byte count), or SO_LINGER's
// seconds (-1: off; 0: close() resets the connection). getsockopt reads what the kernel holds, so
// SO_RCVBUF and SO_SNDBUF come back doubled (socket(7)).
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>

#include "args.h"
#include "errors.h"
#include "registry.h"

namespace iolab {

enum class Kind { kFlag, kNumber, kLinger };  // true/false; a number in [0, 2^31-1]; struct linger

struct SocketOption {
  const char* name;
  int level;
  int option;
  Kind kind;
};

static const SocketOption kOptions[] = {
    {"SO_REUSEADDR", SOL_SOCKET, SO_REUSEADDR, Kind::kFlag},  {"SO_REUSEPORT", SOL_SOCKET, SO_REUSEPORT, Kind::kFlag},
    {"SO_KEEPALIVE", SOL_SOCKET, SO_KEEPALIVE, Kind::kFlag},  {"SO_BROADCAST", SOL_SOCKET, SO_BROADCAST, Kind::kFlag},
    {"TCP_NODELAY", IPPROTO_TCP, TCP_NODELAY, Kind::kFlag},   {"IPV6_V6ONLY", IPPROTO_IPV6, IPV6_V6ONLY, Kind::kFlag},
    {"SO_RCVBUF", SOL_SOCKET, SO_RCVBUF, Kind::kNumber},      {"SO_SNDBUF", SOL_SOCKET, SO_SNDBUF, Kind::kNumber},
    {"SO_LINGER", SOL_SOCKET, SO_LINGER, Kind::kLinger},
};

constexpr size_t kOptionCount = sizeof(kOptions) / sizeof(kOptions[0]);

// The option named by value (TypeError ERR_INVALID_ARG_VALUE listing the names otherwise).
static const SocketOption& OptionArg(napi_env env, napi_value value) {
  static const struct Names {
    Choice list[kOptionCount + 1];
    Names() {
      for (size_t i = 0; i < kOptionCount; i++) list[i] = {kOptions[i].name, int(i)};
      list[kOptionCount] = {nullptr, 0};
    }
  } names;
  return kOptions[ChoiceArg(env, value, "option", names.list)];
}

static Napi::Value SetSockOpt(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = FdArg(env, info[0]);
  const SocketOption& o = OptionArg(env, info[1]);
  int ret;
  if (o.kind == Kind::kLinger) {
    int seconds = int(IntegerArg(env, info[2], "value", -1, INT32_MAX));
    struct linger l = {seconds >= 0 ? 1 : 0, seconds >= 0 ? seconds : 0};
    ret = setsockopt(fd, o.level, o.option, &l, sizeof(l));
  } else {
    int value = o.kind == Kind::kFlag ? (BoolArg(env, info[2], "value") ? 1 : 0) : int(IntegerArg(env, info[2], "value", 0, INT32_MAX));
    ret = setsockopt(fd, o.level, o.option, &value, sizeof(value));
  }
  if (ret < 0) ThrowErrno(env, errno, "setsockopt");
  return env.Undefined();
}

static Napi::Value GetSockOpt(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = FdArg(env, info[0]);
  const SocketOption& o = OptionArg(env, info[1]);
  if (o.kind == Kind::kLinger) {
    struct linger l = {0, 0};
    socklen_t length = sizeof(l);
    if (getsockopt(fd, o.level, o.option, &l, &length) < 0) ThrowErrno(env, errno, "getsockopt");
    return Napi::Number::New(env, l.l_onoff ? l.l_linger : -1);
  }
  int value = 0;
  socklen_t length = sizeof(value);
  if (getsockopt(fd, o.level, o.option, &value, &length) < 0) ThrowErrno(env, errno, "getsockopt");
  if (o.kind == Kind::kFlag) return Napi::Boolean::New(env, value != 0);
  return Napi::Number::New(env, value);
}

static void Init(Napi::Env env, Napi::Object exports) {
  exports.Set("setsockopt", Napi::Function::New(env, SetSockOpt, "setsockopt"));
  exports.Set("getsockopt", Napi::Function::New(env, GetSockOpt, "getsockopt"));
}

IOLAB_FEATURE(socket_options, Init);

}  // namespace iolab
