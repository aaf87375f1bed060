// Records of ops with a Promise or in a batch (io_op.h): filling them from JS values, emptying
// them for reuse, and copying what a read received into the caller's views.
#include "io_op.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include "copy.h"
#include "live_objects.h"
#include "sys/unix_msg.h"

namespace iolab {

// ---- filling ----

static void AddBytes(napi_env env, IoOp* op, napi_value view, View bytes, bool is_read, bool hold = true) {
  size_t at = op->bounce.size();
  op->bounce.resize(at + bytes.length);
  if (!is_read && CopyFromView(op->bounce.data() + at, bytes.data, bytes.length) != 0) op->fault = EFAULT;
  if (is_read && !op->read_only_target) op->read_only_target = ReadOnlyView(bytes.data, bytes.length) != 0;
  op->lengths.push_back(bytes.length);
  if (is_read && hold) {
    napi_ref ref;
    NAPI_THROW_IF_FAILED_VOID(env, napi_create_reference(env, view, 1, &ref));
    op->targets.push_back(ref);
    LiveInc(Live::kHeldBuffers);
  }
}

void OpAddView(napi_env env, IoOp* op, napi_value view, bool is_read, const char* name) {
  AddBytes(env, op, view, ViewArg(env, view, name), is_read);
}

// iovecs over the bounce memory, one per view (zero-length views keep their place); built
// last, once the bounce memory no longer moves.
static void BuildIovecs(IoOp* op) {
  op->iov.resize(op->lengths.size());
  size_t at = 0;
  for (size_t i = 0; i < op->lengths.size(); i++) {
    op->iov[i].iov_base = op->bounce.data() + at;
    op->iov[i].iov_len = op->lengths[i];
    at += op->lengths[i];
  }
}

void OpAddViewList(napi_env env, IoOp* op, napi_value value, bool is_read) {
  ListArg list(env, value, "buffers");
  for (uint32_t i = 0; i < list.size(); i++) AddBytes(env, op, list[i], list.ViewAt(i), is_read);
  BuildIovecs(op);
}

void OpAddViewRange(napi_env env, IoOp* op, napi_value views, uint32_t first, uint32_t count, bool is_read,
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

void OpSetDirect(napi_env env, IoOp* op, const napi_value* elements, uint32_t first, uint32_t count,
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

void OpToBounce(IoOp* op) {
  size_t total = 0;
  for (size_t n : op->lengths) total += n;
  op->code = OpCode::kReadv;
  op->bounce.resize(total);
  BuildIovecs(op);
}

bool OpDirectWantsRetry(const IoOp* op, int res) {
  if (res == -EAGAIN || res == -EOPNOTSUPP) return true;
  if (res <= 0) return false;
  size_t total = 0;
  for (size_t n : op->lengths) total += n;
  return size_t(res) < total;
}

int OpSetSendControl(IoOp* op, const int* fds, size_t nfds, bool credentials) {
  for (size_t i = 0; i < nfds; i++) {
    int copy = fcntl(fds[i], F_DUPFD_CLOEXEC, 0);
    if (copy < 0) return errno;  // the copies made so far are closed with the record
    op->owned_fds.push_back(copy);
    LiveInc(Live::kOwnedFds);
  }
  OpBuildSendControl(op, op->owned_fds.data(), nfds, credentials);
  return 0;
}

void OpBuildSendControl(IoOp* op, const int* copies, size_t nfds, bool credentials) {
  memset(&op->msg, 0, sizeof(op->msg));
  op->msg.msg_iov = op->iov.data();
  op->msg.msg_iovlen = op->iov.size();
  op->control.resize(SendControlSpace(nfds, credentials));
  BuildSendControl(&op->msg, op->control.data(), copies, nfds, credentials);
}

void OpSetRecvControl(IoOp* op, int control_fds) {
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

void OpReadSocketType(IoOp* op) {
  // -1 when fd is no socket: the kernel's recvmsg then says so.
  op->socket_type = SocketTypeOf(op->fd);
  if (op->socket_type == SOCK_SEQPACKET) {
    op->eof_fd = fcntl(op->fd, F_DUPFD_CLOEXEC, 0);
    if (op->eof_fd >= 0) LiveInc(Live::kOwnedFds);
  }
  op->eof_poll_fd = op->eof_fd;
}

// ---- emptying ----

static void CloseOwned(int fd) {
  close(fd);
  LiveDec(Live::kOwnedFds);
}

bool IoClear(napi_env env, IoOp* op) {
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
  op->host.clear();
  op->port = -1;
  for (int fd : op->owned_fds) CloseOwned(fd);
  op->owned_fds.clear();
  if (op->eof_fd >= 0) CloseOwned(op->eof_fd);
  op->eof_fd = -1;
  op->eof_poll_fd = -1;
  op->socket_type = -1;
  op->fault = 0;
  op->read_only_target = false;
  return op->bounce.capacity() <= (1u << 20);
}

int OpReadOnlyRefusal(IoOp* op, bool pin) {
  if (!op->read_only_target) return 0;
  bool positioned_read = op->code == OpCode::kRead || op->code == OpCode::kReadv;
  if (!positioned_read) return EFAULT;
  if (int64_t(op->offset) >= 0) return 0;
  off_t at = pin ? lseek(op->fd, 0, SEEK_CUR) : -1;
  if (at < 0) return EFAULT;
  op->offset = uint64_t(at);
  return 0;
}

// ---- results ----

// The i-th view a read copies into: held by the op, or an element of the Array its batch holds.
static bool TargetOf(napi_env env, IoOp* op, napi_value group_views, size_t i, napi_value* view) {
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
// EFAULT when a view faults.
static int CopyOut(napi_env env, IoOp* op, size_t bytes) {
  napi_value group_views = nullptr;
  if (op->shared_views != nullptr &&
      (napi_get_reference_value(env, op->shared_views, &group_views) != napi_ok || group_views == nullptr))
    return 0;
  int err = 0;
  size_t at = 0;
  for (size_t i = 0; i < op->lengths.size() && at < bytes; i++) {
    size_t n = std::min(op->lengths[i], bytes - at);
    napi_value view;
    View now;
    if (n > 0 && TargetOf(env, op, group_views, i, &view) && ViewOf(env, view, &now) && now.data != nullptr &&
        CopyToView(now.data, op->bounce.data() + at, std::min(n, now.length)) != 0)
      err = EFAULT;
    at += op->lengths[i];
  }
  return err;
}

int OpCopyResult(napi_env env, IoOp* op, int res) {
  if (res < 0 || !OpCopiesOut(op)) return res;
  int err = CopyOut(env, op, size_t(res));
  if (err == 0) return res;
  OpDiscard(op, res);  // what came with it (recvmsg's fds) is nobody's
  return -err;
}

napi_value OpMessagePacked(napi_env env, IoOp* op, int res, double* out) {
  Received received(&op->msg, size_t(res), op->max_fds);
  if (received.maybe_eof()) received.ApplyEof(op->socket_type, op->eof_poll_fd);
  return received.ToScratch(env, out);
}

}  // namespace iolab
