// Unix-domain socket addresses as JS writes them, shared by the sync calls (unix_socket.cc)
// and the Ring's connect (native/ring/js.cc).
#pragma once
#include <napi.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <string>

#include "args.h"

namespace iolab {

// Bytes of a socket path: sun_path (108 bytes) keeps its terminating NUL. An abstract name
// (leading '\0') may use all 108.
constexpr size_t kMaxSocketPathBytes = sizeof(sockaddr_un::sun_path) - 1;

// 'stream', 'dgram', 'seqpacket' -> SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET.
extern const Choice kSocketTypes[];
// 'unix', 'inet', 'inet6' -> AF_UNIX, AF_INET, AF_INET6.
extern const Choice kSocketFamilies[];

// A socket address as JS writes it: a filesystem path, or an abstract name with a leading '\0'.
struct UnixAddress {
  sockaddr_un addr{};
  socklen_t length = 0;
  std::string text;     // exactly as given (may start with '\0')
  std::string display;  // for messages: abstract names shown with a leading '@'
};

// A path (at most 107 bytes: sun_path keeps its NUL) or an abstract name written with a
// leading '\0' (at most 108 bytes); TypeError for anything else, ENAMETOOLONG (with `path`)
// when it does not fit.
UnixAddress AddressArg(Napi::Env env, Napi::Value value, const char* syscall, const char* name = "address");

}  // namespace iolab
