// A child iolab starts (an echo server, the load generator in a namespace, bench ipc's
// receiver, fio for --vs-fio) ends with the process that started it, however that one dies:
// SIGKILL leaves no orphan still running. Node has no spawn option for PR_SET_PDEATHSIG. An
// iolab child asks for it itself, early (dieWithParent). A foreign program (fio) cannot, so
// spawnDyingWithParent forks it here and sets it in the child between fork and exec, with no
// shell or launcher between: the prctl has to run in the child, which Node's spawn never lets
// JS do, and a launcher program would be one more thing to build and ship. waitChild returns
// the child's CPU time from wait4 as well, all of its threads.
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "args.h"
#include "errors.h"
#include "live_objects.h"
#include "registry.h"

extern char** environ;

namespace iolab {

// dieWithParent(parentPid): SIGKILL when the parent dies; at once when it already has.
static Napi::Value DieWithParent(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int64_t parent = IntegerArg(env, info[0], "parentPid", 1, INT32_MAX);
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) ThrowErrno(env, errno, "prctl");
  if (getppid() != (pid_t)parent) kill(getpid(), SIGKILL);
  return env.Undefined();
}

// The program's path as execvp would find it (resolved before fork: the child only execs).
static std::string FindProgram(Napi::Env env, const std::string& file) {
  if (file.find('/') != std::string::npos) return file;
  const char* path = getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + file;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  ThrowErrno(env, ENOENT, "spawn", file.c_str());
}

// spawnDyingWithParent(file, args) -> { pid, stdout, stderr }: file (looked up on PATH) runs with
// args, stdin /dev/null, stdout and stderr pipes whose read ends (CLOEXEC) JS owns; it gets
// SIGKILL when this process dies.
static Napi::Value SpawnDyingWithParent(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string file = StringArg(env, info[0], "file");
  if (!info[1].IsArray()) ThrowTypeError(env, "ERR_INVALID_ARG_TYPE", "args must be an array of strings");
  Napi::Array list = info[1].As<Napi::Array>();
  std::vector<std::string> args{file};
  for (uint32_t i = 0; i < list.Length(); i++) args.push_back(StringArg(env, list.Get(i), "args[]"));
  std::string path = FindProgram(env, file);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int out[2] = {-1, -1}, err[2] = {-1, -1};
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devnull < 0) ThrowErrno(env, errno, "open", "/dev/null");
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    int e = errno;
    for (int fd : {devnull, out[0], out[1], err[0], err[1]}) if (fd >= 0) close(fd);
    ThrowErrno(env, e, "pipe2");
  }
  pid_t parent = getpid();
  // Signals stay blocked across fork until the child has reset its handlers: one that reached
  // the child first would run Node's handler there, which writes to the signal pipe it shares
  // with this process, and this process would take the child's SIGINT for a second Ctrl-C.
  sigset_t all, before;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &before);
  pid_t pid = fork();
  if (pid == 0) {
    // the child: only async-signal-safe calls until exec
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(127);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++) (void)sigaction(sig, &dfl, nullptr);  // Node ignores SIGPIPE
    sigset_t none;
    sigemptyset(&none);
    (void)sigprocmask(SIG_SETMASK, &none, nullptr);
    if (dup2(devnull, 0) < 0 || dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0) _exit(127);
    execve(path.c_str(), argv.data(), environ);
    _exit(127);
  }
  int e = errno;
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  close(devnull);
  close(out[1]);
  close(err[1]);
  if (pid < 0) {
    close(out[0]);
    close(err[0]);
    ThrowErrno(env, e, "fork");
  }
  Napi::Object o = Napi::Object::New(env);
  o.Set("pid", double(pid));
  o.Set("stdout", double(out[0]));
  o.Set("stderr", double(err[0]));
  return o;
}

static double Seconds(const struct timeval& tv) { return double(tv.tv_sec) + double(tv.tv_usec) / 1e6; }

// waitChild(pid) -> Promise<{ exitCode, signal, usrSec, sysSec }>: waits off the JS thread for a
// child spawnDyingWithParent started (libuv waits only for the children it started itself).
class WaitWorker : public Napi::AsyncWorker {
 public:
  WaitWorker(Napi::Env env, pid_t pid)
      : Napi::AsyncWorker(env), pid_(pid), deferred_(Napi::Promise::Deferred::New(env)) {
    LiveInc(Live::kNativeJobs);
  }
  Napi::Promise Promise() { return deferred_.Promise(); }

 protected:
  void Execute() override {
    pid_t r;
    do r = wait4(pid_, &status_, 0, &usage_);
    while (r < 0 && errno == EINTR);
    if (r < 0) err_ = errno;
  }
  void OnOK() override {
    Napi::Env env = Env();
    LiveDec(Live::kNativeJobs);
    if (err_ != 0) {
      deferred_.Reject(ErrnoError(env, err_, "wait4").Value());
      return;
    }
    Napi::Object o = Napi::Object::New(env);
    o.Set("exitCode", WIFEXITED(status_) ? Napi::Value(Napi::Number::New(env, WEXITSTATUS(status_))) : env.Null());
    const char* name = WIFSIGNALED(status_) ? sigabbrev_np(WTERMSIG(status_)) : nullptr;
    o.Set("signal", WIFSIGNALED(status_) ? Napi::Value(Napi::String::New(env, std::string("SIG") + (name ? name : "?")))
                                         : env.Null());
    o.Set("usrSec", Seconds(usage_.ru_utime));
    o.Set("sysSec", Seconds(usage_.ru_stime));
    deferred_.Resolve(o);
  }
  void OnError(const Napi::Error& e) override {
    LiveDec(Live::kNativeJobs);
    deferred_.Reject(e.Value());
  }

 private:
  pid_t pid_;
  int status_ = 0;
  int err_ = 0;
  struct rusage usage_ {};
  Napi::Promise::Deferred deferred_;
};

static Napi::Value WaitChild(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto pid = pid_t(IntegerArg(env, info[0], "pid", 1, INT32_MAX));
  auto* worker = new WaitWorker(env, pid);
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

static void Init(Napi::Env env, Napi::Object exports) {
  exports.Set("dieWithParent", Napi::Function::New(env, DieWithParent, "dieWithParent"));
  exports.Set("spawnDyingWithParent", Napi::Function::New(env, SpawnDyingWithParent, "spawnDyingWithParent"));
  exports.Set("waitChild", Napi::Function::New(env, WaitChild, "waitChild"));
}

IOLAB_FEATURE(parent_death, Init);

}  // namespace iolab
