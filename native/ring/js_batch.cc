// The Ring's batch methods: many ops of one kind queued by one call and settled together with
// one Promise (group.h). What every op of a batch shares is done once per call: the
// options are read once, each fd to send is dup'ed once however many messages carry it, the
// socket's type is read once.
#include <fcntl.h>
#include <string.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "addon.h"
#include "args.h"
#include "errors.h"
#include "live_objects.h"
#include "group.h"
#include "js.h"
#include "setup.h"
#include "sys/unix_msg.h"

namespace iolab {

// The batch being filled: given back (its ops to the pool, its fd copies closed) unless it
// was queued. Queue, QueueNow and Refuse throw RingClosedError (the batch given back) when the
// Ring closed while the arguments were read.
class Filling {
 public:
  explicit Filling(RingCore* core) : core_(core), group_(new OpGroup) {}
  ~Filling() {
    if (group_ != nullptr) DropGroup(core_, group_);
  }
  OpGroup* get() const { return group_; }
  MemberOp* Add(OpCode code, int fd, bool direct = false) { return AddMember(core_, group_, code, fd, direct); }
  napi_value Queue() {
    for (Op* op : group_->ops) {  // a view it copied from faulted: refused, as the sync call throws
      MemberOp* m = static_cast<MemberOp*>(op);
      if (m->fault != 0) return Refuse(m->fault, m->syscall);
      // (a batch's reads at the file position are not pinned: the position moves between them)
      if (int err = OpReadOnlyRefusal(m, false)) return Refuse(err, m->syscall);
    }
    core_->Admit();
    return QueueGroup(core_, Release());
  }
  napi_value QueueNow() {
    core_->Admit();
    return QueueGroupNow(core_, Release());
  }
  napi_value Refuse(int err, const char* syscall) {
    core_->Admit();
    return RefuseGroup(core_, Release(), err, syscall);
  }

 private:
  OpGroup* Release() {
    OpGroup* g = group_;
    group_ = nullptr;
    return g;
  }
  RingCore* core_;
  OpGroup* group_;
};

// An Array of at most IORING_MAX_ENTRIES elements: its length.
static uint32_t BatchLength(napi_env env, napi_value value, const char* name, const char* expected) {
  bool is_array = false;
  napi_is_array(env, value, &is_array);
  if (!is_array) ThrowArgType(env, name, expected, value);
  uint32_t n = 0;
  NAPI_THROW_IF_FAILED(env, napi_get_array_length(env, value, &n), 0);
  if (n > kMaxRingEntries)
    ThrowArgRange(env, std::string(name) + ".length", "<= " + std::to_string(kMaxRingEntries), std::to_string(n));
  return n;
}

static napi_value Element(napi_env env, napi_value array, uint32_t i) {
  napi_value v;
  NAPI_THROW_IF_FAILED(env, napi_get_element(env, array, i, &v), nullptr);
  return v;
}

// fds[0..n) replaced by copies the batch owns: each distinct fd dup'ed once (close-on-exec)
// for the whole call. Returns 0, or the errno of a dup that failed.
using FdCopies = std::vector<std::pair<int, int>>;
static int CopyFds(OpGroup* group, FdCopies* copies, int* fds, size_t n) {
  for (size_t k = 0; k < n; k++) {
    auto found = std::find_if(copies->begin(), copies->end(), [&](const std::pair<int, int>& c) { return c.first == fds[k]; });
    if (found != copies->end()) {
      fds[k] = found->second;
      continue;
    }
    int copy = fcntl(fds[k], F_DUPFD_CLOEXEC, 0);
    if (copy < 0) return errno;
    LiveInc(Live::kOwnedFds);
    group->owned_fds.push_back(copy);
    copies->emplace_back(fds[k], copy);
    fds[k] = copy;
  }
  return 0;
}

// sendmsgBatch(fd, [{ buffers, fds? }, ...], { credentials? }) -> Promise<number[]>
napi_value SendmsgBatch(napi_env env, napi_callback_info info) {
  Call<3> call(env, info);
  RingCore* core = call.Open(env);
  int fd = FdArg(env, call[0]);
  Keys keys(env);
  OptionsArg options(env, call[2]);
  bool credentials = options.present() && options.Bool(keys[Key::kCredentials], "credentials", false);
  uint32_t n = BatchLength(env, call[1], "messages", "an array of { buffers, fds? }");
  Filling batch(core);
  FdCopies copies;
  for (uint32_t i = 0; i < n; i++) {
    std::string name = "messages[" + std::to_string(i) + "]";
    napi_value element = Element(env, call[1], i);
    napi_valuetype type;
    napi_typeof(env, element, &type);
    if (type != napi_object) ThrowArgType(env, name, "an object { buffers, fds? }", element);
    OptionsArg message(env, element, "message");
    MemberOp* op = batch.Add(OpCode::kSendmsg, fd);
    op->flags = MSG_NOSIGNAL;
    OpAddViewList(env, op, message.Get(keys[Key::kBuffers]), false);  // copied now
    int fds[kMaxFdsPerMessage];
    size_t nfds = 0;
    napi_value list = message.Get(keys[Key::kFds]);
    napi_typeof(env, list, &type);
    if (type != napi_undefined) nfds = FdListArg(env, list, (name + ".fds").c_str(), kMaxFdsPerMessage, "SCM_MAX_FD", fds);
    CheckCarriesControl(env, fd, op->bounce.size(), nfds, credentials);
    if (int err = CopyFds(batch.get(), &copies, fds, nfds)) return batch.Refuse(err, "sendmsg");
    OpBuildSendControl(op, fds, nfds, credentials);
  }
  return batch.Queue();
}

// The flat forms src/ring/ring.ts calls: every message's views in one Array, how many belong to
// each message in an Int32Array (and for sendmsg every fd in one Int32Array, counted the same
// way), so no property is read here per message; the result is packed (group.h). The
// checks are the object forms', element by element; the names in their errors are built only
// when one is thrown. The Int32Arrays are copied first: reading a view may run a getter that
// detaches them.

// sendmsgBatchFlat(fd, views, viewCounts, fds: Int32Array, fdCounts, credentials) -> Promise<packed>
napi_value SendmsgBatchFlat(napi_env env, napi_callback_info info) {
  Call<6> call(env, info);
  RingCore* core = call.Open(env);
  int fd = FdArg(env, call[0]);
  size_t n = 0, n_fds = 0, total_fds = 0;
  std::vector<int32_t> view_counts = Int32ArrayArg(env, call[2], "viewCounts", &n, kMaxRingEntries);
  std::vector<int32_t> fd_counts = Int32ArrayArg(env, call[4], "fdCounts", &n_fds, kMaxRingEntries);
  // no message reaches past n * SCM_MAX_FD fds (each is checked below)
  std::vector<int32_t> all_fds = Int32ArrayArg(env, call[3], "fds", &total_fds, view_counts.size() * kMaxFdsPerMessage);
  total_fds = all_fds.size();
  if (n_fds != n || n > kMaxRingEntries) ThrowArgRange(env, "fdCounts.length", "viewCounts.length, <= " + std::to_string(kMaxRingEntries), std::to_string(n_fds));
  bool credentials = OptionalBoolArg(env, call[5], "options.credentials", false);
  uint32_t total_views = BatchLength(env, call[1], "views", "an array of ArrayBufferView");
  Filling batch(core);
  batch.get()->packed = true;
  FdCopies copies;
  uint32_t view_at = 0, fd_at = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t views = uint32_t(view_counts[i]), nfds = uint32_t(fd_counts[i]);
    if (view_counts[i] < 0 || view_at + uint64_t(views) > total_views) ThrowArgRange(env, "viewCounts", "counts of views that add up to views.length", std::to_string(view_counts[i]));
    if (fd_counts[i] < 0 || nfds > uint32_t(kMaxFdsPerMessage) || fd_at + uint64_t(nfds) > total_fds)
      ThrowArgRange(env, ArgPath{"messages[", i, "].fds.length"}.str(), "<= " + std::to_string(kMaxFdsPerMessage) + " (SCM_MAX_FD)", std::to_string(fd_counts[i]));
    MemberOp* op = batch.Add(OpCode::kSendmsg, fd);
    op->flags = MSG_NOSIGNAL;
    OpAddViewRange(env, op, call[1], view_at, views, false, ArgPath{"messages[", i, "].buffers"});  // copied now
    view_at += views;
    int fds[kMaxFdsPerMessage];
    for (uint32_t k = 0; k < nfds; k++) {
      fds[k] = all_fds[fd_at + k];
      if (fds[k] < 0) ThrowArgRange(env, ArgPath{"messages[", i, "].fds"}.str() + "[" + std::to_string(k) + "]", "an fd (an integer >= 0)", std::to_string(fds[k]));
    }
    fd_at += nfds;
    CheckCarriesControl(env, fd, op->bounce.size(), nfds, credentials);
    if (int err = CopyFds(batch.get(), &copies, fds, nfds)) return batch.Refuse(err, "sendmsg");
    OpBuildSendControl(op, fds, nfds, credentials);
  }
  return batch.Queue();
}

// SO_TYPE once for the batch, now (the eof rule needs it), and on a seqpacket socket one dup to
// ask about the peer's shutdown.
static void ReadSocketType(int fd, OpGroup* group) {
  group->socket_type = SocketTypeOf(fd);
  if (group->socket_type == SOCK_SEQPACKET) {
    group->eof_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (group->eof_fd >= 0) LiveInc(Live::kOwnedFds);
  }
}

static MemberOp* AddRecvmsg(Filling* batch, int fd, int max_fds) {
  MemberOp* op = batch->Add(OpCode::kRecvmsg, fd);
  op->max_fds = max_fds;
  op->flags = MSG_CMSG_CLOEXEC;
  op->socket_type = batch->get()->socket_type;
  op->eof_poll_fd = batch->get()->eof_fd;
  return op;
}

// recvmsgBatch(fd, [buffers, ...], { maxFds?, controlFds? }) -> Promise<RecvResult[]>
napi_value RecvmsgBatch(napi_env env, napi_callback_info info) {
  Call<3> call(env, info);
  RingCore* core = call.Open(env);
  int fd = FdArg(env, call[0]);
  RecvLimits limits(env, call[2]);
  int max_fds = limits.max_fds, control_fds = limits.control_fds;
  uint32_t n = BatchLength(env, call[1], "buffers", "an array of arrays of ArrayBufferView");
  Filling batch(core);
  ReadSocketType(fd, batch.get());
  for (uint32_t i = 0; i < n; i++) {
    MemberOp* op = AddRecvmsg(&batch, fd, max_fds);
    OpAddViewList(env, op, Element(env, call[1], i), true);
    OpSetRecvControl(op, control_fds);
  }
  return batch.Queue();
}

// recvmsgBatchFlat(fd, views, viewCounts, maxFds, controlFds) -> Promise<packed>
napi_value RecvmsgBatchFlat(napi_env env, napi_callback_info info) {
  Call<5> call(env, info);
  RingCore* core = call.Open(env);
  int fd = FdArg(env, call[0]);
  size_t n = 0;
  std::vector<int32_t> view_counts = Int32ArrayArg(env, call[2], "viewCounts", &n, kMaxRingEntries);
  if (n > kMaxRingEntries) ThrowArgRange(env, "viewCounts.length", "<= " + std::to_string(kMaxRingEntries), std::to_string(n));
  int max_fds = int(OptionalIntegerArg(env, call[3], "options.maxFds", 0, kMaxFdsPerMessage, 0));
  int control_fds = int(OptionalIntegerArg(env, call[4], "options.controlFds", 0, kMaxFdsPerMessage, kMaxFdsPerMessage));
  uint32_t total_views = BatchLength(env, call[1], "views", "an array of ArrayBufferView");
  Filling batch(core);
  OpGroup* group = batch.get();
  group->packed = true;
  group->stride = 3 + size_t(max_fds);
  // the views Array (src/ring/ring.ts made it for this call) is held once, not each view in it
  NAPI_THROW_IF_FAILED(env, napi_create_reference(env, call[1], 1, &group->views), nullptr);
  LiveInc(Live::kHeldBuffers);
  ReadSocketType(fd, group);
  uint32_t view_at = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t views = uint32_t(view_counts[i]);
    if (view_counts[i] < 0 || view_at + uint64_t(views) > total_views) ThrowArgRange(env, "viewCounts", "counts of views that add up to views.length", std::to_string(view_counts[i]));
    MemberOp* op = AddRecvmsg(&batch, fd, max_fds);
    OpAddViewRange(env, op, call[1], view_at, views, true, ArgPath{"buffers[", i, "]"}, group->views);
    view_at += views;
    OpSetRecvControl(op, control_fds);
  }
  return batch.Queue();
}

// readvBatch(fd, [{ buffers, position? }, ...]) -> Promise<Int32Array>: one READV (READ for one
// buffer) per request, settled together (OpGroup::reads).
napi_value ReadvBatch(napi_env env, napi_callback_info info) {
  Call<2> call(env, info);
  RingCore* core = call.Open(env);
  int fd = FdArg(env, call[0]);
  uint32_t n = BatchLength(env, call[1], "requests", "an array of { buffers, position? }");
  Filling batch(core);
  batch.get()->reads = true;
  Keys keys(env);
  int64_t any_position = -1;
  for (uint32_t i = 0; i < n; i++) {
    std::string name = "requests[" + std::to_string(i) + "]";
    napi_value element = Element(env, call[1], i);
    napi_valuetype type;
    napi_typeof(env, element, &type);
    if (type != napi_object) ThrowArgType(env, name, "an object { buffers, position? }", element);
    OptionsArg request(env, element, "request");
    MemberOp* op = batch.Add(OpCode::kReadv, fd);
    int64_t position = PositionArg(env, request.Get("position"), (name + ".position").c_str(), true);
    any_position = std::max(any_position, position);
    op->offset = uint64_t(position);
    OpAddViewList(env, op, request.Get(keys[Key::kBuffers]), true);  // holds its views
  }
  if (int err = PositionRefusal(fd, any_position)) return batch.Refuse(err, "readv");
  return batch.Queue();
}

// fd is read through the page cache (no O_DIRECT), where RWF_NOWAIT completes a read inside the
// submit or refuses it with EAGAIN. (Only a hint: SubmitInCall waits for a read the kernel
// queued all the same, so a file made O_DIRECT meanwhile is safe, if slow.)
static bool ThroughPageCache(int fd) {
  int flags = fcntl(fd, F_GETFL);
  return flags >= 0 && (flags & O_DIRECT) == 0;
}

// readvBatchFlat(fd, views, viewCounts | undefined, positions: Float64Array, count?, ...views) ->
// Promise<Int32Array>: the first `count` positions (all by default), viewCounts undefined when
// each request has one view; a position of -1 is the file position. The views Array is held once for the batch, as
// recvmsgBatchFlat holds its own. When every position is explicit, fd is not O_DIRECT and the
// SQ has room for the batch (and no timeout asks for linked SQEs), the reads go straight into the
// views (kReadvDirect) and are submitted before the call returns (QueueGroupNow): no bounce
// memory, no copy when they settle.
napi_value ReadvBatchFlat(napi_env env, napi_callback_info info) {
  Call<5> call(env, info);
  RingCore* core = call.Open(env);
  int fd = FdArg(env, call[0]);
  // The typed arrays are copied first (src/ring/ring.ts reuses them: a getter run below may call
  // readvBatch again); then every element is fetched, since reading one may run JS (a getter
  // that detaches a buffer or closes the Ring): the views' pointers are taken after that.
  size_t n = 0, n_counts = 0;
  std::vector<double> positions = Float64ArrayArg(env, call[3], "positions", &n, kMaxRingEntries);
  n = std::min<size_t>(n, size_t(OptionalIntegerArg(env, call[4], "count", 0, kMaxRingEntries, kMaxRingEntries)));
  if (n > kMaxRingEntries) ThrowArgRange(env, "positions.length", "<= " + std::to_string(kMaxRingEntries), std::to_string(n));
  positions.resize(n);
  bool one_each = Napi::Value(env, call[2]).IsUndefined();  // one view per request
  std::vector<int32_t> view_counts;
  if (!one_each) {
    view_counts = Int32ArrayArg(env, call[2], "viewCounts", &n_counts, kMaxRingEntries);
    if (n_counts < n) ThrowArgRange(env, "viewCounts.length", ">= positions.length (" + std::to_string(n) + ")", std::to_string(n_counts));
  }
  uint32_t total_views = BatchLength(env, call[1], "views", "an array of ArrayBufferView");
  // src/ring/ring.ts also passes a small batch's views as arguments after the five: all of them in
  // one napi call instead of an element read each.
  size_t argc = 5 + size_t(total_views);
  std::vector<napi_value> elements(argc);
  NAPI_THROW_IF_FAILED(env, napi_get_cb_info(env, info, &argc, elements.data(), nullptr, nullptr), nullptr);
  if (argc == 5 + size_t(total_views)) {
    elements.erase(elements.begin(), elements.begin() + 5);
  } else {
    elements.resize(total_views);
    for (uint32_t k = 0; k < total_views; k++) elements[k] = Element(env, call[1], k);
  }
  bool positioned = std::any_of(positions.begin(), positions.end(), [](double p) { return p >= 0; });
  bool direct = n > 0 && std::all_of(positions.begin(), positions.end(), [](double p) { return p >= 0; }) &&
                !core->has_timeout() && core->CanSubmitNow(n) && ThroughPageCache(fd);
  Filling batch(core);
  OpGroup* group = batch.get();
  group->reads = true;
  group->ops.reserve(n);
  NAPI_THROW_IF_FAILED(env, napi_create_reference(env, call[1], 1, &group->views), nullptr);
  LiveInc(Live::kHeldBuffers);
  uint32_t view_at = 0;
  for (size_t i = 0; i < n; i++) {
    int32_t count = one_each ? 1 : view_counts[i];
    uint32_t views = uint32_t(count);
    if (count < 0 || view_at + uint64_t(views) > total_views) ThrowArgRange(env, "viewCounts", "counts of views that add up to views.length", std::to_string(count));
    double p = positions[i];
    if (p != -1 && !(p >= 0 && p <= double(kMaxSafeInteger) && p == double(int64_t(p)))) {
      napi_value value;  // the per-op readv's error for this number
      napi_create_double(env, p, &value);
      PositionArg(env, value, ArgPath{"requests[", i, "].position"}.str().c_str(), true);
    }
    MemberOp* op = batch.Add(direct ? OpCode::kReadvDirect : OpCode::kReadv, fd, direct);
    op->offset = uint64_t(int64_t(p));
    if (direct) OpSetDirect(env, op, elements.data(), view_at, views, ArgPath{"requests[", i, "].buffers"}, group->views);
    else OpAddViewRange(env, op, call[1], view_at, views, true, ArgPath{"requests[", i, "].buffers"}, group->views);
    view_at += views;
  }
  if (int err = PositionRefusal(fd, positioned ? 0 : -1)) return batch.Refuse(err, "readv");
  return direct ? batch.QueueNow() : batch.Queue();
}

// closeFds([fd, ...] or an Int32Array of fds) -> Promise<void>
napi_value CloseFds(napi_env env, napi_callback_info info) {
  Call<1> call(env, info);
  RingCore* core = call.Open(env);
  bool is_typed = false;
  napi_is_typedarray(env, call[0], &is_typed);
  Filling batch(core);
  batch.get()->resolve_undefined = true;
  if (is_typed) {  // no element to read from JS, one by one (src/ring/ring.ts passes this form)
    size_t n = 0;
    std::vector<int32_t> fds = Int32ArrayArg(env, call[0], "fds", &n, kMaxRingEntries);
    if (n > kMaxRingEntries) ThrowArgRange(env, "fds.length", "<= " + std::to_string(kMaxRingEntries), std::to_string(n));
    for (size_t i = 0; i < n; i++) {
      if (fds[i] < 0) ThrowArgRange(env, "fds[" + std::to_string(i) + "]", "an fd (an integer >= 0)", std::to_string(fds[i]));
      batch.Add(OpCode::kClose, fds[i]);
    }
    return batch.Queue();
  }
  uint32_t n = BatchLength(env, call[0], "fds", "an array of fds");
  for (uint32_t i = 0; i < n; i++) {
    napi_value element = Element(env, call[0], i);
    int fd;
    if (!IsFd(env, element, &fd)) fd = FdArg(env, element, ("fds[" + std::to_string(i) + "]").c_str());
    batch.Add(OpCode::kClose, fd);
  }
  return batch.Queue();
}

}  // namespace iolab
