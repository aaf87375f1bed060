// The Ring's JS face: class Ring (ObjectWrap over RingCore), one method per op. Each method
// checks its arguments, fills an op record (bounce memory, iovecs, msghdr...), prepares nothing
// itself (RingCore::PrepSqe does, possibly later when the SQ has room) and returns a Promise.
#include <arpa/inet.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include "args.h"
#include "errors.h"
#include "live_objects.h"
#include "registry.h"
#include "ring.h"
#include "unix_socket.h"

namespace iolab {

void SetRingClosedErrorClass(Napi::Env env, Napi::Function ctor);

// One view: for a read, held (copied into at completion); for a write, copied now.
static void AddView(napi_env env, Op* op, napi_value view, View bytes, bool is_read) {
  char* data = bytes.data;
  size_t length = bytes.length;
  size_t at = op->bounce.size();
  op->bounce.resize(at + length);
  if (!is_read && length > 0) memcpy(op->bounce.data() + at, data, length);
  op->lengths.push_back(length);
  if (is_read) {
    napi_ref ref;
    NAPI_THROW_IF_FAILED_VOID(env, napi_create_reference(env, view, 1, &ref));
    op->targets.push_back(ref);
    LiveInc(Live::kHeldBuffers);
  }
}

// iovecs over the bounce memory, one per view (zero-length views keep their place).
static void BuildIovecs(Op* op) {
  op->iov.resize(op->lengths.size());
  size_t at = 0;
  for (size_t i = 0; i < op->lengths.size(); i++) {
    op->iov[i].iov_base = op->bounce.data() + at;
    op->iov[i].iov_len = op->lengths[i];
    at += op->lengths[i];
  }
}

// The sync readv/writev's checks (at most IOV_MAX views, each an ArrayBufferView).
static void AddViewList(napi_env env, Op* op, napi_value value, bool is_read) {
  ListArg list(env, value, "buffers");
  for (uint32_t i = 0; i < list.size(); i++) AddView(env, op, list[i], list.ViewAt(i), is_read);
  BuildIovecs(op);
}

static void AddOneView(napi_env env, Op* op, napi_value value, bool is_read) {
  AddView(env, op, value, ViewArg(env, value, "buffer"), is_read);
}

// Copies `bytes` of bounce memory into the held views, as they are now: a view detached or
// shrunk in flight gets what still fits, nothing more.
static void CopyOut(napi_env env, Op* op, size_t bytes) {
  size_t at = 0;
  for (size_t i = 0; i < op->targets.size() && at < bytes; i++) {
    size_t n = std::min(op->lengths[i], bytes - at);
    napi_value view;
    View now;
    if (n > 0 && napi_get_reference_value(env, op->targets[i], &view) == napi_ok && view != nullptr &&
        ViewOf(env, view, &now) && now.data != nullptr)
      memcpy(now.data, op->bounce.data() + at, std::min(n, now.length));
    at += op->lengths[i];
  }
}

// ---- results ----

// Ints a recvmsg control buffer can hold: CMSG_SPACE(SCM_MAX_FD fds) + CMSG_SPACE(ucred), in ints.
static constexpr size_t kMaxControlInts = (CMSG_SPACE(kMaxFdsPerMessage * sizeof(int)) + CMSG_SPACE(sizeof(struct ucred))) / sizeof(int);

static void CloseReceivedFds(Op* op, std::vector<int>* out) {
  for (struct cmsghdr* c = CMSG_FIRSTHDR(&op->msg); c != nullptr; c = CMSG_NXTHDR(&op->msg, c)) {
    if (c->cmsg_len == 0) break;
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    int* fds = reinterpret_cast<int*>(CMSG_DATA(c));
    for (size_t i = 0; i < count; i++) {
      int fd;
      memcpy(&fd, fds + i, sizeof(int));
      if (out != nullptr) out->push_back(fd);
      else close(fd);
    }
  }
}

// The sender's address of a datagram ('\0'-prefixed when abstract), "" when it has none.
static std::string AddressText(Op* op) {
  const auto* addr = reinterpret_cast<const struct sockaddr_un*>(&op->addr);
  size_t base = offsetof(struct sockaddr_un, sun_path);
  socklen_t length = op->msg.msg_namelen;
  if (length <= base || addr->sun_family != AF_UNIX) return "";
  size_t n = std::min(size_t(length) - base, sizeof(addr->sun_path));
  if (addr->sun_path[0] == '\0') return std::string(addr->sun_path, n);
  return std::string(addr->sun_path, strnlen(addr->sun_path, n));
}

// Env teardown: nobody can receive what completed; close what would have been handed over.
void DiscardOpResult(Op* op, int res) {
  if (res < 0) return;
  if (op->kind == OpKind::kAccept || op->kind == OpKind::kSocket) close(res);
  if (op->kind == OpKind::kRecvmsg) CloseReceivedFds(op, nullptr);
}

void SettleOp(napi_env env, Op* op, int res, bool closing) {
  Napi::Env e(env);
  if (op->kind == OpKind::kCancelFd && res == -ENOENT) res = 0;  // nothing was waiting on fd
  if (res < 0) {
    napi_value error;
    if (closing && (res == -ECANCELED || res == -EINTR))
      error = RingClosedError(e).Value();
    else
      error = ErrnoError(e, -res, op->syscall, op->path.empty() ? nullptr : op->path.c_str()).Value();
    napi_reject_deferred(env, op->deferred, error);
    return;
  }
  napi_value value;
  switch (op->kind) {
    case OpKind::kRead: case OpKind::kReadv: case OpKind::kRecv:
      CopyOut(env, op, size_t(res));
      napi_create_int32(env, res, &value);
      break;
    case OpKind::kRecvmsg: {
      CopyOut(env, op, size_t(res));
      // At most what the control space can hold (it is sized for <= 253 fds + credentials).
      int fd_buf[kMaxControlInts];
      size_t nfds = 0;
      bool have_credentials = false;
      struct ucred cred {};
      for (struct cmsghdr* c = CMSG_FIRSTHDR(&op->msg); c != nullptr; c = CMSG_NXTHDR(&op->msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_len < CMSG_LEN(0)) continue;
        if (c->cmsg_type == SCM_RIGHTS) {
          size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
          for (size_t i = 0; i < count; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
            if (nfds < kMaxControlInts) fd_buf[nfds++] = fd;
            else close(fd);
          }
        } else if (c->cmsg_type == SCM_CREDENTIALS && c->cmsg_len >= CMSG_LEN(sizeof(cred))) {
          memcpy(&cred, CMSG_DATA(c), sizeof(cred));
          have_credentials = true;
        }
      }
      bool fds_truncated = (op->msg.msg_flags & MSG_CTRUNC) != 0 || nfds > size_t(op->max_fds);
      if (fds_truncated) {
        for (size_t i = 0; i < nfds; i++) close(fd_buf[i]);
        nfds = 0;
      }
      bool data_truncated = (op->msg.msg_flags & MSG_TRUNC) != 0;
      bool eof = false;
      if (res == 0 && nfds == 0 && !fds_truncated) {
        int type = 0;
        socklen_t len = sizeof(type);
        if (getsockopt(op->fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0)
          eof = type == SOCK_STREAM || type == SOCK_SEQPACKET;
      }
      napi_value keys[RingCore::kKeyCount];
      op->ring->KeyValues(keys);
      auto set = [&](napi_value obj, RingCore::Key k, napi_value v) { napi_set_property(env, obj, keys[k], v); };
      auto boolean = [&](bool b) { napi_value v; napi_get_boolean(env, b, &v); return v; };
      auto number = [&](double d) { napi_value v; napi_create_double(env, d, &v); return v; };
      napi_value out, list;
      napi_create_object(env, &out);
      set(out, RingCore::kBytes, number(res));
      napi_create_array_with_length(env, nfds, &list);
      for (size_t i = 0; i < nfds; i++) napi_set_element(env, list, uint32_t(i), number(fd_buf[i]));
      set(out, RingCore::kFds, list);
      set(out, RingCore::kTruncated, boolean(data_truncated || fds_truncated));
      set(out, RingCore::kDataTruncated, boolean(data_truncated));
      set(out, RingCore::kFdsTruncated, boolean(fds_truncated));
      if (have_credentials) {
        Napi::Object c = Napi::Object::New(e);
        c.Set("pid", Napi::Number::New(e, cred.pid));
        c.Set("uid", Napi::Number::New(e, cred.uid));
        c.Set("gid", Napi::Number::New(e, cred.gid));
        set(out, RingCore::kCredentials, c);
      }
      std::string from = AddressText(op);
      if (!from.empty()) set(out, RingCore::kFrom, Napi::String::New(e, from));
      set(out, RingCore::kEof, boolean(eof));
      value = out;
      break;
    }
    case OpKind::kConnect: case OpKind::kFsync: case OpKind::kClose: case OpKind::kNop:
      napi_get_undefined(env, &value);
      break;
    default:  // bytes written/sent, the new fd (accept, socket), ops cancelled (cancelFd)
      napi_create_int32(env, res, &value);
      break;
  }
  napi_resolve_deferred(env, op->deferred, value);
}

// ---- SQE preparation (RingCore calls it when the SQ has room) ----

bool RingCore::PrepSqe(Op* op) {
  struct io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (sqe == nullptr) return false;
  switch (op->kind) {
    case OpKind::kNop: io_uring_prep_nop(sqe); break;
    case OpKind::kRead: io_uring_prep_read(sqe, op->fd, op->bounce.data(), unsigned(op->bounce.size()), op->offset); break;
    case OpKind::kWrite: io_uring_prep_write(sqe, op->fd, op->bounce.data(), unsigned(op->bounce.size()), op->offset); break;
    case OpKind::kReadv: io_uring_prep_readv(sqe, op->fd, op->iov.data(), unsigned(op->iov.size()), op->offset); break;
    case OpKind::kWritev: io_uring_prep_writev(sqe, op->fd, op->iov.data(), unsigned(op->iov.size()), op->offset); break;
    case OpKind::kFsync: io_uring_prep_fsync(sqe, op->fd, op->flags); break;
    case OpKind::kSendmsg: io_uring_prep_sendmsg(sqe, op->fd, &op->msg, op->flags); break;
    case OpKind::kRecvmsg: io_uring_prep_recvmsg(sqe, op->fd, &op->msg, op->flags); break;
    case OpKind::kAccept: io_uring_prep_accept(sqe, op->fd, nullptr, nullptr, SOCK_CLOEXEC); break;
    case OpKind::kConnect:
      io_uring_prep_connect(sqe, op->fd, reinterpret_cast<struct sockaddr*>(&op->addr), op->addrlen);
      break;
    case OpKind::kRecv: io_uring_prep_recv(sqe, op->fd, op->bounce.data(), op->bounce.size(), int(op->flags)); break;
    case OpKind::kSend: io_uring_prep_send(sqe, op->fd, op->bounce.data(), op->bounce.size(), int(op->flags)); break;
    case OpKind::kClose: io_uring_prep_close(sqe, op->fd); break;
    case OpKind::kSocket: io_uring_prep_socket(sqe, int(op->offset), int(op->flags) | SOCK_CLOEXEC, 0, 0); break;
    case OpKind::kCancelFd:
      io_uring_prep_cancel_fd(sqe, op->fd, IORING_ASYNC_CANCEL_ALL);
      break;
  }
  io_uring_sqe_set_data(sqe, op);
  unsubmitted_++;
  return true;
}

// ---- class Ring ----

class RingWrap : public Napi::ObjectWrap<RingWrap>, public RingCore::Owner {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "Ring", {
        InstanceMethod<&RingWrap::Nop>("nop"),
        InstanceMethod<&RingWrap::Read>("read"),
        InstanceMethod<&RingWrap::Write>("write"),
        InstanceMethod<&RingWrap::Readv>("readv"),
        InstanceMethod<&RingWrap::Writev>("writev"),
        InstanceMethod<&RingWrap::Fsync>("fsync"),
        InstanceMethod<&RingWrap::Sendmsg>("sendmsg"),
        InstanceMethod<&RingWrap::Recvmsg>("recvmsg"),
        InstanceMethod<&RingWrap::Accept>("accept"),
        InstanceMethod<&RingWrap::Connect>("connect"),
        InstanceMethod<&RingWrap::Recv>("recv"),
        InstanceMethod<&RingWrap::Send>("send"),
        InstanceMethod<&RingWrap::CloseFd>("closeFd"),
        InstanceMethod<&RingWrap::Socket>("socket"),
        InstanceMethod<&RingWrap::CancelFd>("cancelFd"),
        InstanceMethod<&RingWrap::Submit>("submit"),
        InstanceMethod<&RingWrap::Close>("close"),
        InstanceAccessor<&RingWrap::Features>("features"),
        InstanceAccessor<&RingWrap::Stats>("stats"),
        InstanceAccessor<&RingWrap::Closed>("closed"),
        InstanceAccessor<&RingWrap::InFlight>("inFlight"),
    });
  }

  RingWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<RingWrap>(info) {
    Napi::Env env = info.Env();
    OptionsArg options(env, info[0]);
    unsigned entries = unsigned(options.Integer("entries", 1, kMaxRingEntries, 256));
    unsigned cq_entries = unsigned(options.Integer("cqEntries", 0, 2 * kMaxRingEntries, 0));
    bool sqpoll = options.Bool("sqpoll", false);
    if (cq_entries != 0 && cq_entries < entries)
      ThrowArgRange(env, "options.cqEntries", ">= options.entries (" + std::to_string(entries) + ")", std::to_string(cq_entries));
    core_ = new RingCore(env, entries, cq_entries, sqpoll);
    core_->SetOwner(this);
    flags_ = core_->setup_flags();
    sq_entries_ = core_->sq_entries();
    cq_entries_ = core_->cq_entries();
  }

  ~RingWrap() override {
    if (core_ != nullptr) core_->Orphan();
  }

  void Hold(bool strong) override {
    if (strong) Ref();
    else Unref();
  }
  void Detach() override {
    last_stats_ = core_->stats();
    core_ = nullptr;
  }

 private:
  RingCore* Open(const Napi::CallbackInfo& info) {
    if (core_ == nullptr || core_->closed()) throw RingClosedError(info.Env());
    return core_;
  }

  Napi::Value Nop(const Napi::CallbackInfo& info) {
    RingCore* core = Open(info);
    return Napi::Value(info.Env(), core->Enqueue(core->AcquireOp(OpKind::kNop, "nop", -1)));
  }

  // read(fd, view, position?) / write(fd, view, position?)
  Napi::Value OneBuffer(const Napi::CallbackInfo& info, OpKind kind, const char* syscall, bool is_read) {
    RingCore* core = Open(info);
    int fd = FdArg(info.Env(), info[0]);
    uint64_t position = uint64_t(PositionArg(info.Env(), info[2], "position", true));
    Op* op = core->AcquireOp(kind, syscall, fd);
    op->offset = position;
    return Build(core, op, [&] {
      op->bounce.clear();
      AddOneView(info.Env(), op, info[1], is_read);
    });
  }
  Napi::Value Read(const Napi::CallbackInfo& info) { return OneBuffer(info, OpKind::kRead, "read", true); }
  Napi::Value Write(const Napi::CallbackInfo& info) { return OneBuffer(info, OpKind::kWrite, "write", false); }

  Napi::Value Vectored(const Napi::CallbackInfo& info, OpKind kind, const char* syscall, bool is_read) {
    RingCore* core = Open(info);
    int fd = FdArg(info.Env(), info[0]);
    uint64_t position = uint64_t(PositionArg(info.Env(), info[2], "position", true));
    Op* op = core->AcquireOp(kind, syscall, fd);
    op->offset = position;
    return Build(core, op, [&] {
      op->bounce.clear();
      AddViewList(info.Env(), op, info[1], is_read);
    });
  }
  Napi::Value Readv(const Napi::CallbackInfo& info) { return Vectored(info, OpKind::kReadv, "readv", true); }
  Napi::Value Writev(const Napi::CallbackInfo& info) { return Vectored(info, OpKind::kWritev, "writev", false); }

  Napi::Value Fsync(const Napi::CallbackInfo& info) {
    RingCore* core = Open(info);
    int fd = FdArg(info.Env(), info[0]);
    bool datasync = OptionsArg(info.Env(), info[1]).Bool("datasync", false);
    Op* op = core->AcquireOp(OpKind::kFsync, datasync ? "fdatasync" : "fsync", fd);
    op->flags = datasync ? IORING_FSYNC_DATASYNC : 0;
    return Napi::Value(info.Env(), core->Enqueue(op));
  }

  // sendmsg(fd, buffers, { fds? }): one message, fds as SCM_RIGHTS.
  Napi::Value Sendmsg(const Napi::CallbackInfo& info) {
    RingCore* core = Open(info);
    Napi::Env env = info.Env();
    int fd = FdArg(info.Env(), info[0]);
    Op* op = core->AcquireOp(OpKind::kSendmsg, "sendmsg", fd);
    op->flags = MSG_NOSIGNAL;
    return Build(core, op, [&] {
      op->bounce.clear();
      AddViewList(env, op, info[1], false);
      memset(&op->msg, 0, sizeof(op->msg));
      op->msg.msg_iov = op->iov.data();
      op->msg.msg_iovlen = op->iov.size();
      op->control.clear();
      int fd_buf[kMaxFdsPerMessage];
      size_t nfds = 0;
      OptionsArg options(env, info[2]);
      napi_value fds = options.Get(core->KeyValue(RingCore::kFds));
      if (!Napi::Value(env, fds).IsUndefined())
        nfds = FdListArg(env, fds, "options.fds", kMaxFdsPerMessage, "SCM_MAX_FD", fd_buf);
      bool credentials = options.Bool(core->KeyValue(RingCore::kCredentials), "credentials", false);
      // SCM_RIGHTS (the fds) and SCM_CREDENTIALS (this process's pid/uid/gid), as the sync call.
      size_t space = (nfds == 0 ? 0 : CMSG_SPACE(nfds * sizeof(int))) +
                     (credentials ? CMSG_SPACE(sizeof(struct ucred)) : 0);
      if (space > 0) {
        op->control.assign(space, 0);
        op->msg.msg_control = op->control.data();
        op->msg.msg_controllen = op->control.size();
        struct cmsghdr* c = CMSG_FIRSTHDR(&op->msg);
        if (nfds > 0) {
          c->cmsg_level = SOL_SOCKET;
          c->cmsg_type = SCM_RIGHTS;
          c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
          memcpy(CMSG_DATA(c), fd_buf, nfds * sizeof(int));
          c = CMSG_NXTHDR(&op->msg, c);
        }
        if (credentials) {
          struct ucred cred = {getpid(), getuid(), getgid()};
          c->cmsg_level = SOL_SOCKET;
          c->cmsg_type = SCM_CREDENTIALS;
          c->cmsg_len = CMSG_LEN(sizeof(cred));
          memcpy(CMSG_DATA(c), &cred, sizeof(cred));
        }
      }
    });
  }

  // recvmsg(fd, buffers, { maxFds?, controlFds? }): MSG_CMSG_CLOEXEC. As the sync call: the
  // control space fits controlFds (default 253, SCM_MAX_FD) fds plus credentials; more fds than
  // maxFds, or MSG_CTRUNC, closes every received fd and sets fdsTruncated.
  Napi::Value Recvmsg(const Napi::CallbackInfo& info) {
    RingCore* core = Open(info);
    Napi::Env env = info.Env();
    int fd = FdArg(env, info[0]);
    OptionsArg options(env, info[2]);
    int max_fds = int(options.Integer(core->KeyValue(RingCore::kMaxFds), "maxFds", 0, kMaxFdsPerMessage, 0));
    int control_fds = int(options.Integer(core->KeyValue(RingCore::kControlFds), "controlFds", 0, kMaxFdsPerMessage,
                                          kMaxFdsPerMessage));
    Op* op = core->AcquireOp(OpKind::kRecvmsg, "recvmsg", fd);
    op->max_fds = max_fds;
    op->flags = MSG_CMSG_CLOEXEC;
    return Build(core, op, [&] {
      op->bounce.clear();
      AddViewList(env, op, info[1], true);
      memset(&op->msg, 0, sizeof(op->msg));
      memset(&op->addr, 0, sizeof(struct sockaddr_un));
      op->msg.msg_name = &op->addr;
      op->msg.msg_namelen = sizeof(struct sockaddr_un);
      op->msg.msg_iov = op->iov.data();
      op->msg.msg_iovlen = op->iov.size();
      op->control.assign((control_fds > 0 ? CMSG_SPACE(control_fds * sizeof(int)) : 0) + CMSG_SPACE(sizeof(struct ucred)), 0);
      op->msg.msg_control = op->control.data();
      op->msg.msg_controllen = op->control.size();
    });
  }

  // An op that takes nothing but its fd (accept, close).
  Napi::Value FdOnly(const Napi::CallbackInfo& info, OpKind kind, const char* syscall) {
    RingCore* core = Open(info);
    int fd = FdArg(info.Env(), info[0]);
    return Napi::Value(info.Env(), core->Enqueue(core->AcquireOp(kind, syscall, fd)));
  }
  Napi::Value Accept(const Napi::CallbackInfo& info) { return FdOnly(info, OpKind::kAccept, "accept"); }

  // connect(fd, address): a Unix socket path ('\0'-prefixed: abstract) or { host, port } (TCP).
  Napi::Value Connect(const Napi::CallbackInfo& info) {
    RingCore* core = Open(info);
    Napi::Env env = info.Env();
    int fd = FdArg(info.Env(), info[0]);
    Op* op = core->AcquireOp(OpKind::kConnect, "connect", fd);
    return Build(core, op, [&] {
      memset(&op->addr, 0, sizeof(op->addr));
      if (info[1].IsString()) {
        UnixAddress a = AddressArg(env, info[1], "connect");  // the sync connect's checks
        op->path = a.text;
        memcpy(&op->addr, &a.addr, sizeof(a.addr));
        op->addrlen = a.length;
      } else if (info[1].IsObject()) {
        OptionsArg a(env, info[1], "address");
        napi_value hv = a.Get("host");
        std::string host = Napi::Value(env, hv).IsUndefined() ? "127.0.0.1" : StringArg(env, hv, "address.host");
        int port = int(IntegerArg(env, a.Get("port"), "address.port", 0, 65535));
        if (host == "localhost") host = "127.0.0.1";
        op->path = host + ":" + std::to_string(int(port));
        auto* in4 = reinterpret_cast<struct sockaddr_in*>(&op->addr);
        auto* in6 = reinterpret_cast<struct sockaddr_in6*>(&op->addr);
        if (inet_pton(AF_INET, host.c_str(), &in4->sin_addr) == 1) {
          in4->sin_family = AF_INET;
          in4->sin_port = htons(uint16_t(port));
          op->addrlen = sizeof(*in4);
        } else if (inet_pton(AF_INET6, host.c_str(), &in6->sin6_addr) == 1) {
          in6->sin6_family = AF_INET6;
          in6->sin6_port = htons(uint16_t(port));
          op->addrlen = sizeof(*in6);
        } else {
          ThrowArgValue(env, "address.host", "must be a numeric IPv4/IPv6 address or localhost", hv);
        }
      } else {
        ThrowArgType(env, "address", "a socket path (string) or { host, port }", info[1]);
      }
    });
  }

  Napi::Value SendRecv(const Napi::CallbackInfo& info, OpKind kind, const char* syscall, bool is_read) {
    RingCore* core = Open(info);
    int fd = FdArg(info.Env(), info[0]);
    unsigned flags = info[2].IsUndefined() ? 0 : unsigned(IntegerArg(info.Env(), info[2], "flags", 0, INT32_MAX));
    Op* op = core->AcquireOp(kind, syscall, fd);
    op->flags = flags | (is_read ? 0 : MSG_NOSIGNAL);
    return Build(core, op, [&] {
      op->bounce.clear();
      AddOneView(info.Env(), op, info[1], is_read);
    });
  }
  Napi::Value Recv(const Napi::CallbackInfo& info) { return SendRecv(info, OpKind::kRecv, "recv", true); }
  Napi::Value Send(const Napi::CallbackInfo& info) { return SendRecv(info, OpKind::kSend, "send", false); }

  Napi::Value CloseFd(const Napi::CallbackInfo& info) { return FdOnly(info, OpKind::kClose, "close"); }

  // socket(family, type): 'inet' | 'inet6' | 'unix', 'stream' | 'dgram' | 'seqpacket'.
  Napi::Value Socket(const Napi::CallbackInfo& info) {
    RingCore* core = Open(info);
    Napi::Env env = info.Env();
    static const Choice families[] = {{"inet", AF_INET}, {"inet6", AF_INET6}, {"unix", AF_UNIX}, {nullptr, 0}};
    int domain = ChoiceArg(env, info[0], "family", families);
    int socktype = info[1].IsUndefined() ? SOCK_STREAM : ChoiceArg(env, info[1], "type", kSocketTypes);
    Op* op = core->AcquireOp(OpKind::kSocket, "socket", -1);
    op->offset = uint64_t(domain);
    op->flags = unsigned(socktype);
    return Napi::Value(env, core->Enqueue(op));
  }

  // cancelFd(fd): cancels every op waiting on fd (they reject with ECANCELED); resolves with
  // how many were cancelled.
  Napi::Value CancelFd(const Napi::CallbackInfo& info) {
    RingCore* core = Open(info);
    int fd = FdArg(info.Env(), info[0]);
    return Napi::Value(info.Env(), core->Enqueue(core->AcquireOp(OpKind::kCancelFd, "io_uring_cancel", fd)));
  }

  Napi::Value Submit(const Napi::CallbackInfo& info) {
    RingCore* core = Open(info);
    core->Flush();
    return info.Env().Undefined();
  }

  Napi::Value Close(const Napi::CallbackInfo& info) {
    if (core_ == nullptr) {
      auto deferred = Napi::Promise::Deferred::New(info.Env());
      deferred.Resolve(info.Env().Undefined());
      return deferred.Promise();
    }
    return Napi::Value(info.Env(), core_->Close());
  }

  Napi::Value Features(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Napi::Object out = Napi::Object::New(env);
    unsigned f = flags_;
    out.Set("deferTaskrun", Napi::Boolean::New(env, (f & IORING_SETUP_DEFER_TASKRUN) != 0));
    out.Set("singleIssuer", Napi::Boolean::New(env, (f & IORING_SETUP_SINGLE_ISSUER) != 0));
    out.Set("coopTaskrun", Napi::Boolean::New(env, (f & IORING_SETUP_COOP_TASKRUN) != 0));
    out.Set("taskrunFlag", Napi::Boolean::New(env, (f & IORING_SETUP_TASKRUN_FLAG) != 0));
    out.Set("submitAll", Napi::Boolean::New(env, (f & IORING_SETUP_SUBMIT_ALL) != 0));
    out.Set("sqpoll", Napi::Boolean::New(env, (f & IORING_SETUP_SQPOLL) != 0));
    out.Set("sqEntries", Napi::Number::New(env, sq_entries_));
    out.Set("cqEntries", Napi::Number::New(env, cq_entries_));
    return out;
  }

  Napi::Value Stats(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (core_ != nullptr) last_stats_ = core_->stats();
    Napi::Object out = Napi::Object::New(env);
    out.Set("submitCalls", last_stats_.submit_calls);
    out.Set("sqesSubmitted", last_stats_.sqes_submitted);
    out.Set("cqesReaped", last_stats_.cqes_reaped);
    out.Set("overflowQueued", last_stats_.overflow_queued);
    out.Set("cqOverflows", last_stats_.cq_overflows);
    return out;
  }

  Napi::Value Closed(const Napi::CallbackInfo& info) {
    return Napi::Boolean::New(info.Env(), core_ == nullptr || core_->closed());
  }

  Napi::Value InFlight(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), core_ != nullptr ? double(core_->in_flight()) : 0);
  }

  // Fills the op (may throw: then the op goes back to the pool) and queues it.
  template <typename Fill>
  Napi::Value Build(RingCore* core, Op* op, Fill fill) {
    try {
      fill();
    } catch (...) {
      for (napi_ref ref : op->targets) {
        napi_delete_reference(core_env(), ref);
        LiveDec(Live::kHeldBuffers);
      }
      op->targets.clear();
      op->lengths.clear();
      op->iov.clear();
      op->path.clear();
      delete op;
      throw;
    }
    return Napi::Value(core_env(), core->Enqueue(op));
  }
  napi_env core_env() { return Env(); }

  RingCore* core_ = nullptr;
  unsigned flags_ = 0, sq_entries_ = 0, cq_entries_ = 0;
  RingStats last_stats_;
};

static void Init(Napi::Env env, Napi::Object exports) {
  exports.Set("Ring", RingWrap::Define(env));
  exports.Set("ringSetClosedErrorClass", Napi::Function::New(env, [](const Napi::CallbackInfo& info) {
    if (!info[0].IsFunction()) ThrowArgType(info.Env(), "ctor", "a class", info[0]);
    SetRingClosedErrorClass(info.Env(), info[0].As<Napi::Function>());
  }));
}

IOLAB_FEATURE(ring, Init);

}  // namespace iolab
