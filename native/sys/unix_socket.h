// The socket types and families as JS names them, shared by the sync calls (unix_socket.cc)
// and the Ring's socket (native/ring/js.cc).
#pragma once
#include "args.h"

namespace iolab {

// 'stream', 'dgram', 'seqpacket' -> SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET.
extern const Choice kSocketTypes[];
// 'unix', 'inet', 'inet6' -> AF_UNIX, AF_INET, AF_INET6.
extern const Choice kSocketFamilies[];

}  // namespace iolab
