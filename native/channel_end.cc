// A channel end's lifetime (channel_end.h): the region's references, unwrapping, freeing.
#include "channel_end.h"

#include <sys/mman.h>

#include <utility>

#include "errors.h"

namespace iolab {

void UnmapRegion(ChannelRegion* r) {
  if (!r->mapped) return;
  r->mapped = false;
  munmap(r->addr, r->bytes);
  LiveDec(Live::kMappings);
}

void UnrefRegion(ChannelRegion* r) {
  if (--r->refs == 0) delete r;
}

void FinalizeRegionBuffer(napi_env, void*, void* hint) {
  ChannelRegion* r = static_cast<ChannelRegion*>(hint);
  UnmapRegion(r);
  UnrefRegion(r);
}

void CloseOwned(OwnedFd& fd) { OwnedFd gone(std::move(fd)); }

void ThrowChannelClosed(napi_env env) { ThrowError(Napi::Env(env), "ERR_CHANNEL_CLOSED", "the channel is closed"); }

ChannelEnd* UnwrapEnd(napi_env env, napi_value self) {
  void* data = nullptr;
  if (napi_unwrap(env, self, &data) != napi_ok || data == nullptr) ThrowTypeError(env, "ERR_INVALID_THIS", "not a channel end");
  return static_cast<ChannelEnd*>(data);
}

ChannelEnd* OpenEnd(napi_env env, napi_value self) {
  ChannelEnd* end = UnwrapEnd(env, self);
  if (end->freed) ThrowChannelClosed(env);
  return end;
}

void FreeEnd(napi_env env, ChannelEnd* end) {
  if (end->freed) return;
  end->freed = true;
  napi_value buffer;
  if (env != nullptr && napi_get_reference_value(env, end->buffer, &buffer) == napi_ok && buffer != nullptr)
    napi_detach_arraybuffer(env, buffer);
  UnmapRegion(end->region);
  CloseOwned(end->memfd);
  CloseOwned(end->socket);
  end->pidfd.reset();
  if (end->claimed) Unclaim(end->claim);
  end->claimed = false;
}

void FinalizeEnd(napi_env env, void* data, void*) {
  ChannelEnd* end = static_cast<ChannelEnd*>(data);
  if (!end->freed) {
    // The pages stay mapped for views that may still exist; their ArrayBuffer unmaps them.
    end->freed = true;
    CloseOwned(end->memfd);
    CloseOwned(end->socket);
    end->pidfd.reset();
  }
  napi_delete_reference(env, end->buffer);
  UnrefRegion(end->region);
  delete end;
}

}  // namespace iolab
