// A batch of Ring ops queued by one call (sendmsgBatch, recvmsgBatch, closeFds, readvBatch) that
// settle together: one Promise for the lot, which resolves with every op's value in order, or
// rejects with the first error. Each op's record is kept until the last one is done, so the
// values are made at once and, when the batch rejects, what the others received is closed, not
// leaked. Two op kinds: a member, and readvBatch's direct read (into the caller's views,
// submitted and completed inside the call), which becomes a member over bounce memory when it
// must run again or the kernel did not take it.
#pragma once
#include <napi.h>

#include <vector>

#include "io_op.h"

namespace iolab {

class RingCore;

struct OpGroup {
  napi_deferred deferred = nullptr;
  std::vector<Op*> ops;          // its MemberOps, in the order of the call
  size_t pending = 0;            // ops whose CQE has not come
  bool resolve_undefined = false;  // closeFds: nothing to report per op
  // readvBatch: every read that succeeded is copied into its views, also when another failed;
  // resolves with an Int32Array of each op's bytes, or rejects with the first error, which
  // carries `index` (that op's place) and `results` (each op's bytes or Error).
  bool reads = false;
  // The packed form (src/ring/ring.ts unpacks it): [Float64Array, extras] with `stride` doubles
  // per op: a sendmsg's bytes, or a recvmsg's bytes, flags, fd count and fds (stride 3 + maxFds);
  // extras: undefined, or an array with { credentials?, from? } at the ops that had them.
  bool packed = false;
  size_t stride = 1;
  std::vector<int> owned_fds;    // fd copies the batch's messages share (closed with the group)
  int eof_fd = -1;               // recvmsgBatch on a seqpacket socket: one dup for the eof rule
  int socket_type = -1;          // recvmsgBatch: SO_TYPE, read once when queued
  // The flat forms' Array of views, held once for the whole batch; each op copies into its
  // range of it (IoOp::view_first) instead of holding a reference per view.
  napi_ref views = nullptr;
};

struct MemberOp : IoOp {
  OpGroup* group = nullptr;
  int res = 0;  // its CQE result, kept until the batch settles
};

// A new member of `group` (direct: a read into the views, OpSetDirect), in the call's order.
MemberOp* AddMember(RingCore* core, OpGroup* group, OpCode code, int fd, bool direct = false);
// Queues the batch (the caller has called core->Admit()) and returns its Promise; the batch is
// the Ring's from here.
napi_value QueueGroup(RingCore* core, OpGroup* group);
// The same, then submitted inside the call when its direct reads can be (RingCore::
// CanSubmitNow); otherwise they become members over bounce memory first.
napi_value QueueGroupNow(RingCore* core, OpGroup* group);
// A batch that was never queued (filling it threw, or err != 0: a rejected Promise instead).
void DropGroup(RingCore* core, OpGroup* group);
napi_value RefuseGroup(RingCore* core, OpGroup* group, int err, const char* syscall);

}  // namespace iolab
