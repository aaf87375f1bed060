#include "unix_msg.h"

#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "addon.h"
#include "args.h"
#include "errors.h"
#include "live_objects.h"
#include "registry.h"
#include "socket_address.h"

namespace iolab {

// ---- sending ----

size_t SendControlSpace(size_t nfds, bool credentials) {
  return (nfds > 0 ? CMSG_SPACE(nfds * sizeof(int)) : 0) + (credentials ? CMSG_SPACE(sizeof(struct ucred)) : 0);
}

void BuildSendControl(struct msghdr* msg, char* control, const int* fds, size_t nfds, bool credentials) {
  size_t space = SendControlSpace(nfds, credentials);
  msg->msg_control = space > 0 ? control : nullptr;
  msg->msg_controllen = space;
  if (space == 0) return;
  memset(control, 0, space);
  struct cmsghdr* c = CMSG_FIRSTHDR(msg);
  if (nfds > 0) {
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
    memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
    c = CMSG_NXTHDR(msg, c);
  }
  if (credentials) {
    struct ucred cred = {getpid(), getuid(), getgid()};
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_CREDENTIALS;
    c->cmsg_len = CMSG_LEN(sizeof(cred));
    memcpy(CMSG_DATA(c), &cred, sizeof(cred));
  }
}

int SocketTypeOf(int fd) {
  int type = 0;
  socklen_t len = sizeof(type);
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0) return -1;
  return type;
}

void CheckCarriesControl(napi_env env, int fd, size_t payload, size_t nfds, bool credentials) {
  if (payload > 0 || (nfds == 0 && !credentials)) return;
  int type = SocketTypeOf(fd);
  if (type < 0) ThrowErrno(env, errno, "getsockopt");
  if (type == SOCK_STREAM) {
    ThrowTypeError(env, "ERR_INVALID_ARG_VALUE",
                   "sendmsg on a stream socket needs at least one byte of payload to carry fds or credentials");
  }
}

// ---- receiving ----

size_t RecvControlSpace(int room_fds) {
  return (room_fds > 0 ? CMSG_SPACE(size_t(room_fds) * sizeof(int)) : 0) + CMSG_SPACE(sizeof(struct ucred));
}

Received::Received(const struct msghdr* msg, size_t bytes, int max_fds) : bytes_(bytes) {
  // msg_controllen is what the kernel wrote; CMSG_NXTHDR stops at its end.
  for (struct cmsghdr* c = CMSG_FIRSTHDR(msg); c != nullptr; c = CMSG_NXTHDR(const_cast<struct msghdr*>(msg), c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_len < CMSG_LEN(0)) continue;
    if (c->cmsg_type == SCM_RIGHTS) {
      size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; i++) {
        int fd;
        memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        if (nfds_ < kMaxFds) {
          fds_[nfds_++] = fd;
          LiveInc(Live::kOwnedFds);
        } else {
          close(fd);  // cannot happen with our control space; never leak one anyway
        }
      }
    } else if (c->cmsg_type == SCM_CREDENTIALS && c->cmsg_len >= CMSG_LEN(sizeof(struct ucred))) {
      memcpy(&cred_, CMSG_DATA(c), sizeof(cred_));
      have_credentials_ = true;
    }
  }
  data_truncated_ = (msg->msg_flags & MSG_TRUNC) != 0;
  fds_truncated_ = (msg->msg_flags & MSG_CTRUNC) != 0 || nfds_ > size_t(max_fds);
  if (fds_truncated_) {
    for (size_t i = 0; i < nfds_; i++) close(fds_[i]);
    LiveAdd(Live::kOwnedFds, -int64_t(nfds_));
    nfds_ = 0;
  }
  // The sender's address, made a JS value (socket_address.h) only when asked for. msg_namelen
  // is the address's whole length even where the kernel cut it to the room given.
  if (msg->msg_name != nullptr) {
    from_length_ = std::min(socklen_t(sizeof(from_)), msg->msg_namelen);
    memcpy(&from_, msg->msg_name, from_length_);
  }
}

Received::~Received() {
  for (size_t i = 0; i < nfds_; i++) close(fds_[i]);
  LiveAdd(Live::kOwnedFds, -int64_t(nfds_));
}

void Received::ApplyEof(int socket_type, int poll_fd) {
  if (!maybe_eof()) return;
  if (socket_type == SOCK_STREAM) {
    eof_ = true;  // a stream never delivers 0 bytes otherwise
  } else if (socket_type == SOCK_SEQPACKET) {
    struct pollfd p = {poll_fd, POLLRDHUP, 0};
    eof_ = poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP)) != 0;
  }
}

enum : int { kDataTruncatedFlag = 1, kFdsTruncatedFlag = 2, kEofFlag = 4 };

// With the class src/native.ts registers: new Received(bytes, fds, flags, credentials, from),
// one call into a JS constructor that V8 optimizes, instead of a property set per field.

int Received::Flags() const {
  return (data_truncated_ ? kDataTruncatedFlag : 0) | (fds_truncated_ ? kFdsTruncatedFlag : 0) | (eof_ ? kEofFlag : 0);
}

napi_value Received::Credentials(napi_env env) const {
  Keys keys(env);
  napi_value c, v;
  NAPI_THROW_IF_FAILED(env, napi_create_object(env, &c), nullptr);
  napi_create_int32(env, cred_.pid, &v);
  napi_set_property(env, c, keys[Key::kPid], v);
  napi_create_uint32(env, cred_.uid, &v);
  napi_set_property(env, c, keys[Key::kUid], v);
  napi_create_uint32(env, cred_.gid, &v);
  napi_set_property(env, c, keys[Key::kGid], v);
  return c;
}

napi_value Received::ToScratch(napi_env env, double* out) {
  out[0] = double(bytes_);
  out[1] = Flags();
  out[2] = double(nfds_);
  for (size_t i = 0; i < nfds_ && i < kMaxFdsPerMessage; i++) out[3 + i] = fds_[i];
  napi_value extra;
  napi_get_undefined(env, &extra);
  napi_value from = SocketAddressValue(env, from_, from_length_, true);
  if (have_credentials_ || from != nullptr) {
    Keys keys(env);
    NAPI_THROW_IF_FAILED(env, napi_create_object(env, &extra), nullptr);
    if (have_credentials_) napi_set_property(env, extra, keys[Key::kCredentials], Credentials(env));
    if (from != nullptr) napi_set_property(env, extra, keys[Key::kFrom], from);
  }
  LiveAdd(Live::kOwnedFds, -int64_t(nfds_));  // JS owns them now
  nfds_ = 0;
  return extra;
}

napi_value Received::ToValue(napi_env env) {
  const Addon& addon = AddonOf(env);
  if (addon.recv_result_class != nullptr) {
    napi_value ctor, args[5], out;
    NAPI_THROW_IF_FAILED(env, napi_get_reference_value(env, addon.recv_result_class, &ctor), nullptr);
    napi_create_double(env, double(bytes_), &args[0]);
    // fds: none -> undefined, one -> the number (the common case; JS makes the array), more ->
    // an array made here.
    if (nfds_ == 0) {
      napi_get_undefined(env, &args[1]);
    } else if (nfds_ == 1) {
      napi_create_int32(env, fds_[0], &args[1]);
    } else {
      NAPI_THROW_IF_FAILED(env, napi_create_array_with_length(env, nfds_, &args[1]), nullptr);
      for (size_t i = 0; i < nfds_; i++) {
        napi_value fd;
        napi_create_int32(env, fds_[i], &fd);
        napi_set_element(env, args[1], uint32_t(i), fd);
      }
    }
    napi_create_int32(env, Flags(), &args[2]);
    napi_get_undefined(env, &args[3]);
    napi_get_undefined(env, &args[4]);
    if (have_credentials_) args[3] = Credentials(env);
    if (napi_value from = SocketAddressValue(env, from_, from_length_, true)) args[4] = from;
    NAPI_THROW_IF_FAILED(env, napi_new_instance(env, ctor, 5, args, &out), nullptr);
    LiveAdd(Live::kOwnedFds, -int64_t(nfds_));  // JS owns them now
    nfds_ = 0;
    return out;
  }
  Keys keys(env);
  auto set = [&](napi_value obj, Key k, napi_value v) {
    NAPI_THROW_IF_FAILED_VOID(env, napi_set_property(env, obj, keys[k], v));
  };
  auto boolean = [&](bool b) { napi_value v; napi_get_boolean(env, b, &v); return v; };
  auto number = [&](double d) { napi_value v; napi_create_double(env, d, &v); return v; };
  napi_value out, list;
  NAPI_THROW_IF_FAILED(env, napi_create_object(env, &out), nullptr);
  set(out, Key::kBytesRead, number(double(bytes_)));
  NAPI_THROW_IF_FAILED(env, napi_create_array_with_length(env, nfds_, &list), nullptr);
  for (size_t i = 0; i < nfds_; i++) napi_set_element(env, list, uint32_t(i), number(fds_[i]));
  set(out, Key::kFds, list);
  set(out, Key::kTruncated, boolean(data_truncated_ || fds_truncated_));
  set(out, Key::kDataTruncated, boolean(data_truncated_));
  set(out, Key::kFdsTruncated, boolean(fds_truncated_));
  if (have_credentials_) {
    napi_value c;
    NAPI_THROW_IF_FAILED(env, napi_create_object(env, &c), nullptr);
    set(c, Key::kPid, number(cred_.pid));
    set(c, Key::kUid, number(cred_.uid));
    set(c, Key::kGid, number(cred_.gid));
    set(out, Key::kCredentials, c);
  }
  if (napi_value from = SocketAddressValue(env, from_, from_length_, true)) set(out, Key::kFrom, from);
  set(out, Key::kEof, boolean(eof_));
  LiveAdd(Live::kOwnedFds, -int64_t(nfds_));  // JS owns them now
  nfds_ = 0;
  return out;
}

static napi_value SetRecvResultClass(napi_env env, napi_callback_info info) {
  RawArgs<1> args(env, info);
  napi_valuetype type;
  napi_typeof(env, args[0], &type);
  if (type != napi_function) ThrowArgType(env, "ctor", "a class", args[0]);
  Addon& addon = AddonOf(env);
  napi_ref ref;
  NAPI_THROW_IF_FAILED(env, napi_create_reference(env, args[0], 1, &ref), nullptr);
  if (addon.recv_result_class != nullptr) napi_delete_reference(env, addon.recv_result_class);
  addon.recv_result_class = ref;
  return nullptr;
}

static void Init(Napi::Env env, Napi::Object exports) {
  napi_value fn;
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_function(env, "setRecvResultClass", NAPI_AUTO_LENGTH,
                                                      RawCallback<SetRecvResultClass>, nullptr, &fn));
  exports.Set("setRecvResultClass", Napi::Value(env, fn));
}

IOLAB_FEATURE(unix_msg, Init);

}  // namespace iolab
