// One side of a shared-memory channel as the addon holds it (channel_end.cc): the mapped region,
// shared with the ArrayBuffer JS sees it through, the fds, and the queues' indexes
// (native/channel/). channel_binding.cc makes ends and defines their class; channel_messages.cc
// moves messages through them.
//
// An end owns its fds (counted in liveObjects().ownedFds) and its mapping (mappings). The
// mapping is also JS's ArrayBuffer, over which zeroCopy views are made: free() detaches it
// before unmapping, so a view kept past close() is empty, never a fault. The end holds the
// ArrayBuffer strongly, so an end collected without close() leaves the unmapping to the
// ArrayBuffer's own finalizer, once no view is left.
#pragma once
#include <node_api.h>
#include <stddef.h>
#include <stdint.h>

#include <optional>
#include <vector>

#include "channel_claims.h"
#include "live_objects.h"

extern "C" {
#include "channel/channel.h"
}

namespace iolab {

// The mapping, shared by the end and its ArrayBuffer: unmapped once by whichever lets go
// first with a reason (close(), or the ArrayBuffer's finalizer), freed when both have let go.
// Both run on the end's JS thread.
struct ChannelRegion {
  void* addr;
  size_t bytes;
  bool mapped = true;
  int refs = 2;
};

void UnmapRegion(ChannelRegion* r);
void UnrefRegion(ChannelRegion* r);
// The region's ArrayBuffer's finalizer (hint: the region).
void FinalizeRegionBuffer(napi_env env, void* data, void* hint);

struct ChannelEnd {
  ChannelEnd(OwnedFd memfd_, OwnedFd socket_) : memfd(std::move(memfd_)), socket(std::move(socket_)) {}
  ~ChannelEnd() {
    if (claimed) Unclaim(claim);
  }
  channel_end ring{};
  SocketKey claim;  // this side's socket, claimed by channelClaim (channel_claims.h)
  bool claimed = false;
  ChannelRegion* region = nullptr;
  napi_ref buffer = nullptr;  // the region's ArrayBuffer, held strongly
  OwnedFd memfd;              // the creator's, until it has been passed
  OwnedFd socket;             // this side's copy of the socket: wakes go out on it and come in
  std::optional<OwnedFd> pidfd;  // the other side's process, once known (watchPeer)
  bool freed = false;
  std::vector<channel_message> taken;  // take()'s scratch: what channel_take handed out
  std::vector<struct iovec> gathered;  // sendMany()'s scratch: the iovecs of its messages
};

// Closes an fd the end owns (OwnedFd has no assignment: a move out of it closes it here).
void CloseOwned(OwnedFd& fd);
[[noreturn]] void ThrowChannelClosed(napi_env env);
// The end wrapped by self (TypeError ERR_INVALID_THIS for anything else).
ChannelEnd* UnwrapEnd(napi_env env, napi_value self);
// The same, ERR_CHANNEL_CLOSED once freed.
ChannelEnd* OpenEnd(napi_env env, napi_value self);
// Unmaps (the ArrayBuffer detached first: from then on JS cannot reach the pages) and closes
// the fds. Does not mark the channel closed: an end collected or torn down without close() is
// one whose other side should hear that it is gone, not that it closed. env null: nothing to
// detach (the ArrayBuffer was never made).
void FreeEnd(napi_env env, ChannelEnd* end);
// napi_wrap's finalizer of an end object.
void FinalizeEnd(napi_env env, void* data, void* hint);

inline napi_value Boolean(napi_env env, bool value) {
  napi_value result;
  napi_get_boolean(env, value, &result);
  return result;
}

// The end's methods that move messages (channel_messages.cc).
napi_value ChannelSend(napi_env env, napi_callback_info info);
napi_value ChannelSendMany(napi_env env, napi_callback_info info);
napi_value ChannelTake(napi_env env, napi_callback_info info);

}  // namespace iolab
