/* Socket helpers shared by the echo servers and the load generators. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/sdt.h>
#include <time.h>
#include <unistd.h>

#include "echo.h"

int echo_make_addr(const char *ip, int port, struct sockaddr_storage *ss, socklen_t *len) {
  memset(ss, 0, sizeof(*ss));
  struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
  struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
  if (inet_pton(AF_INET, ip, &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons((uint16_t)port);
    *len = sizeof(*v4);
    return 0;
  }
  if (inet_pton(AF_INET6, ip, &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons((uint16_t)port);
    *len = sizeof(*v6);
    return 0;
  }
  return -EINVAL;
}

int echo_listen_tcp(const char *ip, int port, int backlog, int nonblocking, int *bound_port,
                    const char **syscall) {
  struct sockaddr_storage ss;
  socklen_t len;
  if (echo_make_addr(ip, port, &ss, &len) < 0) {
    *syscall = "inet_pton";
    return -EINVAL;
  }
  int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0), 0);
  if (fd < 0) {
    *syscall = "socket";
    return -errno;
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  /* Every engine's accepted sockets inherit it: no setsockopt per connection (and a direct
   * descriptor has no fd to call it on). */
  int err = echo_set_nodelay(fd);
  if (err < 0) {
    close(fd);
    *syscall = "setsockopt";
    return err;
  }
  if (bind(fd, (struct sockaddr *)&ss, len) < 0) {
    int err = errno;
    close(fd);
    *syscall = "bind";
    return -err;
  }
  if (listen(fd, backlog) < 0) {
    int err = errno;
    close(fd);
    *syscall = "listen";
    return -err;
  }
  len = sizeof(ss);
  getsockname(fd, (struct sockaddr *)&ss, &len);
  *bound_port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                              : ((struct sockaddr_in6 *)&ss)->sin6_port);
  return fd;
}

int echo_set_nodelay(int fd) {
  int one = 1;
  return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0 ? -errno : 0;
}

void echo_accepted(int fd) {
  DTRACE_PROBE1(iolab, echo_accept, fd);
}

/* noinline: one probe site for both callers (the USDT test counts the ELF notes). */
__attribute__((noinline)) void echo_closed_direct(int slot) {
  DTRACE_PROBE1(iolab, echo_close, slot);
}

void echo_close_conn(int fd) {
  echo_closed_direct(fd);
  close(fd);
}

uint64_t echo_open_file_limit(uint64_t *hard) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) < 0) return 0;
  if (hard) *hard = rl.rlim_max;
  return rl.rlim_cur;
}

uint64_t echo_raise_open_file_limit(uint64_t *hard) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    /* an unlimited hard limit is still capped by fs.nr_open (1048576 unless changed); a refusal
     * leaves the soft limit as it was, and the caller reads what it is */
    if (setrlimit(RLIMIT_NOFILE, &rl) < 0 && rl.rlim_max == RLIM_INFINITY) {
      rl.rlim_cur = 1048576;
      setrlimit(RLIMIT_NOFILE, &rl);
    }
  }
  return echo_open_file_limit(hard);
}

uint64_t echo_next_accept_pause_ns(uint64_t prev_ns) {
  if (prev_ns < 10000000u) return 10000000u;
  return prev_ns >= 125000000u ? 250000000u : prev_ns * 2;
}

uint64_t echo_idle_tick_ns(uint64_t idle_timeout_ns) {
  uint64_t tick = idle_timeout_ns / 4;
  if (tick < 10000000u) return 10000000u;
  return tick > 1000000000u ? 1000000000u : tick;
}

uint64_t echo_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t echo_thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
