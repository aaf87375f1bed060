// Socket addresses of every family the sync calls take, as JS writes and reads them: a Unix path
// or abstract name (a string; AddressArg below checks it) or an IP address
// { host, port } with a numeric IPv4/IPv6 host (names go through dns.lookup first, in JS, as
// node:net does); and back from the kernel: a path, or { address, family, port } as node:net's
// address() gives it. An error that names an address carries it as fs's errors do (`path`) for
// a Unix socket and as net's do (`address`, `port`) for an IP one.
#pragma once
#include <napi.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <string>

namespace iolab {

// Bytes of a socket path: sun_path (108 bytes) keeps its terminating NUL. An abstract name
// (leading '\0') may use all 108.
constexpr size_t kMaxSocketPathBytes = sizeof(sockaddr_un::sun_path) - 1;

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

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
  std::string path;     // AF_UNIX: as given (may start with '\0')
  std::string host;     // AF_INET, AF_INET6: the numeric host
  int port = 0;         // AF_INET, AF_INET6
  std::string display;  // for messages: /path, @abstract, 127.0.0.1:80, [::1]:80
  int family() const { return storage.ss_family; }
  sockaddr* addr() { return reinterpret_cast<sockaddr*>(&storage); }
};

// What the address is for, which decides the defaults of an IP address: bind's host is the
// family's wildcard and its port 0 (any); connect's and sendmsg's host is the family's
// loopback (as node:net's) and the port must be given. bind and connect check the address
// against the socket's family (SO_DOMAIN) and say what the socket takes; sendmsg reads the
// family only when the host is left out (it is the hot path of a UDP loop).
enum class AddressUse { kBind, kConnect, kSendTo };

// The address `value` (named `name` in errors) for socket fd.
SocketAddress SocketAddressArg(napi_env env, napi_value value, int fd, AddressUse use, const char* syscall,
                               const char* name = "address");

// The errno error of a call on address a: `path` for a Unix address, `address` and `port` for
// an IP one.
[[noreturn]] void ThrowSocketAddressErrno(napi_env env, int err, const char* syscall, const SocketAddress& a);

// A kernel's address as JS reads it: a Unix path ('\0'-prefixed when abstract; '' when the
// socket has no name), or { address, family: 'IPv4' | 'IPv6', port } (a link-local IPv6
// address with its %scope, as node:net shows it). nullptr for an unnamed Unix address when
// unnamed_is_null, and for a family this does not know.
napi_value SocketAddressValue(napi_env env, const sockaddr_storage& addr, socklen_t length, bool unnamed_is_null);

}  // namespace iolab
