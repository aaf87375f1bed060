// Sockets: socket/bind/listen/accept/connect/getsockname/getpeername/close for AF_UNIX, AF_INET
// and AF_INET6 (addresses in socket_address.h), socketpair, and sendmsg/recvmsg with SCM_RIGHTS
// fd passing and SCM_CREDENTIALS, SO_PEERCRED, SO_PASSCRED, and poll(2) on one fd.
// Every fd made or received here is close-on-exec (SOCK_CLOEXEC, MSG_CMSG_CLOEXEC) and is
// either returned to JS or closed (OwnedFd) — including on every error path.
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "addon.h"
#include "args.h"
#include "errors.h"
#include "live_objects.h"
#include "registry.h"
#include "socket_address.h"
#include "unix_msg.h"
#include "unix_socket.h"

namespace iolab {

const Choice kSocketTypes[] = {
    {"stream", SOCK_STREAM}, {"dgram", SOCK_DGRAM}, {"seqpacket", SOCK_SEQPACKET}, {nullptr, 0}};
const Choice kSocketFamilies[] = {{"unix", AF_UNIX}, {"inet", AF_INET}, {"inet6", AF_INET6}, {nullptr, 0}};

static bool IsUndefined(napi_env env, napi_value v) {
  napi_valuetype type;
  return napi_typeof(env, v, &type) == napi_ok && type == napi_undefined;
}

// socket(family, type = 'stream', { nonBlocking })
static Napi::Value Socket(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int family = ChoiceArg(env, info[0], "family", kSocketFamilies);
  int type = info[1].IsUndefined() ? SOCK_STREAM : ChoiceArg(env, info[1], "type", kSocketTypes);
  if (OptionsArg(env, info[2]).Bool("nonBlocking", false)) type |= SOCK_NONBLOCK;
  int fd = socket(family, type | SOCK_CLOEXEC, 0);
  if (fd < 0) ThrowErrno(env, errno, "socket");
  return Napi::Number::New(env, fd);
}

static Napi::Value SocketPair(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int type = ChoiceArg(env, info[0], "type", kSocketTypes);
  if (OptionsArg(env, info[1]).Bool("nonBlocking", false)) type |= SOCK_NONBLOCK;
  int fds[2];
  if (socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, fds) < 0) ThrowErrno(env, errno, "socketpair");
  OwnedFd a(fds[0]), b(fds[1]);
  Napi::Array out = Napi::Array::New(env, 2);
  out.Set(uint32_t(0), Napi::Number::New(env, a.get()));
  out.Set(uint32_t(1), Napi::Number::New(env, b.get()));
  a.release();
  b.release();
  return out;
}

static Napi::Value Bind(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = FdArg(env, info[0]);
  SocketAddress a = SocketAddressArg(env, info[1], fd, AddressUse::kBind, "bind");
  if (bind(fd, a.addr(), a.length) < 0) ThrowSocketAddressErrno(env, errno, "bind", a);
  return env.Undefined();
}

static Napi::Value Listen(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = FdArg(env, info[0]);
  int backlog = info[1].IsUndefined() ? 511 : int(IntegerArg(env, info[1], "backlog", 0, INT32_MAX));
  if (listen(fd, backlog) < 0) ThrowErrno(env, errno, "listen");
  return env.Undefined();
}

static Napi::Value Accept(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = FdArg(env, info[0]);
  int client;
  do client = accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
  while (client < 0 && errno == EINTR);
  if (client < 0) ThrowErrno(env, errno, "accept");
  return Napi::Number::New(env, client);
}

static Napi::Value Connect(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = FdArg(env, info[0]);
  SocketAddress a = SocketAddressArg(env, info[1], fd, AddressUse::kConnect, "connect");
  if (connect(fd, a.addr(), a.length) == 0) return env.Undefined();
  int err = errno;
  if (err == EINTR) {
    // The connection goes on in the kernel; a second connect() would fail. Wait for it instead.
    pollfd p{fd, POLLOUT, 0};
    int r;
    do r = poll(&p, 1, -1);
    while (r < 0 && errno == EINTR);
    socklen_t len = sizeof(err);
    if (r < 0) err = errno;
    else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0) err = errno;
    if (err == 0) return env.Undefined();
  }
  ThrowSocketAddressErrno(env, err, "connect", a);
}

// shutdown(fd, how): 'write' (SHUT_WR: the peer reads EOF), 'read' or 'both'.
static Napi::Value Shutdown(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = FdArg(env, info[0]);
  static const Choice hows[] = {{"read", SHUT_RD}, {"write", SHUT_WR}, {"both", SHUT_RDWR}, {nullptr, 0}};
  int how = ChoiceArg(env, info[1], "how", hows);
  if (shutdown(fd, how) < 0) ThrowErrno(env, errno, "shutdown");
  return env.Undefined();
}

// getsockname(fd) / getpeername(fd): a Unix path, or { address, family, port }.
template <int (*get)(int, sockaddr*, socklen_t*)>
static napi_value SocketName(napi_env env, napi_callback_info info) {
  RawArgs<1> args(env, info);
  int fd = FdArg(env, args[0]);
  sockaddr_storage addr{};
  socklen_t length = sizeof(addr);
  if (get(fd, reinterpret_cast<sockaddr*>(&addr), &length) < 0) {
    ThrowErrno(env, errno, get == getsockname ? "getsockname" : "getpeername");
  }
  napi_value value = SocketAddressValue(env, addr, length, false);
  if (value == nullptr) ThrowErrno(env, EAFNOSUPPORT, get == getsockname ? "getsockname" : "getpeername");
  return value;
}

static napi_value Close(napi_env env, napi_callback_info info) {
  RawArgs<1> args(env, info);
  int fd = FdArg(env, args[0]);
  // On Linux the fd is released even when close() reports EINTR: never retry.
  if (close(fd) < 0 && errno != EINTR) ThrowErrno(env, errno, "close");
  return nullptr;
}

// Control-message space: `fds` descriptors in one SCM_RIGHTS, plus one SCM_CREDENTIALS.
// sendmsg and recvmsg are the hot path of every fd-passing loop: raw napi callbacks, in two
// forms that share everything. sendmsg(fd, buffers, options) reads the options here;
// sendmsgWith(fd, buffers, fds, credentials, to, options) takes their values as arguments
// (src/native.ts reads them in JS, where a property read costs next to nothing) and `options`
// only for its type check. The checks are the same either way.
template <bool with_values>
static napi_value SendMsg(napi_env env, napi_callback_info info) {
  RawArgs<6> args(env, info);
  int fd = FdArg(env, args[0]);
  OptionsArg options(env, args[with_values ? 5 : 2]);
  napi_value fdsValue = args[2], credentialsValue = args[3], toValue = args[4];
  if (!with_values) {
    napi_get_undefined(env, &fdsValue);
    credentialsValue = toValue = fdsValue;
    if (options.present()) {
      Keys keys(env);
      credentialsValue = options.Get(keys[Key::kCredentials]);
      fdsValue = options.Get(keys[Key::kFds]);
      toValue = options.Get(keys[Key::kTo]);
    }
  }

  int fds[kMaxFdsPerMessage];
  size_t nfds = 0;
  bool haveTo = false;
  SocketAddress to;
  bool credentials = OptionalBoolArg(env, credentialsValue, "options.credentials", false);
  if (!IsUndefined(env, fdsValue)) nfds = FdListArg(env, fdsValue, "options.fds", kMaxFdsPerMessage, "SCM_MAX_FD", fds);
  if (!IsUndefined(env, toValue)) {
    to = SocketAddressArg(env, toValue, fd, AddressUse::kSendTo, "sendmsg", "options.to");
    haveTo = true;
  }

  IovecArray iov = IovecsArg(env, args[1]);  // last: no JS runs after this
  CheckCarriesControl(env, fd, iov.total(), nfds, credentials);
  alignas(struct cmsghdr) char control[kMaxRecvControl];
  msghdr msg{};
  msg.msg_iov = iov.data();
  msg.msg_iovlen = iov.size();
  if (haveTo) {
    msg.msg_name = to.addr();
    msg.msg_namelen = to.length;
  }
  BuildSendControl(&msg, control, fds, nfds, credentials);
  ssize_t n;
  do n = sendmsg(fd, &msg, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (haveTo) ThrowSocketAddressErrno(env, errno, "sendmsg", to);
    ThrowErrno(env, errno, "sendmsg");
  }
  napi_value result;
  napi_create_int64(env, int64_t(n), &result);
  return result;
}

// The Float64Array recvmsgWith may write its result into (Received::ToScratch), or nullptr.
static double* ScratchArg(napi_env env, napi_value value) {
  bool is_typed = false;
  if (napi_is_typedarray(env, value, &is_typed) != napi_ok || !is_typed) return nullptr;
  napi_typedarray_type type;
  size_t length = 0;
  void* data = nullptr;
  if (napi_get_typedarray_info(env, value, &type, &length, &data, nullptr, nullptr) != napi_ok ||
      type != napi_float64_array || length < Received::kScratchLength)
    return nullptr;
  return static_cast<double*>(data);
}

// recvmsg(fd, buffers, options) and recvmsgWith(fd, buffers, maxFds, controlFds, options,
// scratch?), as sendmsg's two forms; with a scratch Float64Array the result is written there
// for src/native.ts to make the object from (fewer calls back into JS than making it here).
template <bool with_values>
static napi_value RecvMsg(napi_env env, napi_callback_info info) {
  RawArgs<6> args(env, info);
  int fd = FdArg(env, args[0]);
  OptionsArg options(env, args[with_values ? 4 : 2]);
  napi_value maxValue = args[2], controlValue = args[3];
  if (!with_values) {
    napi_get_undefined(env, &maxValue);
    controlValue = maxValue;
    if (options.present()) {
      Keys keys(env);
      maxValue = options.Get(keys[Key::kMaxFds]);
      controlValue = options.Get(keys[Key::kControlFds]);
    }
  }
  int maxFds = int(OptionalIntegerArg(env, maxValue, "options.maxFds", 0, kMaxFdsPerMessage, 0));
  int controlFds = int(OptionalIntegerArg(env, controlValue, "options.controlFds", 0, kMaxFdsPerMessage, kMaxFdsPerMessage));

  double* scratch = with_values ? ScratchArg(env, args[5]) : nullptr;
  IovecArray iov = IovecsArg(env, args[1]);  // last: no JS runs after this
  alignas(struct cmsghdr) char control[kMaxRecvControl];
  sockaddr_storage from{};
  msghdr msg{};
  msg.msg_name = &from;
  msg.msg_namelen = sizeof(from);
  msg.msg_iov = iov.data();
  msg.msg_iovlen = iov.size();
  msg.msg_control = control;
  msg.msg_controllen = RecvControlSpace(controlFds);
  memset(control, 0, msg.msg_controllen);
  ssize_t n;
  do n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  if (n < 0) ThrowErrno(env, errno, "recvmsg");

  Received received(&msg, size_t(n), maxFds);  // owns every fd that came: any throw closes them
  if (received.maybe_eof()) received.ApplyEof(SocketTypeOf(fd), fd);
  return scratch != nullptr ? received.ToScratch(env, scratch) : received.ToValue(env);
}

static Napi::Object CredentialsObject(Napi::Env env, const ucred& cred) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("pid", Napi::Number::New(env, cred.pid));
  out.Set("uid", Napi::Number::New(env, cred.uid));
  out.Set("gid", Napi::Number::New(env, cred.gid));
  return out;
}

static Napi::Value PeerCredentials(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = FdArg(env, info[0]);
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) ThrowErrno(env, errno, "getsockopt");
  return CredentialsObject(env, cred);
}

static Napi::Value SetPassCredentials(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = FdArg(env, info[0]);
  int on = BoolArg(env, info[1], "on") ? 1 : 0;
  if (setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) < 0) ThrowErrno(env, errno, "setsockopt");
  return env.Undefined();
}

static int64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

static Napi::Value WaitFd(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = FdArg(env, info[0]);
  static const Choice events[] = {{"read", POLLIN}, {"write", POLLOUT}, {nullptr, 0}};
  short event = short(ChoiceArg(env, info[1], "event", events));
  int64_t timeout = IntegerArg(env, info[2], "timeoutMs", -1, INT32_MAX);
  pollfd p{fd, event, 0};
  int64_t deadline = timeout >= 0 ? NowMs() + timeout : -1;
  int r;
  for (;;) {
    int wait = deadline < 0 ? -1 : int(std::max<int64_t>(0, deadline - NowMs()));
    r = poll(&p, 1, wait);
    if (r >= 0 || errno != EINTR) break;
  }
  if (r < 0) ThrowErrno(env, errno, "poll");
  if (p.revents & POLLNVAL) ThrowErrno(env, EBADF, "poll");
  return Napi::Boolean::New(env, r > 0 && p.revents != 0);  // POLLHUP/POLLERR count as ready
}

static void Init(Napi::Env env, Napi::Object exports) {
  exports.Set("socket", Napi::Function::New(env, Socket, "socket"));
  exports.Set("socketpair", Napi::Function::New(env, SocketPair, "socketpair"));
  exports.Set("bind", Napi::Function::New(env, Bind, "bind"));
  exports.Set("listen", Napi::Function::New(env, Listen, "listen"));
  exports.Set("accept", Napi::Function::New(env, Accept, "accept"));
  exports.Set("connect", Napi::Function::New(env, Connect, "connect"));
  exports.Set("shutdown", Napi::Function::New(env, Shutdown, "shutdown"));
  const struct { const char* name; napi_callback cb; } raw[] = {
      {"sendmsg", RawCallback<SendMsg<false>>}, {"sendmsgWith", RawCallback<SendMsg<true>>},
      {"recvmsg", RawCallback<RecvMsg<false>>}, {"recvmsgWith", RawCallback<RecvMsg<true>>},
      {"close", RawCallback<Close>},
      {"getsockname", RawCallback<SocketName<getsockname>>}, {"getpeername", RawCallback<SocketName<getpeername>>},
  };
  for (const auto& f : raw) {
    napi_value fn;
    NAPI_THROW_IF_FAILED_VOID(env, napi_create_function(env, f.name, NAPI_AUTO_LENGTH, f.cb, nullptr, &fn));
    exports.Set(f.name, Napi::Value(env, fn));
  }
  exports.Set("peerCredentials", Napi::Function::New(env, PeerCredentials, "peerCredentials"));
  exports.Set("setPassCredentials", Napi::Function::New(env, SetPassCredentials, "setPassCredentials"));
  exports.Set("waitFd", Napi::Function::New(env, WaitFd, "waitFd"));
}

IOLAB_FEATURE(unix_socket, Init);

}  // namespace iolab
