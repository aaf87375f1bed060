/* bench api's ping-pong group, the plain-C part: the echo its peer child runs on a thread for
 * every socket row, and the floor row, one message in flight to that echo as a C loop with no
 * JS in it. */
#ifndef IOLAB_IPC_PINGPONG_H
#define IOLAB_IPC_PINGPONG_H
#include <stdint.h>

#include "stats/histogram.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes back every byte read from the stream socket fd until the other end closes it
 * (returns 0) or a call fails (a positive errno, the call's name in *syscall). */
int pingpong_echo(int fd, const char **syscall);

/* Round trips of `bytes` over fd to an echo: write the message, read until all of it is back,
 * one in flight. `round_trips` of them, or (0) as many as start within duration_ns. Each round
 * trip's time goes into *h; each echo is compared with what was sent after its time is taken
 * (EBADMSG, "pingpong check", when it differs). 0 or a positive errno with *syscall. */
int pingpong_loop(int fd, uint64_t bytes, uint64_t round_trips, uint64_t duration_ns, struct histogram *h,
                  uint64_t *done, uint64_t *elapsed_ns, const char **syscall);

#ifdef __cplusplus
}
#endif
#endif
