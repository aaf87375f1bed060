// Op records: filling them from JS values, the per-opcode table (prep, result, discard), and
// settling their Promises.
#include "op.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include "addon.h"
#include "errors.h"
#include "live_objects.h"
#include "bufring.h"
#include "sys/unix_msg.h"

namespace iolab {

// ---- filling ----

static void AddBytes(napi_env env, Op* op, napi_value view, View bytes, bool is_read, bool hold = true) {
  size_t at = op->bounce.size();
  op->bounce.resize(at + bytes.length);
  if (!is_read && bytes.length > 0) memcpy(op->bounce.data() + at, bytes.data, bytes.length);
  op->lengths.push_back(bytes.length);
  if (is_read && hold) {
    napi_ref ref;
    NAPI_THROW_IF_FAILED_VOID(env, napi_create_reference(env, view, 1, &ref));
    op->targets.push_back(ref);
    LiveInc(Live::kHeldBuffers);
  }
}

void OpAddView(napi_env env, Op* op, napi_value view, bool is_read, const char* name) {
  AddBytes(env, op, view, ViewArg(env, view, name), is_read);
}

// iovecs over the bounce memory, one per view (zero-length views keep their place); built
// last, once the bounce memory no longer moves.
static void BuildIovecs(Op* op) {
  op->iov.resize(op->lengths.size());
  size_t at = 0;
  for (size_t i = 0; i < op->lengths.size(); i++) {
    op->iov[i].iov_base = op->bounce.data() + at;
    op->iov[i].iov_len = op->lengths[i];
    at += op->lengths[i];
  }
}

void OpAddViewList(napi_env env, Op* op, napi_value value, bool is_read) {
  ListArg list(env, value, "buffers");
  for (uint32_t i = 0; i < list.size(); i++) AddBytes(env, op, list[i], list.ViewAt(i), is_read);
  BuildIovecs(op);
}

void OpAddViewRange(napi_env env, Op* op, napi_value views, uint32_t first, uint32_t count, bool is_read,
                    const ArgPath& name, napi_ref shared) {
  op->shared_views = shared;
  op->view_first = first;
  if (count > kMaxBuffers)
    ThrowArgRange(env, name.str() + ".length", "<= " + std::to_string(kMaxBuffers) + " (IOV_MAX)", std::to_string(count));
  for (uint32_t k = 0; k < count; k++) {
    napi_value element;
    NAPI_THROW_IF_FAILED_VOID(env, napi_get_element(env, views, first + k, &element));
    View bytes;
    if (!ViewOf(env, element, &bytes))
      ThrowArgType(env, name.str() + "[" + std::to_string(k) + "]", "an ArrayBufferView (Buffer, TypedArray or DataView)", element);
    AddBytes(env, op, element, bytes, is_read, shared == nullptr);
  }
  BuildIovecs(op);
}

void OpSetDirect(napi_env env, Op* op, const napi_value* elements, uint32_t first, uint32_t count,
                 const ArgPath& name, napi_ref shared) {
  op->shared_views = shared;
  op->view_first = first;
  if (count > kMaxBuffers)
    ThrowArgRange(env, name.str() + ".length", "<= " + std::to_string(kMaxBuffers) + " (IOV_MAX)", std::to_string(count));
  op->iov.resize(count);
  for (uint32_t k = 0; k < count; k++) {
    View bytes;
    if (!ViewOf(env, elements[first + k], &bytes))
      ThrowArgType(env, name.str() + "[" + std::to_string(k) + "]", "an ArrayBufferView (Buffer, TypedArray or DataView)", elements[first + k]);
    op->lengths.push_back(bytes.length);
    op->iov[k].iov_base = bytes.length > 0 ? bytes.data : nullptr;
    op->iov[k].iov_len = bytes.length;
  }
}

void OpToBounce(Op* op) {
  size_t total = 0;
  for (size_t n : op->lengths) total += n;
  op->kind = OpKind::kReadv;
  op->bounce.resize(total);
  BuildIovecs(op);
}

bool OpDirectWantsRetry(const Op* op, int res) {
  if (res == -EAGAIN) return true;
  if (res <= 0) return false;
  size_t total = 0;
  for (size_t n : op->lengths) total += n;
  return size_t(res) < total;
}

int OpSetSendControl(Op* op, const int* fds, size_t nfds, bool credentials) {
  for (size_t i = 0; i < nfds; i++) {
    int copy = fcntl(fds[i], F_DUPFD_CLOEXEC, 0);
    if (copy < 0) return errno;  // the copies made so far are closed with the record
    op->owned_fds.push_back(copy);
    LiveInc(Live::kOwnedFds);
  }
  OpBuildSendControl(op, op->owned_fds.data(), nfds, credentials);
  return 0;
}

void OpBuildSendControl(Op* op, const int* copies, size_t nfds, bool credentials) {
  memset(&op->msg, 0, sizeof(op->msg));
  op->msg.msg_iov = op->iov.data();
  op->msg.msg_iovlen = op->iov.size();
  op->control.resize(SendControlSpace(nfds, credentials));
  BuildSendControl(&op->msg, op->control.data(), copies, nfds, credentials);
}

void OpSetRecvControl(Op* op, int control_fds) {
  memset(&op->msg, 0, sizeof(op->msg));
  memset(&op->addr, 0, sizeof(struct sockaddr_un));
  op->msg.msg_name = &op->addr;
  op->msg.msg_namelen = sizeof(struct sockaddr_un);
  op->msg.msg_iov = op->iov.data();
  op->msg.msg_iovlen = op->iov.size();
  op->control.assign(RecvControlSpace(control_fds), 0);
  op->msg.msg_control = op->control.data();
  op->msg.msg_controllen = op->control.size();
}

void OpReadSocketType(Op* op) {
  // -1 when fd is no socket: the kernel's recvmsg then says so.
  op->socket_type = SocketTypeOf(op->fd);
  if (op->socket_type == SOCK_SEQPACKET) {
    op->eof_fd = fcntl(op->fd, F_DUPFD_CLOEXEC, 0);
    if (op->eof_fd >= 0) LiveInc(Live::kOwnedFds);
  }
  op->eof_poll_fd = op->eof_fd;
}

static void CloseOwned(int fd) {
  close(fd);
  LiveDec(Live::kOwnedFds);
}

void OpClear(napi_env env, Op* op) {
  for (napi_ref ref : op->targets) {
    napi_delete_reference(env, ref);
    LiveDec(Live::kHeldBuffers);
  }
  op->targets.clear();
  op->shared_views = nullptr;
  op->view_first = 0;
  op->lengths.clear();
  op->iov.clear();
  op->bounce.clear();
  op->path.clear();
  for (int fd : op->owned_fds) CloseOwned(fd);
  op->owned_fds.clear();
  if (op->eof_fd >= 0) CloseOwned(op->eof_fd);
  op->eof_fd = -1;
  op->eof_poll_fd = -1;
  op->socket_type = -1;
  op->deferred = nullptr;
  op->group = nullptr;
  op->res = 0;
  op->stream = nullptr;
  op->buf_id = -1;
  op->sent = op->length = 0;
}

// ---- the pool ----

OpPool::~OpPool() {
  while (free_ != nullptr) {
    Op* next = free_->next;
    delete free_;
    free_ = next;
  }
}

Op* OpPool::Acquire(OpKind kind, int fd) {
  Op* op = free_;
  if (op != nullptr) {
    free_ = op->next;
    count_--;
  } else {
    op = new Op;
  }
  op->kind = kind;
  op->syscall = TypeOf(kind).syscall;
  op->fd = fd;
  op->offset = 0;
  op->flags = 0;
  op->max_fds = 0;
  op->deferred = nullptr;
  op->next = nullptr;
  return op;
}

void OpPool::Release(napi_env env, Op* op, bool keep) {
  OpClear(env, op);
  if (!keep || count_ >= 256 || op->bounce.capacity() > (1u << 20)) {
    delete op;
    return;
  }
  op->next = free_;
  free_ = op;
  count_++;
}

// ---- results ----

// The i-th view a read copies into: held by the op, or an element of the Array its batch holds.
static bool TargetOf(napi_env env, Op* op, napi_value group_views, size_t i, napi_value* view) {
  if (group_views != nullptr) {
    if (napi_get_element(env, group_views, uint32_t(op->view_first + i), view) == napi_ok) return true;
    // A getter on that element threw: it is no view now, and gets nothing. Its exception must
    // not stay pending, or every napi call after it fails and the batch never settles.
    napi_value thrown;
    napi_get_and_clear_last_exception(env, &thrown);
    return false;
  }
  return napi_get_reference_value(env, op->targets[i], view) == napi_ok && *view != nullptr;
}

// Copies `bytes` of bounce memory into the views, as they are now: a view detached or shrunk
// in flight (or no longer a view, in a batch's Array) gets what still fits, nothing more.
void OpCopyOut(napi_env env, Op* op, size_t bytes) {
  napi_value group_views = nullptr;
  if (op->shared_views != nullptr &&
      (napi_get_reference_value(env, op->shared_views, &group_views) != napi_ok || group_views == nullptr))
    return;
  size_t at = 0;
  for (size_t i = 0; i < op->lengths.size() && at < bytes; i++) {
    size_t n = std::min(op->lengths[i], bytes - at);
    napi_value view;
    View now;
    if (n > 0 && TargetOf(env, op, group_views, i, &view) && ViewOf(env, view, &now) && now.data != nullptr)
      memcpy(now.data, op->bounce.data() + at, std::min(n, now.length));
    at += op->lengths[i];
  }
}

static napi_value Undefined(napi_env env, Op*, int) {
  napi_value v;
  napi_get_undefined(env, &v);
  return v;
}

static napi_value Count(napi_env env, Op*, int res) {
  napi_value v;
  napi_create_int32(env, res, &v);
  return v;
}

static napi_value BytesRead(napi_env env, Op* op, int res) {
  OpCopyOut(env, op, size_t(res));
  return Count(env, op, res);
}

static napi_value Message(napi_env env, Op* op, int res) {
  OpCopyOut(env, op, size_t(res));
  Received received(&op->msg, size_t(res), op->max_fds);
  if (received.maybe_eof()) received.ApplyEof(op->socket_type, op->eof_poll_fd);
  return received.ToValue(env);
}

napi_value OpMessagePacked(napi_env env, Op* op, int res, double* out) {
  OpCopyOut(env, op, size_t(res));
  Received received(&op->msg, size_t(res), op->max_fds);
  if (received.maybe_eof()) received.ApplyEof(op->socket_type, op->eof_poll_fd);
  return received.ToScratch(env, out);
}

// ---- discard (env teardown) ----

static void KeepNothing(Op*, int) {}
static void CloseNewFd(Op*, int res) {
  if (res >= 0) close(res);
}
static void CloseReceived(Op* op, int res) {
  if (res >= 0) {
    Received received(&op->msg, size_t(res), 0);  // closes every fd that came
  }
}

// ---- prep ----

static void PrepNop(io_uring_sqe* sqe, Op*) { io_uring_prep_nop(sqe); }
static void PrepRead(io_uring_sqe* sqe, Op* op) {
  io_uring_prep_read(sqe, op->fd, op->bounce.data(), unsigned(op->bounce.size()), op->offset);
}
static void PrepWrite(io_uring_sqe* sqe, Op* op) {
  io_uring_prep_write(sqe, op->fd, op->bounce.data(), unsigned(op->bounce.size()), op->offset);
}
// One buffer: READ/WRITE (the kernel skips importing an iovec), as the sync readv/writev make
// the plain call for one buffer.
static void PrepReadv(io_uring_sqe* sqe, Op* op) {
  if (op->lengths.size() == 1) io_uring_prep_read(sqe, op->fd, op->bounce.data(), unsigned(op->bounce.size()), op->offset);
  else io_uring_prep_readv(sqe, op->fd, op->iov.data(), unsigned(op->iov.size()), op->offset);
}
static void PrepWritev(io_uring_sqe* sqe, Op* op) {
  if (op->lengths.size() == 1) io_uring_prep_write(sqe, op->fd, op->bounce.data(), unsigned(op->bounce.size()), op->offset);
  else io_uring_prep_writev(sqe, op->fd, op->iov.data(), unsigned(op->iov.size()), op->offset);
}
// Into the caller's memory, and never waiting: what is not in the page cache comes back EAGAIN
// (the read is then retried through bounce memory), so the kernel is done with that memory
// when the submit returns.
#ifndef RWF_NOWAIT
#define RWF_NOWAIT 0x00000008  // linux/fs.h
#endif
static void PrepReadvDirect(io_uring_sqe* sqe, Op* op) {
  if (op->iov.size() == 1) io_uring_prep_read(sqe, op->fd, op->iov[0].iov_base, unsigned(op->iov[0].iov_len), op->offset);
  else io_uring_prep_readv(sqe, op->fd, op->iov.data(), unsigned(op->iov.size()), op->offset);
  sqe->rw_flags = RWF_NOWAIT;
}
static void PrepFsync(io_uring_sqe* sqe, Op* op) { io_uring_prep_fsync(sqe, op->fd, op->flags); }
static void PrepSendmsg(io_uring_sqe* sqe, Op* op) { io_uring_prep_sendmsg(sqe, op->fd, &op->msg, op->flags); }
static void PrepRecvmsg(io_uring_sqe* sqe, Op* op) { io_uring_prep_recvmsg(sqe, op->fd, &op->msg, op->flags); }
static void PrepAccept(io_uring_sqe* sqe, Op* op) { io_uring_prep_accept(sqe, op->fd, nullptr, nullptr, SOCK_CLOEXEC); }
static void PrepConnect(io_uring_sqe* sqe, Op* op) {
  io_uring_prep_connect(sqe, op->fd, reinterpret_cast<struct sockaddr*>(&op->addr), op->addrlen);
}
static void PrepRecv(io_uring_sqe* sqe, Op* op) {
  io_uring_prep_recv(sqe, op->fd, op->bounce.data(), op->bounce.size(), int(op->flags));
}
static void PrepSend(io_uring_sqe* sqe, Op* op) {
  io_uring_prep_send(sqe, op->fd, op->bounce.data(), op->bounce.size(), int(op->flags));
}
static void PrepClose(io_uring_sqe* sqe, Op* op) { io_uring_prep_close(sqe, op->fd); }
// offset holds the address family, flags the socket type.
static void PrepSocket(io_uring_sqe* sqe, Op* op) {
  io_uring_prep_socket(sqe, int(op->offset), int(op->flags) | SOCK_CLOEXEC, 0, 0);
}
static void PrepCancelFd(io_uring_sqe* sqe, Op* op) { io_uring_prep_cancel_fd(sqe, op->fd, IORING_ASYNC_CANCEL_ALL); }

// One row per OpKind, in its order: what a new op of that kind does, from SQE to JS value.
static const OpType kTypes[] = {
    {"nop", PrepNop, Undefined, KeepNothing},
    {"read", PrepRead, BytesRead, KeepNothing},
    {"write", PrepWrite, Count, KeepNothing},
    {"readv", PrepReadv, BytesRead, KeepNothing},
    {"writev", PrepWritev, Count, KeepNothing},
    {"fsync", PrepFsync, Undefined, KeepNothing},
    {"sendmsg", PrepSendmsg, Count, KeepNothing},
    {"recvmsg", PrepRecvmsg, Message, CloseReceived},
    {"accept", PrepAccept, Count, CloseNewFd},
    {"connect", PrepConnect, Undefined, KeepNothing},
    {"recv", PrepRecv, BytesRead, KeepNothing},
    {"send", PrepSend, Count, KeepNothing},
    {"close", PrepClose, Undefined, KeepNothing},
    {"socket", PrepSocket, Count, CloseNewFd},
    {"io_uring_cancel", PrepCancelFd, Count, KeepNothing},  // how many ops were cancelled
    {"readv", PrepReadvDirect, Count, KeepNothing},          // the bytes are in the views already
    {"recv", PrepRecvMultishot, Count, KeepNothing},  // stream ops: no Promise (bufring.cc)
    {"send", PrepStreamSend, Count, KeepNothing},
};
static_assert(sizeof(kTypes) / sizeof(kTypes[0]) == size_t(OpKind::kCount), "one row per OpKind");

const OpType& TypeOf(OpKind kind) { return kTypes[size_t(kind)]; }

// ---- settling ----

napi_value OpError(napi_env env, Op* op, int res, bool closing) {
  if (closing && (res == -ECANCELED || res == -EINTR)) return RingClosedError(env).Value();
  return ErrnoError(env, -res, op->syscall, op->path.empty() ? nullptr : op->path.c_str()).Value();
}

void OpSettle(napi_env env, Op* op, int res, bool closing) {
  if (op->kind == OpKind::kCancelFd && res == -ENOENT) res = 0;  // nothing was waiting on fd
  if (res < 0) {
    napi_reject_deferred(env, op->deferred, OpError(env, op, res, closing));
    return;
  }
  napi_resolve_deferred(env, op->deferred, TypeOf(op->kind).result(env, op, res));
}

void OpRejectClosed(napi_env env, Op* op) { napi_reject_deferred(env, op->deferred, RingClosedError(env).Value()); }

// ---- RingClosedError ----

Napi::Error RingClosedError(napi_env env) {
  const char* message = "the Ring is closed";
  napi_ref ref = AddonOf(env).ring_closed_error;
  if (ref != nullptr) {
    napi_value ctor, arg, instance;
    if (napi_get_reference_value(env, ref, &ctor) == napi_ok && ctor != nullptr &&
        napi_create_string_utf8(env, message, NAPI_AUTO_LENGTH, &arg) == napi_ok &&
        napi_new_instance(env, ctor, 1, &arg, &instance) == napi_ok)
      return Napi::Error(env, instance);
  }
  Napi::Error error = Napi::Error::New(env, message);
  error.Value().Set("code", "ERR_RING_CLOSED");
  error.Value().Set("name", "RingClosedError");
  return error;
}

void SetRingClosedErrorClass(napi_env env, napi_value ctor) {
  Addon& addon = AddonOf(env);
  napi_ref ref;
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_reference(env, ctor, 1, &ref));
  if (addon.ring_closed_error != nullptr) napi_delete_reference(env, addon.ring_closed_error);
  addon.ring_closed_error = ref;
}

}  // namespace iolab
