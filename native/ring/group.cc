// A batch's ops settled together (group.h): the member and direct-read kinds' tables, queueing
// the batch, and its one Promise's value or error.
#include "group.h"

#include <errno.h>
#include <unistd.h>

#include "core.h"
#include "errors.h"
#include "live_objects.h"

namespace iolab {

// ---- the value or error ----

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
    MemberOp* op = static_cast<MemberOp*>(group->ops[i]);
    if (op->code != OpCode::kRecvmsg) {
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

// readvBatch's settle (OpGroup::reads), its reads copied out (a direct one, kReadvDirect, was
// in its views already).
static void SettleReads(napi_env env, OpGroup* group, bool closing) {
  size_t n = group->ops.size();
  MemberOp* failed = nullptr;
  size_t failed_at = 0;
  for (size_t i = 0; i < n; i++) {
    MemberOp* op = static_cast<MemberOp*>(group->ops[i]);
    if (op->res < 0 && failed == nullptr) {
      failed = op;
      failed_at = i;
    }
  }
  if (failed != nullptr) {
    napi_value error = OpError(env, failed, failed->res, closing), index, results;
    NAPI_THROW_IF_FAILED_VOID(env, napi_create_uint32(env, uint32_t(failed_at), &index));
    NAPI_THROW_IF_FAILED_VOID(env, napi_create_array_with_length(env, n, &results));
    for (size_t i = 0; i < n; i++) {
      MemberOp* op = static_cast<MemberOp*>(group->ops[i]);
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
  for (size_t i = 0; i < n; i++) out[i] = static_cast<MemberOp*>(group->ops[i])->res;
  napi_resolve_deferred(env, group->deferred, bytes);
}

// Env teardown, or a batch that rejects: nobody takes the values; close what would have been
// handed over.
static void GroupDiscard(OpGroup* group) {
  for (Op* op : group->ops) OpDiscard(static_cast<MemberOp*>(op), static_cast<MemberOp*>(op)->res);
}

// Every op done (each one's CQE result in its res). JS runs here: resolving with an object looks
// up its `then`, filling a result array runs Array.prototype's setters, copying into a batch's
// views runs their getters.
static void GroupSettle(napi_env env, OpGroup* group, bool closing) {
  for (Op* op : group->ops) {  // each read's bytes into its views (a view that faults: EFAULT)
    MemberOp* member = static_cast<MemberOp*>(op);
    member->res = OpCopyResult(env, member, member->res);
  }
  if (group->reads) {
    SettleReads(env, group, closing);
    return;
  }
  MemberOp* failed = nullptr;
  for (Op* op : group->ops) {
    if (static_cast<MemberOp*>(op)->res < 0) {
      failed = static_cast<MemberOp*>(op);
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
      MemberOp* op = static_cast<MemberOp*>(group->ops[i]);
      napi_set_element(env, value, uint32_t(i), OpResult(env, op, op->res));
    }
  }
  napi_resolve_deferred(env, group->deferred, value);
}

// What the batch holds is let go now (its members' records, fd copies, views); the group itself
// is freed per the re-entrancy rule.
static void FreeGroup(RingCore* core, OpGroup* group) {
  for (Op* op : group->ops) core->ReleaseOp(op);
  if (group->views != nullptr) {
    napi_delete_reference(core->env(), group->views);
    group->views = nullptr;
    LiveDec(Live::kHeldBuffers);
  }
  for (int fd : group->owned_fds) {
    close(fd);
    LiveDec(Live::kOwnedFds);
  }
  group->owned_fds.clear();
  if (group->eof_fd >= 0) {
    close(group->eof_fd);
    group->eof_fd = -1;
    LiveDec(Live::kOwnedFds);
  }
  core->Defer([](RingCore*, void* g, intptr_t) { delete static_cast<OpGroup*>(g); }, group);
}

// ---- the kinds ----

static Op* MakeMember() { return new MemberOp; }

static bool ClearMember(napi_env env, Op* op) {
  MemberOp* member = static_cast<MemberOp*>(op);
  member->group = nullptr;
  member->res = 0;
  return IoClear(env, member);
}

static Next CompleteMember(RingCore*, Op* op, int& res, unsigned) {
  static_cast<MemberOp*>(op)->res = res;
  return Next::kDone;
}

// The batch settles with its last member.
static void SettleMember(RingCore* core, Op* op, int) {
  OpGroup* group = static_cast<MemberOp*>(op)->group;
  if (--group->pending > 0) return;
  try {
    GroupSettle(core->env(), group, core->closing());
  } catch (const Napi::Error&) {
    // Building the values failed (out of memory in V8): nothing sensible left to do.
  }
  FreeGroup(core, group);
}

static void AbandonMember(RingCore* core, Op* op, int) {
  OpGroup* group = static_cast<MemberOp*>(op)->group;
  if (--group->pending > 0) return;
  GroupDiscard(group);
  FreeGroup(core, group);
}

static const OpClass kMember = {kMemberPool, MakeMember, ClearMember, IoPrepare, IoBytes, CompleteMember, SettleMember, AbandonMember};

// A direct read turned into a member over bounce memory.
static void ToBounce(Op* op) {
  OpToBounce(static_cast<MemberOp*>(op));
  op->cls = &kMember;
}

// An EAGAIN or short direct read runs again, through bounce memory, waiting if it must; not
// while the Ring closes.
static Next CompleteDirect(RingCore* core, Op* op, int& res, unsigned flags) {
  MemberOp* member = static_cast<MemberOp*>(op);
  if (OpDirectWantsRetry(member, res)) {
    if (!core->closing() && !core->in_cleanup()) {
      ToBounce(op);
      return Next::kAgain;
    }
    if (res == -EAGAIN) res = -ECANCELED;  // it would have run again, but the Ring closes
  }
  return CompleteMember(core, op, res, flags);
}

static const OpClass kDirect = {kMemberPool, MakeMember, ClearMember, IoPrepare, IoBytes, CompleteDirect, SettleMember, AbandonMember};

// ---- queueing ----

MemberOp* AddMember(RingCore* core, OpGroup* group, OpCode code, int fd, bool direct) {
  MemberOp* op = static_cast<MemberOp*>(core->AcquireOp(direct ? &kDirect : &kMember));
  IoInit(op, code, fd);
  op->group = group;
  group->ops.push_back(op);
  return op;
}

napi_value QueueGroup(RingCore* core, OpGroup* group) {
  napi_env env = core->env();
  napi_value promise;
  napi_status status = napi_create_promise(env, &group->deferred, &promise);
  if (status != napi_ok) {
    DropGroup(core, group);
    NAPI_THROW_IF_FAILED(env, status, nullptr);
  }
  group->pending = group->ops.size();
  if (group->pending == 0) {  // an empty batch: settled at once
    GroupSettle(env, group, false);
    FreeGroup(core, group);
    return promise;
  }
  for (Op* op : group->ops) core->Queue(op);
  return promise;
}

napi_value QueueGroupNow(RingCore* core, OpGroup* group) {
  if (!core->CanSubmitNow(group->ops.size())) {
    for (Op* op : group->ops)
      if (op->cls == &kDirect) ToBounce(op);
    return QueueGroup(core, group);
  }
  napi_value promise = QueueGroup(core, group);  // every op has its SQE: the SQ had room
  core->SubmitInCall(group->ops.data(), group->ops.size(), &kDirect, ToBounce);
  return promise;
}

void DropGroup(RingCore* core, OpGroup* group) { FreeGroup(core, group); }

napi_value RefuseGroup(RingCore* core, OpGroup* group, int err, const char* syscall) {
  napi_env env = core->env();
  napi_deferred deferred;
  napi_value promise;
  napi_status status = napi_create_promise(env, &deferred, &promise);
  if (status == napi_ok) napi_reject_deferred(env, deferred, ErrnoError(env, err, syscall).Value());
  DropGroup(core, group);
  NAPI_THROW_IF_FAILED(env, status, nullptr);
  return promise;
}

}  // namespace iolab
