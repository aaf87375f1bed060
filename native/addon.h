// Per-environment state: one `Addon` per napi_env (the main thread and each worker that loads
// the addon), kept in the env's instance data and freed by its finalizer when the env goes away.
// Nothing here is process-wide, so no map and no mutex.
#pragma once
#include <napi.h>

#include <vector>

namespace iolab {

class RingCore;

// Property names the addon sets or reads on every op, made once per env (creating and
// internalizing a key string per result object was a measurable cost).
enum class Key : int {
  kBytesRead, kFds, kTruncated, kDataTruncated, kFdsTruncated, kEof, kCredentials, kFrom,
  kMaxFds, kControlFds, kPid, kUid, kGid, kTo, kBuffers,
  kCount
};

struct Addon {
  napi_ref ring_closed_error = nullptr;  // the class src/ring/ring.ts registers (or none yet)
  napi_ref keys = nullptr;               // an Array of the Key strings (a ref cannot hold a string)
  napi_ref recv_result_class = nullptr;  // the class src/native.ts registers for recvmsg results
  // This thread's Rings that are not torn down: JS that one of them runs in its prepare callback
  // may queue ops on another whose callback ran already this turn (native/ring/core.cc).
  std::vector<RingCore*> rings;

};

// This env's Addon (made by the module's init).
Addon& AddonOf(napi_env env);

// The key strings of this env, each fetched when a call asks for it (one napi_get_element).
class Keys {
 public:
  explicit Keys(napi_env env);
  napi_value operator[](Key key) const;

 private:
  napi_env env_;
  napi_value array_ = nullptr;
};

}  // namespace iolab
