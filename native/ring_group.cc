#include "ring_group.h"

#include <errno.h>
#include <unistd.h>

#include "live_objects.h"

namespace iolab {

static napi_value Packed(napi_env env, OpGroup* group) {
  size_t n = group->ops.size(), length = n * group->stride;
  void* data = nullptr;
  napi_value buffer, numbers, extras, pair;
  NAPI_THROW_IF_FAILED(env, napi_create_arraybuffer(env, length * sizeof(double), &data, &buffer), nullptr);
  NAPI_THROW_IF_FAILED(env, napi_create_typedarray(env, napi_float64_array, length, buffer, 0, &numbers), nullptr);
  double* out = static_cast<double*>(data);
  napi_get_undefined(env, &extras);
  bool have_extras = false;
  for (size_t i = 0; i < n; i++) {
    Op* op = group->ops[i];
    if (op->kind != OpKind::kRecvmsg) {
      out[i * group->stride] = op->res;
      continue;
    }
    napi_value extra = OpMessagePacked(env, op, op->res, out + i * group->stride);
    napi_valuetype type;
    napi_typeof(env, extra, &type);
    if (type == napi_undefined) continue;
    if (!have_extras) NAPI_THROW_IF_FAILED(env, napi_create_array_with_length(env, n, &extras), nullptr);
    have_extras = true;
    napi_set_element(env, extras, uint32_t(i), extra);
  }
  NAPI_THROW_IF_FAILED(env, napi_create_array_with_length(env, 2, &pair), nullptr);
  napi_set_element(env, pair, 0, numbers);
  napi_set_element(env, pair, 1, extras);
  return pair;
}

void GroupSettle(napi_env env, OpGroup* group, bool closing) {
  Op* failed = nullptr;
  for (Op* op : group->ops) {
    if (op->res < 0) {
      failed = op;
      break;
    }
  }
  if (failed != nullptr) {
    GroupDiscard(group);  // the others' fds (recvmsg) were never handed over: closed
    napi_reject_deferred(env, group->deferred, OpError(env, failed, failed->res, closing));
    return;
  }
  napi_value value;
  if (group->resolve_undefined) {
    napi_get_undefined(env, &value);
  } else if (group->packed) {
    value = Packed(env, group);
  } else {
    NAPI_THROW_IF_FAILED_VOID(env, napi_create_array_with_length(env, group->ops.size(), &value));
    for (size_t i = 0; i < group->ops.size(); i++) {
      Op* op = group->ops[i];
      napi_set_element(env, value, uint32_t(i), TypeOf(op->kind).result(env, op, op->res));
    }
  }
  napi_resolve_deferred(env, group->deferred, value);
}

void GroupDiscard(OpGroup* group) {
  for (Op* op : group->ops) OpDiscard(op, op->res);
}

void GroupFree(napi_env env, OpGroup* group) {
  if (group->views != nullptr) {
    napi_delete_reference(env, group->views);
    LiveDec(Live::kHeldBuffers);
  }
  for (int fd : group->owned_fds) {
    close(fd);
    LiveDec(Live::kOwnedFds);
  }
  if (group->eof_fd >= 0) {
    close(group->eof_fd);
    LiveDec(Live::kOwnedFds);
  }
  delete group;
}

}  // namespace iolab
