#include "socket_address.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include <algorithm>

#include "args.h"
#include "errors.h"

namespace iolab {

static int SocketFamilyOf(napi_env env, int fd, const char* syscall) {
  int family = 0;
  socklen_t len = sizeof(family);
  if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &family, &len) < 0) ThrowErrno(env, errno, syscall);
  return family;
}

// What a socket of this family takes, for "The "address" argument must be ...".
static const char* Expected(int family) {
  switch (family) {
    case AF_UNIX: return "of type string (a socket path) for a unix socket";
    case AF_INET: return "an object { host, port } for an inet socket";
    case AF_INET6: return "an object { host, port } for an inet6 socket";
    default: return "a socket path (string) or an object { host, port }";
  }
}

// A numeric host: a dotted quad, or an IPv6 address with an optional %scope (an interface name
// or index). Names (and inet_aton's shorthands such as 127.1) are not taken.
static bool ParseHost(const std::string& host, int port, SocketAddress* a) {
  if (host.find('\0') != std::string::npos) return false;
  memset(&a->storage, 0, sizeof(a->storage));
  auto* in4 = reinterpret_cast<sockaddr_in*>(&a->storage);
  if (inet_pton(AF_INET, host.c_str(), &in4->sin_addr) == 1) {
    in4->sin_family = AF_INET;
    in4->sin_port = htons(uint16_t(port));
    a->length = sizeof(*in4);
    return true;
  }
  auto* in6 = reinterpret_cast<sockaddr_in6*>(&a->storage);
  size_t percent = host.find('%');
  if (inet_pton(AF_INET6, host.substr(0, percent).c_str(), &in6->sin6_addr) != 1) return false;
  if (percent != std::string::npos) {
    std::string scope = host.substr(percent + 1);
    unsigned index = scope.empty() ? 0 : if_nametoindex(scope.c_str());
    if (index == 0 && !scope.empty() && scope.find_first_not_of("0123456789") == std::string::npos && scope.size() < 10) {
      index = unsigned(strtoul(scope.c_str(), nullptr, 10));
    }
    if (index == 0) return false;
    in6->sin6_scope_id = index;
  }
  in6->sin6_family = AF_INET6;
  in6->sin6_port = htons(uint16_t(port));
  a->length = sizeof(*in6);
  return true;
}

// Errors that name an address: `path` is the address as given, the message shows it readably.
[[noreturn]] static void ThrowAddressErrno(Napi::Env env, int err, const char* syscall, const UnixAddress& a) {
  Napi::Error error = ErrnoError(env, err, syscall, a.display.c_str());
  error.Value().Set("path", Napi::String::New(env, a.text));
  throw error;
}

UnixAddress AddressArg(Napi::Env env, Napi::Value value, const char* syscall, const char* name) {
  UnixAddress a;
  a.text = StringArg(env, value, name);
  bool abstract = !a.text.empty() && a.text[0] == '\0';
  a.display = abstract ? "@" + a.text.substr(1) : a.text;
  if (a.text.empty() || (!abstract && a.text.find('\0') != std::string::npos)) {
    ThrowArgValue(env, name, "must be a non-empty path without null bytes, or an abstract name starting with '\\0'", value);
  }
  a.addr.sun_family = AF_UNIX;
  // sun_path is 108 bytes: a path needs its terminating NUL (107 usable bytes); an abstract
  // name uses all 108 (its leading NUL included) and is not terminated.
  size_t limit = abstract ? sizeof(a.addr.sun_path) : kMaxSocketPathBytes;
  if (a.text.size() > limit) ThrowAddressErrno(env, ENAMETOOLONG, syscall, a);
  memcpy(a.addr.sun_path, a.text.data(), a.text.size());
  a.length = socklen_t(offsetof(sockaddr_un, sun_path) + a.text.size() + (abstract ? 0 : 1));
  return a;
}

SocketAddress SocketAddressArg(napi_env env, napi_value value, int fd, AddressUse use, const char* syscall,
                               const char* name) {
  napi_valuetype type = napi_undefined;
  napi_typeof(env, value, &type);
  int family = use == AddressUse::kSendTo ? AF_UNSPEC : SocketFamilyOf(env, fd, syscall);
  SocketAddress a;
  if (type == napi_string && (family == AF_UNSPEC || family == AF_UNIX)) {
    UnixAddress u = AddressArg(Napi::Env(env), Napi::Value(env, value), syscall, name);
    memcpy(&a.storage, &u.addr, sizeof(u.addr));
    a.length = u.length;
    a.path = std::move(u.text);
    a.display = std::move(u.display);
    return a;
  }
  if (type != napi_object || family == AF_UNIX) ThrowArgType(env, name, Expected(family), value);

  OptionsArg object(env, value, name);
  std::string port_name = object.Name("port"), host_name = object.Name("host");
  napi_value port_value = object.Get("port");
  a.port = use == AddressUse::kBind && Napi::Value(env, port_value).IsUndefined()
               ? 0
               : int(IntegerArg(env, port_value, port_name.c_str(), 0, 65535));
  napi_value host_value = object.Get("host");
  if (Napi::Value(env, host_value).IsUndefined()) {
    if (family == AF_UNSPEC) family = SocketFamilyOf(env, fd, syscall);
    if (family != AF_INET && family != AF_INET6) ThrowArgType(env, name, Expected(family), value);
    bool six = family == AF_INET6;
    a.host = use == AddressUse::kBind ? (six ? "::" : "0.0.0.0") : (six ? "::1" : "127.0.0.1");
    host_value = Napi::String::New(env, a.host);
  } else {
    a.host = StringArg(env, host_value, host_name.c_str());
  }
  if (!ParseHost(a.host, a.port, &a)) {
    ThrowArgValue(env, host_name, "must be a numeric IPv4 or IPv6 address (look a name up with dns.lookup first)",
                  host_value);
  }
  if (family == AF_INET && a.family() != AF_INET) {
    ThrowArgValue(env, host_name, "must be an IPv4 address for an inet socket", host_value);
  }
  if (family == AF_INET6 && a.family() != AF_INET6) {
    ThrowArgValue(env, host_name, "must be an IPv6 address for an inet6 socket (an IPv4 one as ::ffff:a.b.c.d)",
                  host_value);
  }
  a.display = a.family() == AF_INET6 ? "[" + a.host + "]:" + std::to_string(a.port) : a.host + ":" + std::to_string(a.port);
  return a;
}

void ThrowSocketAddressErrno(napi_env env, int err, const char* syscall, const SocketAddress& a) {
  Napi::Env e(env);
  if (a.family() == AF_UNIX) {
    Napi::Error error = ErrnoError(e, err, syscall, a.display.c_str());
    error.Value().Set("path", Napi::String::New(e, a.path));
    throw error;
  }
  Napi::Error error = ErrnoErrorNaming(e, err, syscall, a.display);
  error.Value().Set("address", Napi::String::New(e, a.host));
  error.Value().Set("port", Napi::Number::New(e, a.port));
  throw error;
}

napi_value SocketAddressValue(napi_env env, const sockaddr_storage& addr, socklen_t length, bool unnamed_is_null) {
  napi_value out = nullptr;
  if (length < socklen_t(sizeof(sa_family_t))) return out;
  if (addr.ss_family == AF_UNIX) {
    const auto* un = reinterpret_cast<const sockaddr_un*>(&addr);
    size_t base = offsetof(sockaddr_un, sun_path);
    size_t n = length > base ? std::min(size_t(length) - base, sizeof(un->sun_path)) : 0;
    if (n == 0 && unnamed_is_null) return out;
    // an abstract name keeps its leading '\0' and every byte the kernel gave; a path ends at its NUL
    size_t size = n > 0 && un->sun_path[0] == '\0' ? n : strnlen(un->sun_path, n);
    napi_create_string_utf8(env, un->sun_path, size, &out);
    return out;
  }
  if (addr.ss_family != AF_INET && addr.ss_family != AF_INET6) return out;
  char text[INET6_ADDRSTRLEN + IF_NAMESIZE + 1] = "";
  int port;
  const char* family;
  if (addr.ss_family == AF_INET) {
    const auto* in4 = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &in4->sin_addr, text, sizeof(text));
    port = ntohs(in4->sin_port);
    family = "IPv4";
  } else {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
    if (in6->sin6_scope_id != 0) {
      char scope[IF_NAMESIZE];
      size_t used = strlen(text);
      if (if_indextoname(in6->sin6_scope_id, scope) != nullptr) snprintf(text + used, sizeof(text) - used, "%%%s", scope);
      else snprintf(text + used, sizeof(text) - used, "%%%u", in6->sin6_scope_id);
    }
    port = ntohs(in6->sin6_port);
    family = "IPv6";
  }
  napi_value v;
  napi_create_object(env, &out);
  napi_create_string_utf8(env, text, NAPI_AUTO_LENGTH, &v);
  napi_set_named_property(env, out, "address", v);
  napi_create_string_utf8(env, family, NAPI_AUTO_LENGTH, &v);
  napi_set_named_property(env, out, "family", v);
  napi_create_int32(env, port, &v);
  napi_set_named_property(env, out, "port", v);
  return out;
}

}  // namespace iolab
