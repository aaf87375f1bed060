// The sockets that carry a channel in this process (any thread's), by inode: a second create or
// join on one would eat the first channel's wake-up bytes, and its messages would stall. JS
// claims a socket before setup reads it (channelClaim: ERR_CHANNEL_BUSY when it is taken); the
// end made over it takes the claim over and lets it go when freed (channel_binding.cc).
#pragma once
#include <node_api.h>
#include <stdint.h>

#include <utility>

namespace iolab {

using SocketKey = std::pair<uint64_t, uint64_t>;  // st_dev, st_ino

// Throws the fstat's error.
SocketKey SocketKeyOf(napi_env env, int fd);
void Unclaim(SocketKey key);

// A pidfd of pid (close-on-exec, the caller's); -1 when it has ended (ESRCH); -2 when this
// kernel or its seccomp profile refuses pidfd_open (ENOSYS, EPERM, EACCES): nothing to watch by.
// Throws any other error.
int PidfdOpen(napi_env env, int pid);

}  // namespace iolab
