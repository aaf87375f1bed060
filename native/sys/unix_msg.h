// Unix-domain messages, one layer for the sync sendmsg/recvmsg (unix_socket.cc) and the Ring's
// (native/ring/js.cc, op.cc): control messages built (SCM_RIGHTS, SCM_CREDENTIALS) and parsed
// (fds taken close-on-exec, MSG_CTRUNC and fds beyond maxFds closed), the rule that a stream
// needs one payload byte to carry them, and the eof rule.
#pragma once
#include <napi.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <string>

namespace iolab {

// The kernel's SCM_MAX_FD: at most this many fds in one SCM_RIGHTS message.
constexpr int kMaxFdsPerMessage = 253;

// ---- sending ----

// Bytes of control space for nfds fds (one SCM_RIGHTS) and, with credentials, one
// SCM_CREDENTIALS (this process's pid, uid, gid).
size_t SendControlSpace(size_t nfds, bool credentials);
// Fills `control` (SendControlSpace bytes) and points msg at it; nothing when there is neither.
void BuildSendControl(struct msghdr* msg, char* control, const int* fds, size_t nfds, bool credentials);
// A stream socket carries ancillary data only with at least one byte of payload (the kernel
// would drop the fds of an empty send without a word): TypeError ERR_INVALID_ARG_VALUE. SO_TYPE
// is read (now) only when the send is empty and carries something.
void CheckCarriesControl(napi_env env, int fd, size_t payload, size_t nfds, bool credentials);

// SO_TYPE of fd (SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET), or -1 with errno set.
int SocketTypeOf(int fd);

// ---- receiving ----

// Control space for room_fds fds plus one SCM_CREDENTIALS. By default (room for SCM_MAX_FD)
// fds beyond maxFds are seen and closed here instead of being cut by the kernel (MSG_CTRUNC).
size_t RecvControlSpace(int room_fds);
constexpr size_t kMaxRecvControl = CMSG_SPACE(kMaxFdsPerMessage * sizeof(int)) + CMSG_SPACE(sizeof(struct ucred));

// What one recvmsg brought, parsed from its msghdr. The fds are owned here (counted, closed by
// the destructor) until ToValue hands them to JS.
class Received {
 public:
  // msg as recvmsg left it, `bytes` what it returned. Every SCM_RIGHTS fd is taken; more than
  // max_fds, or MSG_CTRUNC, closes them all (fdsTruncated).
  Received(const struct msghdr* msg, size_t bytes, int max_fds);
  ~Received();
  Received(const Received&) = delete;
  Received& operator=(const Received&) = delete;

  // The eof rule needs the socket's type only for 0 bytes with nothing attached.
  bool maybe_eof() const { return bytes_ == 0 && nfds_ == 0 && !fds_truncated_; }
  // Applies the eof rule: 0 bytes and no fds is eof on a stream socket; on a seqpacket socket
  // only once the peer has shut down (poll_fd is polled for POLLRDHUP: a zero-length message
  // from a live peer is not eof); never on a datagram socket.
  void ApplyEof(int socket_type, int poll_fd);
  // { bytesRead, fds, truncated, dataTruncated, fdsTruncated, credentials?, from?, eof }; the fds
  // belong to JS from here on. `from`: the sender's address of a datagram, a Unix path or an IP
  // { address, family, port } (socket_address.h).
  napi_value ToValue(napi_env env);
  // The same into `out` (at least kScratchLength doubles: bytes, flags, fd count, the fds) for
  // src/native.ts to make the object from; returns { credentials?, from? } when the message
  // had either, else undefined. flags: 1 dataTruncated, 2 fdsTruncated, 4 eof.
  napi_value ToScratch(napi_env env, double* out);
  static constexpr size_t kScratchLength = 3 + kMaxFdsPerMessage;

 private:
  static constexpr size_t kMaxFds = kMaxRecvControl / sizeof(int);
  int Flags() const;
  napi_value Credentials(napi_env env) const;
  size_t bytes_;
  int fds_[kMaxFds];
  size_t nfds_ = 0;
  bool data_truncated_ = false;
  bool fds_truncated_ = false;
  bool have_credentials_ = false;
  struct ucred cred_ {};
  struct sockaddr_storage from_ {};
  socklen_t from_length_ = 0;
  bool eof_ = false;
};

}  // namespace iolab
