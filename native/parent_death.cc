// A child iolab starts (an echo server, the load generator in a namespace, bench ipc's
// receiver) ends with the process that started it, however that one dies: SIGKILL leaves no
// orphan still serving. Node has no spawn option for PR_SET_PDEATHSIG, so the child asks for it
// itself, early, and checks that its parent is still the one that started it (a parent that
// died before the prctl would never send the signal).
#include <errno.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "args.h"
#include "errors.h"
#include "registry.h"

namespace iolab {

// dieWithParent(parentPid): SIGKILL when the parent dies; at once when it already has.
static Napi::Value DieWithParent(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int64_t parent = IntegerArg(env, info[0], "parentPid", 1, INT32_MAX);
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) ThrowErrno(env, errno, "prctl");
  if (getppid() != (pid_t)parent) kill(getpid(), SIGKILL);
  return env.Undefined();
}

static void Init(Napi::Env env, Napi::Object exports) {
  exports.Set("dieWithParent", Napi::Function::New(env, DieWithParent, "dieWithParent"));
}

IOLAB_FEATURE(parent_death, Init);

}  // namespace iolab
