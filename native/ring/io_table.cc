// The opcode table of ops with a Promise or in a batch (io_op.h): a row per OpCode saying how its
// SQE is prepared, the value its Promise resolves with, and what env teardown closes; and the
// single op's kind table (one Promise per op) over it.
#include <errno.h>
#include <poll.h>
#include <sys/sdt.h>  // USDT probes (provider iolab): docs/trace.md lists them
#include <unistd.h>

#include "core.h"
#include "errors.h"
#include "io_op.h"
#include "sys/unix_msg.h"

namespace iolab {

// ---- results ----

static napi_value Undefined(napi_env env, IoOp*, int) {
  napi_value v;
  napi_get_undefined(env, &v);
  return v;
}

static napi_value Count(napi_env env, IoOp*, int res) {
  napi_value v;
  napi_create_int32(env, res, &v);
  return v;
}

static napi_value Message(napi_env env, IoOp* op, int res) {
  Received received(&op->msg, size_t(res), op->max_fds);
  if (received.maybe_eof()) received.ApplyEof(op->socket_type, op->eof_poll_fd);
  return received.ToValue(env);
}

// ---- discard (env teardown) ----

static void KeepNothing(IoOp*, int) {}
static void CloseNewFd(IoOp*, int res) {
  if (res >= 0) close(res);
}
static void CloseReceived(IoOp* op, int res) {
  if (res >= 0) {
    Received received(&op->msg, size_t(res), 0);  // closes every fd that came
  }
}

// ---- prep ----

static void PrepNop(io_uring_sqe* sqe, IoOp*) { io_uring_prep_nop(sqe); }
static void PrepRead(io_uring_sqe* sqe, IoOp* op) {
  io_uring_prep_read(sqe, op->fd, op->bounce.data(), unsigned(op->bounce.size()), op->offset);
}
static void PrepWrite(io_uring_sqe* sqe, IoOp* op) {
  io_uring_prep_write(sqe, op->fd, op->bounce.data(), unsigned(op->bounce.size()), op->offset);
}
// One buffer: READ/WRITE (the kernel skips importing an iovec), as the sync readv/writev make
// the plain call for one buffer.
static void PrepReadv(io_uring_sqe* sqe, IoOp* op) {
  if (op->lengths.size() == 1) io_uring_prep_read(sqe, op->fd, op->bounce.data(), unsigned(op->bounce.size()), op->offset);
  else io_uring_prep_readv(sqe, op->fd, op->iov.data(), unsigned(op->iov.size()), op->offset);
}
static void PrepWritev(io_uring_sqe* sqe, IoOp* op) {
  if (op->lengths.size() == 1) io_uring_prep_write(sqe, op->fd, op->bounce.data(), unsigned(op->bounce.size()), op->offset);
  else io_uring_prep_writev(sqe, op->fd, op->iov.data(), unsigned(op->iov.size()), op->offset);
}
// Into the caller's memory, and never waiting: what is not in the page cache comes back EAGAIN
// (the read is then retried through bounce memory), so the kernel is done with that memory
// when the submit returns.
#ifndef RWF_NOWAIT
#define RWF_NOWAIT 0x00000008  // linux/fs.h
#endif
static void PrepReadvDirect(io_uring_sqe* sqe, IoOp* op) {
  if (op->iov.size() == 1) io_uring_prep_read(sqe, op->fd, op->iov[0].iov_base, unsigned(op->iov[0].iov_len), op->offset);
  else io_uring_prep_readv(sqe, op->fd, op->iov.data(), unsigned(op->iov.size()), op->offset);
  sqe->rw_flags = RWF_NOWAIT;
}
static void PrepFsync(io_uring_sqe* sqe, IoOp* op) { io_uring_prep_fsync(sqe, op->fd, op->flags); }
static void PrepSendmsg(io_uring_sqe* sqe, IoOp* op) { io_uring_prep_sendmsg(sqe, op->fd, &op->msg, op->flags); }
static void PrepRecvmsg(io_uring_sqe* sqe, IoOp* op) { io_uring_prep_recvmsg(sqe, op->fd, &op->msg, op->flags); }
static void PrepAccept(io_uring_sqe* sqe, IoOp* op) { io_uring_prep_accept(sqe, op->fd, nullptr, nullptr, SOCK_CLOEXEC); }
static void PrepConnect(io_uring_sqe* sqe, IoOp* op) {
  io_uring_prep_connect(sqe, op->fd, reinterpret_cast<struct sockaddr*>(&op->addr), op->addrlen);
}
static void PrepRecv(io_uring_sqe* sqe, IoOp* op) {
  io_uring_prep_recv(sqe, op->fd, op->bounce.data(), op->bounce.size(), int(op->flags));
}
static void PrepSend(io_uring_sqe* sqe, IoOp* op) {
  io_uring_prep_send(sqe, op->fd, op->bounce.data(), op->bounce.size(), int(op->flags));
}
static void PrepClose(io_uring_sqe* sqe, IoOp* op) { io_uring_prep_close(sqe, op->fd); }
// offset holds the address family, flags the socket type.
static void PrepSocket(io_uring_sqe* sqe, IoOp* op) {
  io_uring_prep_socket(sqe, int(op->offset), int(op->flags) | SOCK_CLOEXEC, 0, 0);
}
static void PrepPollIn(io_uring_sqe* sqe, IoOp* op) { io_uring_prep_poll_add(sqe, op->fd, POLLIN); }
static void PrepCancelFd(io_uring_sqe* sqe, IoOp* op) { io_uring_prep_cancel_fd(sqe, op->fd, IORING_ASYNC_CANCEL_ALL); }

// ---- the table ----

struct OpCodeRow {
  const char* syscall;
  void (*prep)(struct io_uring_sqe* sqe, IoOp* op);
  bool copies_out;  // a read: its bytes go from op memory to its views when it settles
  napi_value (*result)(napi_env env, IoOp* op, int res);  // for res >= 0
  void (*discard)(IoOp* op, int res);
};

// One row per OpCode, in its order: what a new op of that code does, from SQE to JS value.
static const OpCodeRow kRows[] = {
    {"nop", PrepNop, false, Undefined, KeepNothing},
    {"read", PrepRead, true, Count, KeepNothing},
    {"write", PrepWrite, false, Count, KeepNothing},
    {"readv", PrepReadv, true, Count, KeepNothing},
    {"writev", PrepWritev, false, Count, KeepNothing},
    {"fsync", PrepFsync, false, Undefined, KeepNothing},
    {"sendmsg", PrepSendmsg, false, Count, KeepNothing},
    {"recvmsg", PrepRecvmsg, true, Message, CloseReceived},
    {"accept", PrepAccept, false, Count, CloseNewFd},
    {"connect", PrepConnect, false, Undefined, KeepNothing},
    {"recv", PrepRecv, true, Count, KeepNothing},
    {"send", PrepSend, false, Count, KeepNothing},
    {"close", PrepClose, false, Undefined, KeepNothing},
    {"socket", PrepSocket, false, Count, CloseNewFd},
    {"io_uring_cancel", PrepCancelFd, false, Count, KeepNothing},  // how many ops were cancelled
    {"poll", PrepPollIn, false, Count, KeepNothing},                // the events that came
    {"readv", PrepReadvDirect, false, Count, KeepNothing},          // the bytes are in the views already
};
static_assert(sizeof(kRows) / sizeof(kRows[0]) == size_t(OpCode::kCount), "one row per OpCode");

void IoInit(IoOp* op, OpCode code, int fd) {
  op->code = code;
  op->syscall = kRows[size_t(code)].syscall;
  op->fd = fd;
  op->offset = 0;
  op->flags = 0;
  op->max_fds = 0;
}

void IoPrepare(struct io_uring_sqe* sqe, Op* op) {
  IoOp* io = static_cast<IoOp*>(op);
  kRows[size_t(io->code)].prep(sqe, io);
}

size_t IoBytes(const Op* op) {
  const IoOp* io = static_cast<const IoOp*>(op);
  size_t total = 0;
  for (size_t n : io->lengths) total += n;
  return total;
}

napi_value OpResult(napi_env env, IoOp* op, int res) { return kRows[size_t(op->code)].result(env, op, res); }

void OpDiscard(IoOp* op, int res) { kRows[size_t(op->code)].discard(op, res); }

bool OpCopiesOut(const IoOp* op) { return kRows[size_t(op->code)].copies_out; }

napi_value OpError(napi_env env, IoOp* op, int res, bool closing) {
  if (closing && (res == -ECANCELED || res == -EINTR)) return RingClosedError(env).Value();
  if (op->port >= 0) {  // an IP address: as node:net's errors
    Napi::Error error = ErrnoErrorNaming(env, -res, op->syscall, op->path);
    error.Value().Set("address", Napi::String::New(env, op->host));
    error.Value().Set("port", Napi::Number::New(env, op->port));
    return error.Value();
  }
  return ErrnoError(env, -res, op->syscall, op->path.empty() ? nullptr : op->path.c_str()).Value();
}

// ---- the single op's kind ----

static Op* MakeSingle() { return new SingleOp; }

static bool ClearSingle(napi_env env, Op* op) {
  SingleOp* single = static_cast<SingleOp*>(op);
  single->deferred = nullptr;
  return IoClear(env, single);
}

static Next CompleteOnce(RingCore*, Op*, int&, unsigned) { return Next::kDone; }

// Resolves or rejects the op's Promise with its CQE result (a cancel while the Ring closes:
// RingClosedError), then gives the record back.
static void SettleSingle(RingCore* core, Op* op, int res) {
  SingleOp* single = static_cast<SingleOp*>(op);
  napi_env env = core->env();
  if (single->code == OpCode::kCancelFd && res == -ENOENT) res = 0;  // nothing was waiting on fd
  try {
    res = OpCopyResult(env, single, res);
    if (res < 0) napi_reject_deferred(env, single->deferred, OpError(env, single, res, core->closing()));
    else napi_resolve_deferred(env, single->deferred, OpResult(env, single, res));
    DTRACE_PROBE2(iolab, ring_settle, op, res);
  } catch (const Napi::Error&) {
    // Building the value failed (out of memory in V8): nothing sensible left to do.
  }
  core->ReleaseOp(op);
}

static void AbandonSingle(RingCore* core, Op* op, int res) {
  OpDiscard(static_cast<SingleOp*>(op), res);
  core->ReleaseOp(op);
}

static const OpClass kSingle = {kSinglePool, MakeSingle, ClearSingle, IoPrepare, IoBytes, CompleteOnce, SettleSingle, AbandonSingle};

SingleOp* AcquireSingle(RingCore* core, OpCode code, int fd) {
  SingleOp* op = static_cast<SingleOp*>(core->AcquireOp(&kSingle));
  IoInit(op, code, fd);
  return op;
}

napi_value QueueSingle(RingCore* core, SingleOp* op) {
  napi_value promise;
  napi_status status = napi_create_promise(core->env(), &op->deferred, &promise);
  if (status != napi_ok) {
    core->ReleaseOp(op);
    NAPI_THROW_IF_FAILED(core->env(), status, nullptr);
  }
  core->Queue(op);
  return promise;
}

napi_value RefuseSingle(RingCore* core, SingleOp* op, int err) {
  napi_env env = core->env();
  napi_deferred deferred;
  napi_value promise;
  napi_status status = napi_create_promise(env, &deferred, &promise);
  if (status == napi_ok) napi_reject_deferred(env, deferred, ErrnoError(env, err, op->syscall).Value());
  core->ReleaseOp(op);
  NAPI_THROW_IF_FAILED(env, status, nullptr);
  return promise;
}

}  // namespace iolab
