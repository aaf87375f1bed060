// A batch of Ring ops queued by one call (sendmsgBatch, recvmsgBatch, closeFds) that settle
// together: one Promise for the lot, which resolves with every op's value in order, or rejects
// with the first error. Each op's record is kept until the last one is done, so the values are
// made at once and, when the batch rejects, what the others received is closed, not leaked.
#pragma once
#include <napi.h>

#include <vector>

#include "op.h"

namespace iolab {

struct OpGroup {
  napi_deferred deferred = nullptr;
  std::vector<Op*> ops;          // in the order of the call
  size_t pending = 0;            // ops whose CQE has not come
  bool resolve_undefined = false;  // closeFds: nothing to report per op
  // readvBatch: every read that succeeded is copied into its views, also when another failed;
  // resolves with an Int32Array of each op's bytes, or rejects with the first error, which
  // carries `index` (that op's place) and `results` (each op's bytes or Error).
  bool reads = false;
  // The packed form (src/ring/ring.ts unpacks it): [Float64Array, extras] with `stride` doubles per
  // op: a sendmsg's bytes, or a recvmsg's bytes, flags, fd count and fds (stride 3 + maxFds);
  // extras: undefined, or an array with { credentials?, from? } at the ops that had them.
  bool packed = false;
  size_t stride = 1;
  std::vector<int> owned_fds;    // fd copies the batch's messages share (closed with the group)
  int eof_fd = -1;               // recvmsgBatch on a seqpacket socket: one dup for the eof rule
  int socket_type = -1;          // recvmsgBatch: SO_TYPE, read once when queued
  // recvmsgBatchFlat: its Array of views, held once for the whole batch; each op copies into
  // its range of it (Op::view_first) instead of holding a reference per view.
  napi_ref views = nullptr;
};

// Settles the batch (every op done; each op's CQE result in op->res). JS runs here: resolving
// with an object looks up its `then`, and filling a result array runs Array.prototype's setters.
void GroupSettle(napi_env env, OpGroup* group, bool closing);
// Env teardown: nobody can take the values; close what would have been handed over.
void GroupDiscard(OpGroup* group);
// Closes the fd copies the group owns and lets go of its views (not the ops: the caller
// releases those), and frees it.
void GroupFree(napi_env env, OpGroup* group);

}  // namespace iolab
