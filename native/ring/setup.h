// io_uring setup for the Ring: the most capable flag set the kernel accepts, and the one
// sentence that says io_uring is refused here and why.
#pragma once
#include <liburing.h>
#include <napi.h>

namespace iolab {

// The kernel's IORING_MAX_ENTRIES: the most SQ entries a ring may ask for (the CQ: twice that).
constexpr unsigned kMaxRingEntries = 32768;

// Sets up *ring and returns the setup flags the kernel accepted: the first of
// SINGLE_ISSUER|COOP_TASKRUN|TASKRUN_FLAG, COOP_TASKRUN(+TASKRUN_FLAG), none (SUBMIT_ALL where
// the kernel has it). Never DEFER_TASKRUN: the ring is polled by the event loop (setup.cc). Throws ERR_IOURING_UNAVAILABLE when io_uring is refused (EPERM,
// ENOSYS, EACCES), an errno error otherwise.
unsigned SetupRing(napi_env env, struct io_uring* ring, unsigned entries, unsigned cq_entries, bool sqpoll);

// The ERR_IOURING_UNAVAILABLE error for an errno from io_uring_setup/io_uring_register.
Napi::Error UnavailableError(napi_env env, int err);

}  // namespace iolab
