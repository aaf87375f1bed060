// The echo subsystem's one Node-aware file: starts the C servers and load generators of
// native/echo/ on threads of their own and hands their results to JS as Promises.
//
// Why a std::thread and not Napi::AsyncWorker: a server runs until it is told to stop, and
// several (servers, a generator, its reference client) run at once in one process; parking
// them on libuv's 4-thread pool would starve fs and dns work. Each job's thread finishes by
// releasing a ThreadSafeFunction, whose finalizer (on the JS thread) joins it, closes what
// the job held and settles the Promise. No JS runs on the job's thread.
#include <napi.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "args.h"
#include "echo/echo.h"
#include "errors.h"
#include "live_objects.h"
#include "registry.h"

namespace iolab {
namespace {

enum class JobKind { kUringServer, kEpollServer, kLoad };

struct Job {
  uint64_t id = 0;
  JobKind kind;
  std::thread thread;
  Napi::ThreadSafeFunction tsfn;
  Napi::Promise::Deferred deferred;
  napi_env env = nullptr;
  bool env_closing = false;
  std::optional<OwnedFd> listen_fd;
  std::optional<OwnedFd> stop_fd;  // servers: eventfd the C loop watches
  int stop_flag = 0;            // load generators: polled by their threads
  echo_server_config server_cfg{};
  echo_server_stats server_stats{};
  echo_load_config load_cfg{};
  echo_load_result load_result{};
  int ret = 0;
  explicit Job(Napi::Env env) : deferred(Napi::Promise::Deferred::New(env)), env(env) {}
};

std::mutex jobs_lock;
std::map<uint64_t, Job*> jobs;
uint64_t next_job_id = 1;

void SignalStop(Job* job) {
  if (job->kind == JobKind::kLoad) {
    __atomic_store_n(&job->stop_flag, 1, __ATOMIC_RELAXED);
  } else {
    uint64_t one = 1;
    ssize_t n = write(job->stop_fd->get(), &one, sizeof(one));
    (void)n;
  }
}

// stop(): asks the job to end; harmless once it has ended.
Napi::Value StopJob(const Napi::CallbackInfo& info) {
  uint64_t id = reinterpret_cast<uintptr_t>(info.Data());
  std::lock_guard<std::mutex> guard(jobs_lock);
  auto it = jobs.find(id);
  if (it != jobs.end()) SignalStop(it->second);
  return info.Env().Undefined();
}

// Env teardown (e.g. a worker thread ending) while a job runs: stop it and wait for it.
void OnEnvCleanup(void* arg) {
  Job* job = static_cast<Job*>(arg);
  job->env_closing = true;
  {
    std::lock_guard<std::mutex> guard(jobs_lock);
    SignalStop(job);
  }
  if (job->thread.joinable()) job->thread.join();
}

// uring: { noSqArray: { accepted: true }, directDescriptors: { accepted: false, errno: 'EINVAL' },
// recvBundle: { accepted: false, reason: 'unused' }, ... }.
Napi::Object Features(Napi::Env env, const echo_server_stats& st) {
  Napi::Object o = Napi::Object::New(env);
  for (unsigned f = 0; f < ECHO_URING_NFEATURES; f++) {
    const echo_feature& x = st.features[f];
    if (!x.state) continue;
    Napi::Object e = Napi::Object::New(env);
    e.Set("accepted", Napi::Boolean::New(env, x.state == ECHO_FEATURE_ACCEPTED));
    if (x.state == ECHO_FEATURE_REFUSED && x.err != 0) {
      e.Set("reason", Napi::String::New(env, "refused by the kernel"));
      e.Set("errno", Napi::String::New(env, ErrnoName(x.err)));
    } else if (x.state == ECHO_FEATURE_REFUSED) {
      e.Set("reason", Napi::String::New(env, "not offered by this kernel (no feature flag)"));
    }
    if (x.state == ECHO_FEATURE_OFF) e.Set("reason", Napi::String::New(env, "turned off (IOLAB_ECHO_URING_OFF)"));
    if (x.state == ECHO_FEATURE_UNUSED) e.Set("reason", Napi::String::New(env, "supported, not used (one message in flight per connection: docs/echo-uring.md)"));
    o.Set(echo_uring_feature_name(f), e);
  }
  return o;
}

Napi::Object ServerStats(Napi::Env env, const echo_server_stats& st, bool uring) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("connections", Napi::Number::New(env, double(st.connections)));
  o.Set("refused", Napi::Number::New(env, double(st.refused)));
  o.Set("bytesEchoed", Napi::Number::New(env, double(st.bytes)));
  o.Set("peakConnections", Napi::Number::New(env, double(st.peak_conns)));
  o.Set("recvPauses", Napi::Number::New(env, double(st.recv_pauses)));
  o.Set("bufferWaits", Napi::Number::New(env, double(st.buffer_waits)));
  o.Set("idleClosed", Napi::Number::New(env, double(st.idle_closed)));
  o.Set("acceptPauses", Napi::Number::New(env, double(st.accept_pauses)));
  o.Set("setup", Napi::String::New(env, st.setup));
  if (uring) o.Set("features", Features(env, st));
  return o;
}

Napi::Object LoadResult(Napi::Env env, const echo_load_result& r) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("requests", Napi::Number::New(env, double(r.requests)));
  o.Set("responses", Napi::Number::New(env, double(r.responses)));
  o.Set("bytes", Napi::Number::New(env, double(r.bytes)));
  o.Set("connected", Napi::Number::New(env, double(r.connected)));
  Napi::Object errors = Napi::Object::New(env);
  errors.Set("connect", Napi::Number::New(env, double(r.connect_errors)));
  errors.Set("reset", Napi::Number::New(env, double(r.resets)));
  errors.Set("shortEcho", Napi::Number::New(env, double(r.short_echoes)));
  errors.Set("mismatch", Napi::Number::New(env, double(r.mismatches)));
  errors.Set("timeout", Napi::Number::New(env, double(r.timeouts)));
  o.Set("errors", errors);
  o.Set("connectErrno", Napi::Number::New(env, r.connect_errno));
  o.Set("stoppedEarly", Napi::Boolean::New(env, r.stopped_early != 0));
  o.Set("elapsedNs", Napi::Number::New(env, double(r.elapsed_ns)));
  o.Set("cpuNs", Napi::Number::New(env, double(r.cpu_ns)));
  if (r.server_cpu_ns >= 0) o.Set("serverCpuNs", Napi::Number::New(env, double(r.server_cpu_ns)));
  Napi::Object lat = Napi::Object::New(env);
  lat.Set("p50", Napi::Number::New(env, double(r.p50_ns)));
  lat.Set("p99", Napi::Number::New(env, double(r.p99_ns)));
  lat.Set("p999", Napi::Number::New(env, double(r.p999_ns)));
  lat.Set("max", Napi::Number::New(env, double(r.max_ns)));
  o.Set("latencyNs", lat);
  return o;
}

void FinishJob(Napi::Env env, void*, Job* job) {
  if (job->thread.joinable()) job->thread.join();
  {
    std::lock_guard<std::mutex> guard(jobs_lock);
    jobs.erase(job->id);
  }
  napi_remove_env_cleanup_hook(job->env, OnEnvCleanup, job);
  if (!job->env_closing) {
    Napi::HandleScope scope(env);
    if (job->ret < 0) {
      const char* syscall = job->kind == JobKind::kLoad ? job->load_result.syscall : job->server_stats.syscall;
      job->deferred.Reject(ErrnoError(env, -job->ret, syscall ? syscall : "echo").Value());
    } else if (job->kind == JobKind::kLoad) {
      job->deferred.Resolve(LoadResult(env, job->load_result));
    } else {
      job->deferred.Resolve(ServerStats(env, job->server_stats, job->kind == JobKind::kUringServer));
    }
  }
  LiveDec(Live::kNativeServers);
  delete job;  // closes the listening socket and the eventfd (OwnedFd)
}

void RunJob(Job* job) {
  switch (job->kind) {
    case JobKind::kUringServer: job->ret = echo_uring_serve(&job->server_cfg, &job->server_stats); break;
    case JobKind::kEpollServer: job->ret = echo_epoll_serve(&job->server_cfg, &job->server_stats); break;
    case JobKind::kLoad: job->ret = echo_load_run(&job->load_cfg, &job->load_result); break;
  }
  job->tsfn.Release();
}

// Starts the job's thread and returns { stop(), done } (plus whatever the caller adds).
Napi::Object Launch(Napi::Env env, Job* job, const char* name) {
  {
    std::lock_guard<std::mutex> guard(jobs_lock);
    job->id = next_job_id++;
    jobs[job->id] = job;
  }
  job->tsfn = Napi::ThreadSafeFunction::New(env, Napi::Function(), name, 0, 1, job, FinishJob,
                                            static_cast<void*>(nullptr));
  napi_add_env_cleanup_hook(env, OnEnvCleanup, job);
  LiveInc(Live::kNativeServers);
  job->thread = std::thread(RunJob, job);
  Napi::Object handle = Napi::Object::New(env);
  handle.Set("stop", Napi::Function::New(env, StopJob, "stop", reinterpret_cast<void*>(uintptr_t(job->id))));
  handle.Set("done", job->deferred.Promise());
  return handle;
}

OwnedFd Listen(Napi::Env env, const std::string& host, int port, int backlog, bool nonblocking, int* bound) {
  const char* syscall = "socket";
  int fd = echo_listen_tcp(host.c_str(), port, backlog, nonblocking ? 1 : 0, bound, &syscall);
  if (fd < 0) {
    std::string where = (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
    ThrowErrno(env, -fd, syscall, where.c_str());
  }
  return OwnedFd(fd);
}

// uringFeaturesOff: names from echo_uring_feature_name, for tests and A/B runs.
uint32_t FeaturesOff(const OptionsArg& opts) {
  Napi::Value v(opts.env(), opts.Get("uringFeaturesOff"));
  if (v.IsUndefined()) return 0;
  std::string name = opts.Name("uringFeaturesOff");
  if (!v.IsArray()) ThrowArgType(opts.env(), name, "an Array of feature names", v);
  Napi::Array a = v.As<Napi::Array>();
  uint32_t off = 0;
  for (uint32_t i = 0; i < a.Length(); i++) {
    Napi::Value e = a.Get(i);
    unsigned f = 0;
    while (echo_uring_feature_name(f) && !(e.IsString() && e.As<Napi::String>().Utf8Value() == echo_uring_feature_name(f))) f++;
    if (!echo_uring_feature_name(f)) ThrowArgValue(opts.env(), name + "[" + std::to_string(i) + "]", "a uring feature name", e);
    off |= 1u << f;
  }
  return off;
}

// echoStartServer(engine, { host, port, maxConns, buffers, idleTimeoutMs, uringFeaturesOff })
Napi::Value StartServer(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  static const Choice engines[] = { { "uring", int(JobKind::kUringServer) }, { "epoll", int(JobKind::kEpollServer) }, { nullptr, 0 } };
  JobKind kind = JobKind(ChoiceArg(env, info[0], "engine", engines));
  OptionsArg opts(env, info[1]);
  std::string host = StringArg(env, opts.Get("host"), "options.host");
  int port = int(IntegerArg(env, opts.Get("port"), "options.port", 0, 65535));
  uint32_t max_conns = uint32_t(opts.Integer("maxConns", 0, UINT32_MAX, 0));
  uint32_t buffers = uint32_t(opts.Integer("buffers", 1, 32768, 4096));
  if ((buffers & (buffers - 1)) != 0) ThrowArgRange(env, opts.Name("buffers"), "a power of two", std::to_string(buffers));
  int64_t idle_ms = opts.Integer("idleTimeoutMs", 0, int64_t(1e9), 0);
  uint32_t off = FeaturesOff(opts);
  int bound = 0;
  OwnedFd lfd = Listen(env, host, port, 4096, kind == JobKind::kEpollServer, &bound);
  int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (efd < 0) ThrowErrno(env, errno, "eventfd");
  Job* job = new Job(env);
  job->kind = kind;
  job->stop_fd.emplace(efd);
  job->listen_fd.emplace(lfd.release());
  job->server_cfg.listen_fd = job->listen_fd->get();
  job->server_cfg.stop_fd = job->stop_fd->get();
  job->server_cfg.max_conns = max_conns;
  job->server_cfg.buffers = buffers;
  job->server_cfg.idle_timeout_ns = uint64_t(idle_ms) * 1000000u;
  job->server_cfg.uring_off = off;
  Napi::Object handle = Launch(env, job, "iolab echo server");
  handle.Set("port", Napi::Number::New(env, bound));
  return handle;
}

// echoRunLoad({ host, port, clients, length, durationMs, graceMs, threads, mode, cpuPid })
Napi::Value RunLoad(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  OptionsArg opts(env, info[0]);
  std::string host = StringArg(env, opts.Get("host"), "options.host");
  int port = int(IntegerArg(env, opts.Get("port"), "options.port", 0, 65535));
  echo_load_config cfg{};
  if (echo_make_addr(host.c_str(), port, &cfg.addr, &cfg.addr_len) < 0) ThrowErrno(env, EINVAL, "inet_pton", host.c_str());
  cfg.clients = uint32_t(opts.Integer("clients", 1, 1000000, 50));
  cfg.length = uint32_t(opts.Integer("length", 1, 64 * 1024 * 1024, 512));
  cfg.duration_ns = uint64_t(opts.Integer("durationMs", 0, int64_t(1e9), 1000)) * 1000000u;
  cfg.grace_ns = uint64_t(opts.Integer("graceMs", 0, int64_t(1e9), 2000)) * 1000000u;
  cfg.threads = uint32_t(opts.Integer("threads", 1, 64, 4));
  cfg.cpu_pid = int(opts.Integer("cpuPid", 0, INT32_MAX, 0));
  static const Choice modes[] = { { "epoll", ECHO_LOAD_EPOLL }, { "threads", ECHO_LOAD_THREADS }, { "uring", ECHO_LOAD_URING }, { nullptr, 0 } };
  napi_value mode = opts.Get("mode");
  cfg.mode = Napi::Value(env, mode).IsUndefined() ? ECHO_LOAD_EPOLL : ChoiceArg(env, mode, "options.mode", modes);
  Job* job = new Job(env);
  job->kind = JobKind::kLoad;
  job->load_cfg = cfg;
  job->load_cfg.stop = &job->stop_flag;
  return Launch(env, job, "iolab echo load");
}

// echoOpenFileLimit(raise): { soft, hard }, the soft limit raised to the hard one first when asked.
Napi::Value OpenFileLimit(const Napi::CallbackInfo& info) {
  uint64_t hard = 0;
  bool raise = OptionalBoolArg(info.Env(), info[0], "raise", false);
  uint64_t soft = raise ? echo_raise_open_file_limit(&hard) : echo_open_file_limit(&hard);
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("soft", Napi::Number::New(info.Env(), double(soft)));
  o.Set("hard", Napi::Number::New(info.Env(), double(hard)));
  return o;
}

void Init(Napi::Env env, Napi::Object exports) {
  exports.Set("echoStartServer", Napi::Function::New(env, StartServer, "echoStartServer"));
  exports.Set("echoRunLoad", Napi::Function::New(env, RunLoad, "echoRunLoad"));
  exports.Set("echoOpenFileLimit", Napi::Function::New(env, OpenFileLimit, "echoOpenFileLimit"));
}

}  // namespace
}  // namespace iolab

IOLAB_FEATURE(echo, iolab::Init);
