// The shared-memory channel's binding (native/channel/: the queues): makes or joins a region,
// and gives src/ring/channel.ts one object per side (channel_end.h) whose methods move messages
// (channel_messages.cc) and tell the other side. The waiting itself is JS's: a Ring recv on
// this side's copy of the socket, where the other side sends a byte to wake it.
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <utility>

#include "args.h"
#include "channel_end.h"
#include "errors.h"
#include "registry.h"

namespace iolab {
namespace {

// The end class of this env: channelCreate's and channelJoin's data, a reference made by Init.
napi_value EndClass(napi_env env, void* data) {
  napi_value ctor;
  NAPI_THROW_IF_FAILED(env, napi_get_reference_value(env, static_cast<napi_ref>(data), &ctor), nullptr);
  return ctor;
}

// Maps memfd's region read-write and wraps it as a new end object of this side. With
// capacity_to_init, a fresh region is laid out; otherwise the one found is checked.
napi_value MakeEnd(napi_env env, napi_value ctor, int side, OwnedFd memfd, uint64_t bytes, OwnedFd socket,
                   uint64_t capacity_to_init, SocketKey claim) {
  // A page that faults follows the region: should a write ever run past the last queue (as an
  // index no check caught once did, into whatever mapping came next), it crashes here instead
  // of changing another object's memory without a sound.
  size_t guard = size_t(sysconf(_SC_PAGESIZE));
  void* reserved = mmap(nullptr, bytes + guard, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (reserved == MAP_FAILED) ThrowErrno(env, errno, "mmap");
  void* addr = mmap(reserved, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, memfd.get(), 0);
  if (addr == MAP_FAILED) {
    int err = errno;
    munmap(reserved, bytes + guard);
    ThrowErrno(env, err, "mmap");
  }
  LiveInc(Live::kMappings);
  ChannelRegion* region = new ChannelRegion{addr, size_t(bytes) + guard};
  // the capacity is the private copy from here on: channel_check's, never the header's again
  uint64_t capacity = capacity_to_init;
  if (capacity_to_init != 0) channel_init(addr, capacity_to_init);
  const char* problem = capacity_to_init != 0 ? nullptr : channel_check(addr, bytes, &capacity);
  // the joining side needs its memfd no longer: the mapping keeps the region
  ChannelEnd* end = new ChannelEnd(side == 0 ? std::move(memfd) : OwnedFd(), std::move(socket));
  end->region = region;
  if (problem == nullptr) problem = channel_attach(&end->ring, addr, capacity, side, end->socket.get());
  if (problem != nullptr) {
    UnmapRegion(region);
    delete region;
    delete end;
    ThrowError(env, "ERR_CHANNEL_PROTOCOL", std::string("the shared memory the other side passed is not a channel's: ") + problem);
  }
  napi_value object = nullptr, buffer = nullptr;
  napi_status status = napi_new_instance(env, ctor, 0, nullptr, &object);
  if (status == napi_ok) status = napi_wrap(env, object, end, FinalizeEnd, nullptr, nullptr);
  if (status != napi_ok) {
    UnmapRegion(region);
    delete region;
    delete end;
    NAPI_THROW_IF_FAILED(env, status, nullptr);
  }
  // From here FinalizeEnd owns `end` and one reference to the region; the ArrayBuffer the other.
  status = napi_create_external_arraybuffer(env, addr, bytes, FinalizeRegionBuffer, region, &buffer);
  if (status != napi_ok) {
    region->refs--;  // no ArrayBuffer holds it
    FreeEnd(nullptr, end);
    NAPI_THROW_IF_FAILED(env, status, nullptr);
  }
  status = napi_create_reference(env, buffer, 1, &end->buffer);
  if (status != napi_ok) {
    FreeEnd(env, end);
    NAPI_THROW_IF_FAILED(env, status, nullptr);
  }
  end->claim = claim;
  end->claimed = true;
  return object;
}

// A close-on-exec copy of fd, after checking it is a Unix stream socket: the channel's own,
// so the caller may close theirs.
OwnedFd SocketCopy(napi_env env, napi_value value) {
  int fd = FdArg(env, value, "socket");
  int type = 0, domain = 0;
  socklen_t len = sizeof type;
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0) ThrowErrno(env, errno, "getsockopt");
  len = sizeof domain;
  if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0) ThrowErrno(env, errno, "getsockopt");
  if (type != SOCK_STREAM || domain != AF_UNIX)
    ThrowTypeError(env, "ERR_INVALID_ARG_VALUE", "The \"socket\" argument must be a Unix stream socket (socketpair('stream'), or one connected or accepted). Received fd " + std::to_string(fd));
  int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) ThrowErrno(env, errno, "fcntl");
  return OwnedFd(copy);
}

// channelCreate(socket, capacity) -> a new region and this side's end (side 0).
napi_value Create(napi_env env, napi_callback_info info) {
  RawArgs<2> args(env, info);
  uint64_t capacity = uint64_t(IntegerArg(env, args[1], "options.capacity", CHANNEL_MIN_CAPACITY, CHANNEL_MAX_CAPACITY));
  if ((capacity & (capacity - 1)) != 0)
    ThrowArgRange(env, "options.capacity", "a power of two", std::to_string(capacity));
  OwnedFd socket = SocketCopy(env, args[0]);
  uint64_t bytes = channel_region_bytes(capacity);
  OwnedFd memfd(memfd_create("iolab-channel", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (memfd.get() < 0) ThrowErrno(env, errno, "memfd_create");
  if (ftruncate(memfd.get(), off_t(bytes)) != 0) ThrowErrno(env, errno, "ftruncate");
  // a region the other side's process could shrink under its mapping would kill it (SIGBUS)
  if (fcntl(memfd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) ThrowErrno(env, errno, "fcntl");
  auto claim = SocketKeyOf(env, socket.get());
  return MakeEnd(env, EndClass(env, args.data), 0, std::move(memfd), bytes, std::move(socket), capacity, claim);
}

// channelJoin(socket, memfd) -> the joining side's end (side 1). Adopts memfd whatever happens:
// it is closed once mapped, or at once when joining fails.
napi_value Join(napi_env env, napi_callback_info info) {
  RawArgs<2> args(env, info);
  int fd = -1;
  IsFd(env, args[1], &fd);
  OwnedFd memfd(fd);
  if (fd < 0) FdArg(env, args[1], "memfd");  // throws its TypeError/RangeError
  OwnedFd socket = SocketCopy(env, args[0]);
  // The seal first, then the size: once sealed against shrinking the size can only grow, so the
  // size read after it is one the mapping can trust (read before it, the other side could
  // shrink the memfd and then seal it, and this side would map past its end: SIGBUS).
  int seals = fcntl(memfd.get(), F_GET_SEALS);
  if (seals < 0 || !(seals & F_SEAL_SHRINK))
    ThrowError(env, "ERR_CHANNEL_PROTOCOL", "the shared memory the other side passed is not sealed against shrinking");
  struct stat st;
  if (fstat(memfd.get(), &st) != 0) ThrowErrno(env, errno, "fstat");
  if (uint64_t(st.st_size) < CHANNEL_HEADER_BYTES || uint64_t(st.st_size) > channel_region_bytes(CHANNEL_MAX_CAPACITY))
    ThrowError(env, "ERR_CHANNEL_PROTOCOL", "the shared memory the other side passed has not a channel's size");
  auto claim = SocketKeyOf(env, socket.get());
  return MakeEnd(env, EndClass(env, args.data), 1, std::move(memfd), uint64_t(st.st_size), std::move(socket), 0, claim);
}

// ---- the end's methods ----

// What a side waits for: prepareSleep's and spin's first arguments (wantMessage, wantRoom,
// pendingBytes: the bytes of the message that waits for room).
struct Wanted {
  bool message;
  bool room;
  uint64_t pending_bytes;
};

Wanted WantedArgs(napi_env env, const napi_value* argv) {
  return {BoolArg(env, argv[0], "wantMessage"), BoolArg(env, argv[1], "wantRoom"), SizeArg(env, argv[2], "pendingBytes")};
}

// prepareSleep(wantMessage, wantRoom, pendingBytes) -> true: sleep, the other side will send a byte.
napi_value PrepareSleep(napi_env env, napi_callback_info info) {
  RawArgs<3> args(env, info);
  ChannelEnd* end = OpenEnd(env, args.self);
  Wanted w = WantedArgs(env, args.argv);
  return Boolean(env, channel_prepare_sleep(&end->ring, w.message, w.room, w.pending_bytes) != 0);
}

// spin(wantMessage, wantRoom, pendingBytes, ns) -> true: what was wanted came within ns.
napi_value Spin(napi_env env, napi_callback_info info) {
  RawArgs<4> args(env, info);
  ChannelEnd* end = OpenEnd(env, args.self);
  Wanted w = WantedArgs(env, args.argv);
  uint64_t ns = uint64_t(IntegerArg(env, args[3], "ns", 0, 1000000000));
  return Boolean(env, channel_spin(&end->ring, w.message, w.room, w.pending_bytes, ns) != 0);
}

napi_value Woken(napi_env env, napi_callback_info info) {
  RawArgs<1> args(env, info);
  channel_woken(&OpenEnd(env, args.self)->ring);
  return nullptr;
}

napi_value PeerClosed(napi_env env, napi_callback_info info) {
  RawArgs<1> args(env, info);
  return Boolean(env, channel_peer_closed(&OpenEnd(env, args.self)->ring) != 0);
}

napi_value HasUnread(napi_env env, napi_callback_info info) {
  RawArgs<1> args(env, info);
  return Boolean(env, channel_unread(&OpenEnd(env, args.self)->ring) != 0);
}

// watchPeer(pid) -> a pidfd of the other side's process (this end's, closed by free()) to wait
// on: readable once it has ended. -1 when it has ended already (ESRCH); -2 when pidfd_open is
// refused here (nothing to watch by: the socket's end alone tells).
napi_value WatchPeer(napi_env env, napi_callback_info info) {
  RawArgs<1> args(env, info);
  ChannelEnd* end = OpenEnd(env, args.self);
  int64_t pid = IntegerArg(env, args[0], "pid", 1, INT32_MAX);
  if (end->pidfd) return Napi::Number::New(env, end->pidfd->get());
  int fd = PidfdOpen(env, int(pid));
  if (fd >= 0) end->pidfd.emplace(fd);
  return Napi::Number::New(env, fd);
}

// wake(): one wake-up byte to the other side.
napi_value WakeMethod(napi_env env, napi_callback_info info) {
  RawArgs<1> args(env, info);
  channel_wake(&OpenEnd(env, args.self)->ring);
  return nullptr;
}

// markClosed(): tells the other side (the closed flag, and a byte to wake it). Idempotent.
napi_value MarkClosed(napi_env env, napi_callback_info info) {
  RawArgs<1> args(env, info);
  ChannelEnd* end = UnwrapEnd(env, args.self);
  if (!end->freed) channel_close(&end->ring);
  return nullptr;
}

// free(): unmaps and closes the fds. Idempotent.
napi_value FreeMethod(napi_env env, napi_callback_info info) {
  RawArgs<1> args(env, info);
  FreeEnd(env, UnwrapEnd(env, args.self));
  return nullptr;
}

// passed(): the creator's memfd has been sent; its copy here is closed.
napi_value Passed(napi_env env, napi_callback_info info) {
  RawArgs<1> args(env, info);
  CloseOwned(UnwrapEnd(env, args.self)->memfd);
  return nullptr;
}

napi_value RegionGetter(napi_env env, napi_callback_info info) {
  RawArgs<1> args(env, info);
  napi_value buffer;
  NAPI_THROW_IF_FAILED(env, napi_get_reference_value(env, UnwrapEnd(env, args.self)->buffer, &buffer), nullptr);
  return buffer;
}

// The creator's memfd, to pass to the other side (still this end's).
napi_value Memfd(napi_env env, napi_callback_info info) {
  RawArgs<1> args(env, info);
  return Napi::Number::New(env, OpenEnd(env, args.self)->memfd.get());
}

// This side's copy of the socket: a Ring recv on it is how this side sleeps.
napi_value SocketFd(napi_env env, napi_callback_info info) {
  RawArgs<1> args(env, info);
  return Napi::Number::New(env, OpenEnd(env, args.self)->socket.get());
}

napi_value Capacity(napi_env env, napi_callback_info info) {
  RawArgs<1> args(env, info);
  return Napi::Number::New(env, double(UnwrapEnd(env, args.self)->ring.capacity));
}

napi_value MaxMessage(napi_env env, napi_callback_info info) {
  RawArgs<1> args(env, info);
  return Napi::Number::New(env, double(channel_max_message(UnwrapEnd(env, args.self)->ring.capacity)));
}

napi_value Construct(napi_env env, napi_callback_info info) {
  RawArgs<1> args(env, info);
  return args.self;
}

void Init(Napi::Env env, Napi::Object exports) {
  const napi_property_descriptor members[] = {
      {"send", nullptr, RawCallback<ChannelSend>, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"sendMany", nullptr, RawCallback<ChannelSendMany>, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"take", nullptr, RawCallback<ChannelTake>, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"prepareSleep", nullptr, RawCallback<PrepareSleep>, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"spin", nullptr, RawCallback<Spin>, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"woken", nullptr, RawCallback<Woken>, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"peerClosed", nullptr, RawCallback<PeerClosed>, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"hasUnread", nullptr, RawCallback<HasUnread>, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"markClosed", nullptr, RawCallback<MarkClosed>, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"watchPeer", nullptr, RawCallback<WatchPeer>, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"wake", nullptr, RawCallback<WakeMethod>, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"free", nullptr, RawCallback<FreeMethod>, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"passed", nullptr, RawCallback<Passed>, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"region", nullptr, nullptr, RawCallback<RegionGetter>, nullptr, nullptr, napi_default, nullptr},
      {"memfd", nullptr, nullptr, RawCallback<Memfd>, nullptr, nullptr, napi_default, nullptr},
      {"socket", nullptr, nullptr, RawCallback<SocketFd>, nullptr, nullptr, napi_default, nullptr},
      {"capacity", nullptr, nullptr, RawCallback<Capacity>, nullptr, nullptr, napi_default, nullptr},
      {"maxMessageBytes", nullptr, nullptr, RawCallback<MaxMessage>, nullptr, nullptr, napi_default, nullptr},
  };
  napi_value ctor;
  NAPI_THROW_IF_FAILED_VOID(env, napi_define_class(env, "ChannelEnd", NAPI_AUTO_LENGTH, RawCallback<Construct>, nullptr,
                                                   sizeof members / sizeof members[0], members, &ctor));
  // held for the env's life (Node-API deletes it when the env goes away)
  napi_ref ctor_ref;
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_reference(env, ctor, 1, &ctor_ref));
  napi_value fn;
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_function(env, "channelCreate", NAPI_AUTO_LENGTH, RawCallback<Create>, ctor_ref, &fn));
  exports.Set("channelCreate", Napi::Value(env, fn));
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_function(env, "channelJoin", NAPI_AUTO_LENGTH, RawCallback<Join>, ctor_ref, &fn));
  exports.Set("channelJoin", Napi::Value(env, fn));
}

}  // namespace

IOLAB_FEATURE(channel, Init);

}  // namespace iolab
