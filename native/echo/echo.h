/* The echo subsystem in plain C (no Node headers): an io_uring server, an epoll server, a
 * load generator that speaks rust_echo_bench's protocol (one message, wait for the whole
 * echo, next), and a thread-per-connection client to compare the generator with.
 * Every function returns 0 or a negative errno and names the failing syscall in *syscall. */
#pragma once
#include <stdint.h>
#include <sys/socket.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- shared socket helpers (echo_net.c) ---- */

/* socket + SO_REUSEADDR + bind + listen, close-on-exec. addr: numeric IPv4/IPv6 literal.
 * Returns the fd (>= 0) or -errno; *bound_port gets the port actually bound (port 0). */
int echo_listen_tcp(const char *ip, int port, int backlog, int nonblocking, int *bound_port,
                    const char **syscall);
/* Fills a sockaddr from a numeric IPv4/IPv6 literal and a port. 0 or -EINVAL. */
int echo_make_addr(const char *ip, int port, struct sockaddr_storage *ss, socklen_t *len);
int echo_set_nodelay(int fd);
/* Every connection a server accepts goes through these two, which fire the USDT probes
 * iolab:echo_accept(fd) and iolab:echo_close(fd) (<sys/sdt.h>; a nop until a tracer attaches). */
void echo_accepted(int fd);
void echo_close_conn(int fd);
/* The uring server's direct descriptors: iolab:echo_close(slot) only (the ring closes it). */
void echo_closed_direct(int slot);
/* Soft RLIMIT_NOFILE. */
uint64_t echo_open_file_limit(uint64_t *hard);
/* Raises the soft RLIMIT_NOFILE to the hard one (children started later inherit it); the soft
 * limit now, as echo_open_file_limit. */
uint64_t echo_raise_open_file_limit(uint64_t *hard);
/* How long a server stops accepting after an accept failed (EMFILE and the like would fail
 * again at once): 10 ms, doubling while it keeps failing, at most 250 ms. prev: the last pause
 * (0 after a success). */
uint64_t echo_next_accept_pause_ns(uint64_t prev_ns);
/* How often a server looks for idle connections: a quarter of the timeout, 10 ms..1 s. */
uint64_t echo_idle_tick_ns(uint64_t idle_timeout_ns);

/* ---- servers ---- */

struct echo_server_config {
  int listen_fd;       /* bound and listening; the server closes nothing it did not open */
  int stop_fd;         /* eventfd: readable -> the loop stops, closes every connection */
  uint32_t max_conns;  /* accepted beyond this are closed at once (0: no limit) */
  uint32_t buffers;    /* uring: provided buffers, a power of two <= 32768 (0: 4096) */
  uint64_t idle_timeout_ns; /* close a connection that moved no byte for this long (0: never) */
  uint32_t uring_off;  /* uring: 1 << ECHO_URING_* features not to try, as if the kernel refused
                          them (tests and A/B runs: IOLAB_ECHO_URING_OFF) */
};

/* The kernel features the uring server probes at start, each with a fallback. */
enum echo_uring_feature {
  ECHO_URING_NO_SQARRAY,  /* IORING_SETUP_NO_SQARRAY (6.6): no SQ index array */
  ECHO_URING_RING_FD,     /* io_uring_register_ring_fd (5.18): enter without an fd lookup */
  ECHO_URING_DIRECT,      /* accepted sockets as direct descriptors (5.19): no fd table */
  ECHO_URING_BUNDLE,      /* IORING_RECVSEND_BUNDLE recvs (6.10) */
  ECHO_URING_PBUF_INC,    /* IOU_PBUF_RING_INC buffer ring (6.12) */
  ECHO_URING_NFEATURES
};
enum echo_feature_state {
  ECHO_FEATURE_ACCEPTED = 1,
  ECHO_FEATURE_REFUSED,  /* the kernel refused it: err */
  ECHO_FEATURE_OFF,      /* config.uring_off */
  ECHO_FEATURE_UNUSED,   /* the kernel has it, the server does not use it (see docs/echo.md) */
};
struct echo_feature {
  int state; /* enum echo_feature_state; 0: not tried (a failure came first) */
  int err;   /* REFUSED: the errno */
};
/* "noSqArray", "registeredRingFd", ... (the --json names), or NULL past the last. */
const char *echo_uring_feature_name(unsigned feature);

struct echo_server_stats {
  uint64_t connections; /* served (accepted and kept) */
  uint64_t refused;     /* accepted and closed at once because of max_conns */
  uint64_t bytes;       /* echoed (sent back) */
  uint64_t peak_conns;
  uint64_t recv_pauses;   /* uring: recvs cancelled because too much waited to be sent on a connection */
  uint64_t buffer_waits;  /* uring: recvs that ended with ENOBUFS (buffer ring ran dry) */
  uint64_t idle_closed;   /* closed by idle_timeout_ns */
  uint64_t accept_pauses; /* accept failures (EMFILE and the like) that paused accepting */
  const char *syscall;  /* on failure: what failed */
  char setup[160];      /* how the engine was set up (io_uring flags and features accepted) */
  struct echo_feature features[ECHO_URING_NFEATURES]; /* uring */
};

int echo_uring_serve(const struct echo_server_config *cfg, struct echo_server_stats *st);
int echo_epoll_serve(const struct echo_server_config *cfg, struct echo_server_stats *st);

/* ---- load generators ---- */

enum echo_load_mode { ECHO_LOAD_EPOLL = 0, ECHO_LOAD_THREADS = 1, ECHO_LOAD_URING = 2 };

struct echo_load_config {
  struct sockaddr_storage addr;
  socklen_t addr_len;
  uint32_t clients;
  uint32_t length;        /* bytes per message */
  uint64_t duration_ns;   /* send new messages for this long after all clients connected */
  uint64_t grace_ns;      /* then wait this long for echoes still in flight */
  uint32_t threads;       /* epoll/io_uring mode: worker threads (>= 1) */
  int mode;
  const int *stop;        /* or NULL: becomes non-zero -> stop early (as if the time was up) */
  int cpu_pid;            /* or 0: the server process whose CPU time the window is to report */
};

struct echo_load_result {
  uint64_t requests, responses, bytes;
  uint64_t connected;
  uint64_t connect_errors, resets, short_echoes, mismatches, timeouts;
  int connect_errno;                 /* why the first connect failed (0: none did) */
  int stopped_early;                 /* config.stop ended the window before the duration */
  uint64_t elapsed_ns;               /* measured: from every client connected until the last
                                        thread stopped sending and had its last echo */
  uint64_t cpu_ns;                   /* CPU time the client threads used in the window */
  int64_t server_cpu_ns;             /* config.cpu_pid's CPU time in the window; -1: not read */
  uint64_t p50_ns, p99_ns, p999_ns, max_ns;
  const char *syscall;
};

int echo_load_run(const struct echo_load_config *cfg, struct echo_load_result *res);

uint64_t echo_now_ns(void);
uint64_t echo_thread_cpu_ns(void);

#ifdef __cplusplus
}
#endif
