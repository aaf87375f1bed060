#include "group.h"

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

// readvBatch's settle (OpGroup::reads). A direct read (kReadvDirect) is in its views already;
// one through bounce memory is copied out now.
static void SettleReads(napi_env env, OpGroup* group, bool closing) {
  size_t n = group->ops.size();
  Op* failed = nullptr;
  size_t failed_at = 0;
  for (size_t i = 0; i < n; i++) {
    Op* op = group->ops[i];
    if (op->res >= 0) {
      if (op->kind == OpKind::kReadv) OpCopyOut(env, op, size_t(op->res));
    } else if (failed == nullptr) {
      failed = op;
      failed_at = i;
    }
  }
  if (failed != nullptr) {
    napi_value error = OpError(env, failed, failed->res, closing), index, results;
    NAPI_THROW_IF_FAILED_VOID(env, napi_create_uint32(env, uint32_t(failed_at), &index));
    NAPI_THROW_IF_FAILED_VOID(env, napi_create_array_with_length(env, n, &results));
    for (size_t i = 0; i < n; i++) {
      Op* op = group->ops[i];
      napi_value value;
      if (op->res >= 0) napi_create_int32(env, op->res, &value);
      else value = OpError(env, op, op->res, closing);
      napi_set_element(env, results, uint32_t(i), value);
    }
    napi_set_named_property(env, error, "index", index);
    napi_set_named_property(env, error, "results", results);
    napi_reject_deferred(env, group->deferred, error);
    return;
  }
  void* data = nullptr;
  napi_value buffer, bytes;  // src/ring/ring.ts makes the numbers (an element set from here costs more)
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_arraybuffer(env, n * sizeof(int32_t), &data, &buffer));
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_typedarray(env, napi_int32_array, n, buffer, 0, &bytes));
  int32_t* out = static_cast<int32_t*>(data);
  for (size_t i = 0; i < n; i++) out[i] = group->ops[i]->res;
  napi_resolve_deferred(env, group->deferred, bytes);
}

void GroupSettle(napi_env env, OpGroup* group, bool closing) {
  if (group->reads) {
    SettleReads(env, group, closing);
    return;
  }
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
