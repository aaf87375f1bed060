#include "setup.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <string>

#include "errors.h"

namespace iolab {

static int ReadIoUringDisabled() {
  FILE* f = fopen("/proc/sys/kernel/io_uring_disabled", "re");
  if (f == nullptr) return -1;
  int value = -1;
  if (fscanf(f, "%d", &value) != 1) value = -1;
  fclose(f);
  return value;
}

Napi::Error UnavailableError(napi_env env, int err) {
  std::string name = ErrnoName(err);
  int disabled = ReadIoUringDisabled();
  std::string message;
  if (disabled == 2) {
    message = "io_uring is unavailable: io_uring_setup was refused (" + name +
              ") because the kernel.io_uring_disabled sysctl is 2";
  } else if (err == ENOSYS) {
    message = "io_uring is unavailable: io_uring_setup was refused (ENOSYS), as a seccomp profile "
              "(Docker's default) or a kernel without io_uring does";
  } else {
    message = "io_uring is unavailable: io_uring_setup was refused (" + name +
              "), as a seccomp profile or the io_uring_disabled sysctl does";
  }
  Napi::Error error = Napi::Error::New(env, message);
  Napi::Object obj = error.Value();
  obj.Set("code", "ERR_IOURING_UNAVAILABLE");
  obj.Set("errno", Napi::Number::New(env, -err));
  obj.Set("syscall", "io_uring_setup");
  return error;
}

unsigned SetupRing(napi_env env, struct io_uring* ring, unsigned entries, unsigned cq_entries, bool sqpoll) {
  unsigned base = IORING_SETUP_SUBMIT_ALL;
  if (cq_entries != 0) base |= IORING_SETUP_CQSIZE;
  if (sqpoll) base |= IORING_SETUP_SQPOLL;
  // First the kernel accepts: cooperative task work (no interrupt of the JS thread mid-run;
  // the work runs at its next entry into the kernel, which the loop's epoll_wait is), then
  // nothing. Not DEFER_TASKRUN: its task work runs only inside io_uring_enter, and a completion
  // that another task causes (a peer's write) wakes a poller of the ring about 4 timer ticks
  // late, ~16 ms at HZ=250, while the loop waits in epoll. SINGLE_ISSUER: one thread submits.
  // TASKRUN_FLAG tells us when task work is pending.
  const unsigned tries[] = {
      base | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG,
      base | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG,
      base | IORING_SETUP_COOP_TASKRUN,
      base,
      base & ~IORING_SETUP_SUBMIT_ALL,
  };
  int ret = -EINVAL;
  for (unsigned flags : tries) {
    struct io_uring_params params;
    memset(&params, 0, sizeof(params));
    params.flags = flags;
    params.cq_entries = cq_entries;
    if (sqpoll) params.sq_thread_idle = 100;
    ret = io_uring_queue_init_params(entries, ring, &params);
    if (ret == 0) return flags;
    if (ret != -EINVAL) break;
  }
  if (ret == -EPERM || ret == -ENOSYS || ret == -EACCES) throw UnavailableError(env, -ret);
  ThrowErrno(env, -ret, "io_uring_setup");
}

}  // namespace iolab
