// Ops with a Promise or in a batch: the record that owns everything the kernel touches for one
// (iovecs, msghdr, cmsg space, sockaddr, and a bounce buffer the kernel reads or writes instead of
// the JS buffer), the opcode table that prepares its SQE and turns its CQE into the Promise's
// value, filling a record from JS values, and the single op's kind (one Promise per op). Batch
// members are group.h's kinds over the same record.
#pragma once
#include <liburing.h>
#include <napi.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <string>
#include <vector>

#include "args.h"
#include "op.h"

namespace iolab {

// What the kernel is asked: one row each in the opcode table (io_table.cc).
enum class OpCode : uint8_t {
  kNop, kRead, kWrite, kReadv, kWritev, kFsync, kSendmsg, kRecvmsg,
  kAccept, kConnect, kRecv, kSend, kClose, kSocket, kCancelFd,
  kPollIn,  // readiness of an fd that has no read (a pidfd: the Channel watching its peer)
  // readvBatch's read straight into the caller's views (RWF_NOWAIT), submitted and completed
  // inside the call that queued it (group.h's direct kind); else it becomes a kReadv.
  kReadvDirect,
  kCount
};


struct IoOp : Op {
  OpCode code = OpCode::kNop;
  const char* syscall = "nop";
  int fd = -1;
  uint64_t offset = 0;
  unsigned flags = 0;       // fsync flags, send/recv flags, socket type...
  int max_fds = 0;          // recvmsg
  int socket_type = -1;     // recvmsg: SO_TYPE, read when queued (for the eof rule)
  int eof_fd = -1;          // recvmsg on a seqpacket socket: a dup polled for the peer's shutdown
  int eof_poll_fd = -1;     // the fd the eof rule polls (eof_fd, or the batch's copy)
  std::vector<int> owned_fds;       // sendmsg: dups of the fds to send, made when queued
  std::vector<napi_ref> targets;    // views a read copies into at completion (held)
  napi_ref shared_views = nullptr;  // or the Array of views its batch holds (not owned) ...
  uint32_t view_first = 0;          // ... and the index of the op's first view in it
  std::vector<size_t> lengths;      // byte length of each target/source at submit
  std::vector<struct iovec> iov;    // into `bounce` (or a direct read's views)
  Bounce bounce;                    // the memory the kernel reads or writes
  std::vector<char> control;        // cmsg space (sendmsg/recvmsg)
  struct msghdr msg {};
  struct sockaddr_storage addr {};
  socklen_t addrlen = 0;
  std::string path;                 // connect: the address as errors show it
  std::string host;                 // connect to an IP address: its host and port, which its
  int port = -1;                    // errors carry as node:net's (`address`, `port`), not `path`
  int fault = 0;                    // EFAULT: a view it copies from could not be read (refused)
  bool read_only_target = false;    // a view it reads into lies in a read-only mapping (OpReadOnlyRefusal)
};

// Sets what every op of `code` starts with (its syscall's name from the table).
void IoInit(IoOp* op, OpCode code, int fd);
// Lets go of what the record holds (view references, fd copies) and empties it; false when its
// bounce memory is over 1 MiB (not worth keeping).
bool IoClear(napi_env env, IoOp* op);
// The SQE of its opcode, and the bytes of its buffers (OpClass::prepare and ::bytes).
void IoPrepare(struct io_uring_sqe* sqe, Op* op);
size_t IoBytes(const Op* op);

// ---- filling a record (may throw an argument error; the caller then gives the record back) ----

// One view: a read holds it (copied into at completion); a write copies its bytes now (a view
// that faults leaves `fault` set: the op is refused with it, as the sync call throws it; a read
// into a read-only mapping is marked for OpReadOnlyRefusal).
void OpAddView(napi_env env, IoOp* op, napi_value view, bool is_read, const char* name = "buffer");
// A list of views (the sync readv/writev's checks: at most IOV_MAX, each an ArrayBufferView),
// one iovec each over the bounce memory.
void OpAddViewList(napi_env env, IoOp* op, napi_value list, bool is_read);
// Views first..first+count of the Array `views` (each an ArrayBufferView, named `name` in
// errors, a name built only then), as OpAddViewList adds a list: the batches' flat form.
// A read holds its views one by one, or, given `shared` (a reference to `views` that its
// batch holds), none: it copies into elements first.. of that Array at completion.
void OpAddViewRange(napi_env env, IoOp* op, napi_value views, uint32_t first, uint32_t count, bool is_read,
                    const ArgPath& name, napi_ref shared = nullptr);
// A direct read (kReadvDirect): iovecs over the views' own memory, no bounce. Only for a read
// the core submits and sees completed inside the call (RingCore::SubmitInCall). `elements` are
// the batch's views, fetched before (reading them ran what JS it could); first..first+count are
// this op's, named `name` in errors; `shared` is the Array its batch holds (for OpToBounce).
void OpSetDirect(napi_env env, IoOp* op, const napi_value* elements, uint32_t first, uint32_t count,
                 const ArgPath& name, napi_ref shared);
// A direct read made an ordinary one (kReadv over bounce memory, copied out into the views of
// its batch's Array when it settles): before the kernel took it, or to run again.
void OpToBounce(IoOp* op);
// A direct read's CQE result that asks for it to run again through bounce memory: EAGAIN (not
// all of it was in the page cache), EOPNOTSUPP (a file that cannot be read without waiting, e.g.
// a memfd or tmpfs: RWF_NOWAIT refused) or short (some of it was; the sync call would block for the
// rest, or it is the end of the file, which the second read finds too).
bool OpDirectWantsRetry(const IoOp* op, int res);

// sendmsg: the message over the bounce memory, with credentials and the fds as one SCM_RIGHTS.
// The fds are dup'ed (close-on-exec) now and the copies closed when the op settles, so closing
// or reusing a number before the SQE runs cannot send another file. Returns 0, or the errno of
// a dup that failed (EBADF for an fd that is not open).
int OpSetSendControl(IoOp* op, const int* fds, size_t nfds, bool credentials);
// The same with fd copies someone else owns (a batch dup's each fd once for all its messages).
void OpBuildSendControl(IoOp* op, const int* copies, size_t nfds, bool credentials);
// recvmsg: room for the sender's address and control space for control_fds fds + credentials.
void OpSetRecvControl(IoOp* op, int control_fds);
// recvmsg: the socket's type is read now (the eof rule needs it), not when the fd may be gone;
// on a seqpacket socket a dup is kept to ask about the peer's shutdown at completion.
void OpReadSocketType(IoOp* op);

// A read into a read-only mapping, as the sync call has it: EFAULT when there are bytes to copy,
// with no file position moved and nothing taken from a socket; 0 at a file's end. So a read or
// readv at a position goes ahead into bounce memory (0 returned) and its copy-out faults
// (OpCopyResult: EFAULT, nothing copied); with `pin`, so does one at a seekable fd's own
// position, pinned to it now. Any other read into such memory is refused: EFAULT.
int OpReadOnlyRefusal(IoOp* op, bool pin);

// ---- results ----

// A read's result copied into its views as they are now (a view detached or shrunk in flight
// gets what still fits; a batch view's getter may run here): the result, or -EFAULT when a view
// faults (a read-only mapping), what it received closed (recvmsg's fds).
int OpCopyResult(napi_env env, IoOp* op, int res);
// recvmsg's result (copied out already) written into `out` (3 + max_fds doubles: bytes, flags,
// fd count, the fds; Received::ToScratch) instead of made as an object; returns
// { credentials?, from? } or undefined. The batches' packed form.
napi_value OpMessagePacked(napi_env env, IoOp* op, int res, double* out);
// The value the Promise resolves with, for res >= 0 (copied out already).
napi_value OpResult(napi_env env, IoOp* op, int res);
// Env teardown, where nobody can take what completed: close what would have been handed over.
void OpDiscard(IoOp* op, int res);
// Whether its result is bytes in op memory that go to its views when it settles (a read).
bool OpCopiesOut(const IoOp* op);
// The error a failed op (res < 0) rejects with: its syscall's errno error, or RingClosedError
// for a cancel while the Ring closes (ECANCELED/EINTR).
napi_value OpError(napi_env env, IoOp* op, int res, bool closing);

// ---- the single op: one Promise ----

struct SingleOp : IoOp {
  napi_deferred deferred = nullptr;
};

SingleOp* AcquireSingle(RingCore* core, OpCode code, int fd);
// Queues the op (the caller has called core->Admit()) and returns its Promise.
napi_value QueueSingle(RingCore* core, SingleOp* op);
// An op that cannot be queued (err: a positive errno): a Promise rejected with the errno error
// of its syscall, and the record given back.
napi_value RefuseSingle(RingCore* core, SingleOp* op, int err);

}  // namespace iolab
