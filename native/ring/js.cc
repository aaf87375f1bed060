// The Ring's JS face: class Ring, one method per op. Each method checks its arguments
// (args.h), fills an op record (io_op.h) and hands it to the core, which prepares its SQE
// (now, or later when the SQ has room) and returns its Promise. Raw napi callbacks: the class
// is made with napi_define_class and each object wraps a RingJs.
#include <string.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "addon.h"
#include "args.h"
#include "core.h"
#include "errors.h"
#include "io_op.h"
#include "js.h"
#include "registry.h"
#include "setup.h"
#include "sys/unix_msg.h"
#include "sys/unix_socket.h"

namespace iolab {

static void ReleaseRing(napi_env, void* data, void*);
static void DefineOwnMethods(napi_env env, napi_value self, RingJs* ring);

static void FinalizeRing(napi_env env, void* data, void*) {
  RingJs* ring = static_cast<RingJs*>(data);
  if (ring->handle.core != nullptr) ring->handle.core->Orphan();
  ring->handle.core = nullptr;  // the core frees itself; a method function kept alive finds it closed
  napi_delete_reference(env, ring->handle.object);
  ring->handle.object = nullptr;
  ReleaseRing(env, ring, nullptr);
}

static napi_value New(napi_env env, napi_callback_info info) {
  RawArgs<1> args(env, info);
  napi_value target = nullptr;
  napi_get_new_target(env, info, &target);
  if (target == nullptr) ThrowTypeError(env, "ERR_CONSTRUCT_CALL_REQUIRED", "Class constructor Ring cannot be invoked without 'new'");
  OptionsArg options(env, args[0]);
  unsigned entries = unsigned(options.Integer("entries", 1, kMaxRingEntries, 256));
  unsigned cq_entries = unsigned(options.Integer("cqEntries", 0, 2 * kMaxRingEntries, 0));
  bool sqpoll = options.Bool("sqpoll", false);
  if (cq_entries != 0 && cq_entries < entries)
    ThrowArgRange(env, "options.cqEntries", ">= options.entries (" + std::to_string(entries) + ")", std::to_string(cq_entries));
  RingJs* ring = new RingJs;
  napi_status status = napi_wrap(env, args.self, ring, FinalizeRing, nullptr, &ring->handle.object);
  if (status != napi_ok) {
    delete ring;
    NAPI_THROW_IF_FAILED(env, status, nullptr);
  }
  // From here the finalizer owns `ring`; a failed setup leaves an object whose methods throw.
  RingCore* core = new RingCore(env, entries, cq_entries, sqpoll, &ring->handle);
  ring->handle.core = core;
  ring->flags = core->setup_flags();
  ring->sq_entries = core->sq_entries();
  ring->cq_entries = core->cq_entries();
  DefineOwnMethods(env, args.self, ring);
  return args.self;
}

static napi_value Nop(napi_env env, napi_callback_info info) {
  Call<0> call(env, info);
  RingCore* core = call.Open(env);
  return Queue(core, AcquireSingle(core, OpCode::kNop, -1));
}

// read(fd, view, position?) / write(...); readv(fd, views, position?) / writev(...)
// readvOne(fd, view, position?) / writevOne(...): readv/writev of a one-buffer list, which
// src/ring/ring.ts passes as its one view (three fewer calls back into JS than reading the list).
enum class Views { kOne, kList, kOneOfList };

template <OpCode code, bool is_read, Views views>
static napi_value Transfer(napi_env env, napi_callback_info info) {
  Call<3> call(env, info);
  RingCore* core = call.Open(env);
  int fd = FdArg(env, call[0]);
  int64_t position = PositionArg(env, call[2], "position", true);
  SingleOp* op = AcquireSingle(core, code, fd);
  op->offset = uint64_t(position);
  return Queue(core, op, [&] {
    if (views == Views::kList) OpAddViewList(env, op, call[1], is_read);
    else OpAddView(env, op, call[1], is_read, views == Views::kOne ? "buffer" : "buffers[0]");
  });
}

static napi_value Fsync(napi_env env, napi_callback_info info) {
  Call<2> call(env, info);
  RingCore* core = call.Open(env);
  int fd = FdArg(env, call[0]);
  bool datasync = OptionsArg(env, call[1]).Bool("datasync", false);
  SingleOp* op = AcquireSingle(core, OpCode::kFsync, fd);
  op->flags = datasync ? IORING_FSYNC_DATASYNC : 0;
  if (datasync) op->syscall = "fdatasync";
  return Queue(core, op);
}

// sendmsg(fd, buffers, { fds?, credentials? }): one message, fds as SCM_RIGHTS.
static napi_value Sendmsg(napi_env env, napi_callback_info info) {
  Call<3> call(env, info);
  RingCore* core = call.Open(env);
  int fd = FdArg(env, call[0]);
  SingleOp* op = AcquireSingle(core, OpCode::kSendmsg, fd);
  op->flags = MSG_NOSIGNAL;
  return Queue(core, op, [&] {
    OpAddViewList(env, op, call[1], false);  // copied now: option getters below cannot touch it
    Keys keys(env);
    int fds[kMaxFdsPerMessage];
    size_t nfds = 0;
    OptionsArg options(env, call[2]);
    napi_value list = options.Get(keys[Key::kFds]);
    if (!Napi::Value(env, list).IsUndefined())
      nfds = FdListArg(env, list, "options.fds", kMaxFdsPerMessage, "SCM_MAX_FD", fds);
    bool credentials = options.Bool(keys[Key::kCredentials], "credentials", false);
    CheckCarriesControl(env, fd, op->bounce.size(), nfds, credentials);  // as the sync sendmsg
    return OpSetSendControl(op, fds, nfds, credentials);
  });
}

// recvmsg(fd, buffers, { maxFds?, controlFds? }): MSG_CMSG_CLOEXEC. As the sync call: the
// control space fits controlFds (default SCM_MAX_FD) fds plus credentials; more fds than
// maxFds, or MSG_CTRUNC, closes every received fd and sets fdsTruncated.
static napi_value Recvmsg(napi_env env, napi_callback_info info) {
  Call<3> call(env, info);
  RingCore* core = call.Open(env);
  int fd = FdArg(env, call[0]);
  RecvLimits limits(env, call[2]);
  int max_fds = limits.max_fds, control_fds = limits.control_fds;
  SingleOp* op = AcquireSingle(core, OpCode::kRecvmsg, fd);
  op->max_fds = max_fds;
  op->flags = MSG_CMSG_CLOEXEC;
  return Queue(core, op, [&] {
    OpAddViewList(env, op, call[1], true);
    OpSetRecvControl(op, control_fds);
    OpReadSocketType(op);
  });
}

// An op that takes nothing but its fd (accept, closeFd, cancelFd).
template <OpCode code>
static napi_value FdOnly(napi_env env, napi_callback_info info) {
  Call<1> call(env, info);
  RingCore* core = call.Open(env);
  int fd = FdArg(env, call[0]);
  return Queue(core, AcquireSingle(core, code, fd));
}

// connect(fd, address): a Unix socket path ('\0'-prefixed: abstract) or { host, port } with a
// numeric IPv4/IPv6 host (src/ring/ring.ts looks names up first), the sync connect's checks
// (sys/socket_address.h).
static napi_value Connect(napi_env env, napi_callback_info info) {
  Call<2> call(env, info);
  RingCore* core = call.Open(env);
  int fd = FdArg(env, call[0]);
  SingleOp* op = AcquireSingle(core, OpCode::kConnect, fd);
  return Queue(core, op, [&] {
    SocketAddress a = SocketAddressArg(env, call[1], fd, AddressUse::kConnect, "connect");
    memcpy(&op->addr, &a.storage, sizeof(a.storage));
    op->addrlen = a.length;
    op->path = a.display;
    if (a.family() != AF_UNIX) {
      op->host = a.host;
      op->port = a.port;
    }
  });
}

// recv(fd, view, flags?) / send(...): MSG_NOSIGNAL added to a send.
template <OpCode code, bool is_read>
static napi_value SendRecv(napi_env env, napi_callback_info info) {
  Call<3> call(env, info);
  RingCore* core = call.Open(env);
  int fd = FdArg(env, call[0]);
  unsigned flags = Napi::Value(env, call[2]).IsUndefined() ? 0 : unsigned(IntegerArg(env, call[2], "flags", 0, INT32_MAX));
  SingleOp* op = AcquireSingle(core, code, fd);
  op->flags = flags | (is_read ? 0 : MSG_NOSIGNAL);
  return Queue(core, op, [&] { OpAddView(env, op, call[1], is_read); });
}

// socket(family, type = 'stream'): 'inet' | 'inet6' | 'unix', 'stream' | 'dgram' | 'seqpacket'.
static napi_value Socket(napi_env env, napi_callback_info info) {
  Call<2> call(env, info);
  RingCore* core = call.Open(env);
  static const Choice families[] = {{"inet", AF_INET}, {"inet6", AF_INET6}, {"unix", AF_UNIX}, {nullptr, 0}};
  int domain = ChoiceArg(env, call[0], "family", families);
  int type = Napi::Value(env, call[1]).IsUndefined() ? SOCK_STREAM : ChoiceArg(env, call[1], "type", kSocketTypes);
  SingleOp* op = AcquireSingle(core, OpCode::kSocket, -1);
  op->offset = uint64_t(domain);
  op->flags = unsigned(type);
  return Queue(core, op);
}

// armOp(ticket, timeoutMs, weak): the next method called queues its ops with this control
// (OpControl): cancelOps(ticket) cancels them; a timeout > 0 links a LINK_TIMEOUT to each; weak
// ops keep no loop alive (ref: false). Plain values from src/ring/ring.ts, read without running JS.
static napi_value ArmOp(napi_env env, napi_callback_info info) {
  Call<3> call(env, info);
  double ticket = 0, timeout_ms = 0;
  bool weak = false;
  napi_get_value_double(env, call[0], &ticket);
  napi_get_value_double(env, call[1], &timeout_ms);
  napi_get_value_bool(env, call[2], &weak);
  call.ring->armed.weak = weak;
  call.ring->armed.ticket = ticket > 0 ? uint64_t(ticket) : 0;
  // at least 1 ns: a timeout the caller asked for is never none
  call.ring->armed.timeout_ns = timeout_ms > 0 ? std::max<int64_t>(1, int64_t(timeout_ms * 1e6)) : 0;
  return nullptr;
}

// cancelOps(ticket): its AbortSignal fired. Nothing on a closed Ring (close() cancels all).
static napi_value CancelOps(napi_env env, napi_callback_info info) {
  Call<1> call(env, info);
  double ticket = 0;
  napi_get_value_double(env, call[0], &ticket);
  if (call.ring->handle.core == nullptr || ticket <= 0) return nullptr;
  call.Open(env)->CancelTicket(uint64_t(ticket));
  return nullptr;
}

static napi_value Submit(napi_env env, napi_callback_info info) {
  Call<0> call(env, info);
  RingCore* core = call.Open(env);
  core->Admit();
  core->Flush();
  return nullptr;
}

static napi_value Close(napi_env env, napi_callback_info info) {
  Call<0> call(env, info);
  if (call.ring->handle.core != nullptr) return call.Open(env)->Close();
  napi_deferred deferred;
  napi_value promise, undefined;
  NAPI_THROW_IF_FAILED(env, napi_create_promise(env, &deferred, &promise), nullptr);
  napi_get_undefined(env, &undefined);
  napi_resolve_deferred(env, deferred, undefined);
  return promise;
}

static napi_value Features(napi_env env, napi_callback_info info) {
  Call<0> call(env, info);
  Napi::Object out = Napi::Object::New(env);
  unsigned f = call.ring->flags;
  out.Set("deferTaskrun", (f & IORING_SETUP_DEFER_TASKRUN) != 0);
  out.Set("singleIssuer", (f & IORING_SETUP_SINGLE_ISSUER) != 0);
  out.Set("coopTaskrun", (f & IORING_SETUP_COOP_TASKRUN) != 0);
  out.Set("taskrunFlag", (f & IORING_SETUP_TASKRUN_FLAG) != 0);
  out.Set("submitAll", (f & IORING_SETUP_SUBMIT_ALL) != 0);
  out.Set("sqpoll", (f & IORING_SETUP_SQPOLL) != 0);
  out.Set("sqEntries", double(call.ring->sq_entries));
  out.Set("cqEntries", double(call.ring->cq_entries));
  return out;
}

static napi_value Stats(napi_env env, napi_callback_info info) {
  Call<0> call(env, info);
  const RingHandle& h = call.ring->handle;
  const RingStats& s = h.core != nullptr ? h.core->stats() : h.stats;
  Napi::Object out = Napi::Object::New(env);
  out.Set("submitCalls", s.submit_calls);
  out.Set("sqesSubmitted", s.sqes_submitted);
  out.Set("cqesReaped", s.cqes_reaped);
  out.Set("overflowQueued", s.overflow_queued);
  out.Set("cqOverflows", s.cq_overflows);
  out.Set("cancelOps", s.cancel_ops);
  out.Set("recvNoBuffers", s.recv_no_buffers);
  out.Set("streamSlotsReused", s.stream_slots_reused);
  out.Set("streamSendsCopied", s.stream_sends_copied);
  out.Set("streamSendsDirect", s.stream_sends_direct);
  return out;
}

static napi_value Closed(napi_env env, napi_callback_info info) {
  Call<0> call(env, info);
  RingCore* core = call.ring->handle.core;
  return Napi::Boolean::New(env, core == nullptr || core->closed());
}

static napi_value InFlight(napi_env env, napi_callback_info info) {
  Call<0> call(env, info);
  RingCore* core = call.ring->handle.core;
  return Napi::Number::New(env, core != nullptr ? double(core->in_flight()) : 0);
}

static napi_value SetClosedErrorClass(napi_env env, napi_callback_info info) {
  RawArgs<1> args(env, info);
  napi_valuetype type;
  napi_typeof(env, args[0], &type);
  if (type != napi_function) ThrowArgType(env, "ctor", "a class", args[0]);
  SetRingClosedErrorClass(env, args[0]);
  return nullptr;
}

// Tests only: this Ring's close()/teardown cancel as on kernels without IORING_ASYNC_CANCEL_ANY.
static napi_value TestRefuseCancelAny(napi_env env, napi_callback_info info) {
  RawArgs<1> args(env, info);
  void* data = nullptr;
  if (napi_unwrap(env, args[0], &data) != napi_ok || data == nullptr) ThrowArgType(env, "ring", "a Ring", args[0]);
  RingCore* core = static_cast<RingJs*>(data)->handle.core;
  if (core != nullptr) core->RefuseCancelAny();
  return nullptr;
}


struct Method {
  const char* name;
  napi_callback cb;
  bool own;  // also made per Ring, carrying it (not those src/ring/ring.ts wraps on the prototype)
};
#define METHOD(name, fn, own) {name, RawCallback<fn>, own}
static const Method kMethods[] = {
    METHOD("nop", Nop, true),
    METHOD("read", (Transfer<OpCode::kRead, true, Views::kOne>), true),
    METHOD("write", (Transfer<OpCode::kWrite, false, Views::kOne>), true),
    METHOD("readv", (Transfer<OpCode::kReadv, true, Views::kList>), false),
    METHOD("writev", (Transfer<OpCode::kWritev, false, Views::kList>), false),
    METHOD("readvOne", (Transfer<OpCode::kReadv, true, Views::kOneOfList>), true),
    METHOD("writevOne", (Transfer<OpCode::kWritev, false, Views::kOneOfList>), true),
    METHOD("fsync", Fsync, true),
    METHOD("sendmsg", Sendmsg, true),
    METHOD("recvmsg", Recvmsg, true),
    METHOD("accept", FdOnly<OpCode::kAccept>, true),
    METHOD("connect", Connect, true),
    METHOD("recv", (SendRecv<OpCode::kRecv, true>), true),
    METHOD("send", (SendRecv<OpCode::kSend, false>), true),
    METHOD("closeFd", FdOnly<OpCode::kClose>, true),
    METHOD("socket", Socket, true),
    // cancelFd(fd): every op waiting on fd rejects with ECANCELED; resolves with how many.
    METHOD("cancelFd", FdOnly<OpCode::kCancelFd>, true),
    METHOD("pollIn", FdOnly<OpCode::kPollIn>, false),  // internal: src/ring/ring.ts's ringPollIn
    METHOD("sendmsgBatch", SendmsgBatch, false),
    METHOD("recvmsgBatch", RecvmsgBatch, false),
    METHOD("closeFds", CloseFds, true),
    METHOD("sendmsgBatchFlat", SendmsgBatchFlat, true),
    METHOD("recvmsgBatchFlat", RecvmsgBatchFlat, true),
    METHOD("readvBatch", ReadvBatch, false),
    METHOD("readvBatchFlat", ReadvBatchFlat, true),
    METHOD("setupBufRing", SetupBufRing, false),  // bufjs.cc
    METHOD("streamsInit", StreamsInit, false),
    METHOD("recvMultishot", RecvMultishot, true),
    METHOD("bufRelease", BufRelease, true),
    METHOD("bufReleaseMany", BufReleaseMany, true),
    METHOD("bufReleaseList", BufReleaseList, true),
    METHOD("bufRingClose", BufRingClose, true),
    METHOD("streamSend", StreamSend, true),
    METHOD("streamWrite", StreamWrite, true),
    METHOD("streamClose", StreamClose, true),
    METHOD("streamQueued", StreamQueued, true),
    METHOD("streamHold", StreamHold, true),
    METHOD("streamRef", StreamRef, true),
    METHOD("streamDrain", StreamDrain, true),
    METHOD("armOp", ArmOp, true),
    METHOD("cancelOps", CancelOps, true),
    METHOD("submit", Submit, true),
    METHOD("close", Close, true),
};
static const Method kGetters[] = {
    METHOD("features", Features, false),
    METHOD("stats", Stats, false),
    METHOD("closed", Closed, false),
    METHOD("inFlight", InFlight, false),
};
#undef METHOD

static void ReleaseRing(napi_env, void* data, void*) {
  RingJs* ring = static_cast<RingJs*>(data);
  if (--ring->refs == 0) delete ring;
}

// The Ring's own copies of its methods, each carrying it, as non-enumerable properties.
static void DefineOwnMethods(napi_env env, napi_value self, RingJs* ring) {
  std::vector<napi_property_descriptor> own;
  for (const Method& m : kMethods) {
    if (!m.own) continue;
    napi_value fn;
    NAPI_THROW_IF_FAILED_VOID(env, napi_create_function(env, m.name, NAPI_AUTO_LENGTH, m.cb, ring, &fn));
    ring->refs++;
    NAPI_THROW_IF_FAILED_VOID(env, napi_add_finalizer(env, fn, ring, ReleaseRing, nullptr, nullptr));
    own.push_back({m.name, nullptr, nullptr, nullptr, nullptr, fn, napi_property_attributes(napi_writable | napi_configurable), nullptr});
  }
  NAPI_THROW_IF_FAILED_VOID(env, napi_define_properties(env, self, own.size(), own.data()));
}

static void Init(Napi::Env env, Napi::Object exports) {
  std::vector<napi_property_descriptor> members;
  for (const Method& m : kMethods) members.push_back({m.name, nullptr, m.cb, nullptr, nullptr, nullptr, napi_default_method, nullptr});
  for (const Method& m : kGetters) members.push_back({m.name, nullptr, nullptr, m.cb, nullptr, nullptr, napi_default, nullptr});
  napi_value ring_class;
  NAPI_THROW_IF_FAILED_VOID(env, napi_define_class(env, "Ring", NAPI_AUTO_LENGTH, RawCallback<New>, nullptr,
                                                   members.size(), members.data(), &ring_class));
  exports.Set("Ring", Napi::Value(env, ring_class));
  napi_value fn;
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_function(env, "ringSetClosedErrorClass", NAPI_AUTO_LENGTH,
                                                      RawCallback<SetClosedErrorClass>, nullptr, &fn));
  exports.Set("ringSetClosedErrorClass", Napi::Value(env, fn));
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_function(env, "ringTestRefuseCancelAny", NAPI_AUTO_LENGTH,
                                                      RawCallback<TestRefuseCancelAny>, nullptr, &fn));
  exports.Set("ringTestRefuseCancelAny", Napi::Value(env, fn));
}

IOLAB_FEATURE(ring, Init);

}  // namespace iolab
