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

Napi::Object ServerStats(Napi::Env env, const echo_server_stats& st) {
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
  o.Set("elapsedNs", Napi::Number::New(env, double(r.elapsed_ns)));
  o.Set("cpuNs", Napi::Number::New(env, double(r.cpu_ns)));
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
      job->deferred.Resolve(ServerStats(env, job->server_stats));
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

std::string HostArg(const Napi::Value& v) {
  if (!v.IsString()) ThrowTypeError(v.Env(), "ERR_INVALID_ARG_TYPE", "host must be a string");
  return v.As<Napi::String>().Utf8Value();
}

int PortArg(const Napi::Value& v) {
  if (!v.IsNumber()) ThrowTypeError(v.Env(), "ERR_INVALID_ARG_TYPE", "port must be a number");
  double p = v.As<Napi::Number>().DoubleValue();
  if (!(p >= 0 && p <= 65535) || p != int(p)) ThrowRangeError(v.Env(), "ERR_OUT_OF_RANGE", "port must be 0..65535");
  return int(p);
}

double NumberOpt(const Napi::Object& o, const char* key, double def, double min, double max) {
  Napi::Value v = o.Get(key);
  if (v.IsUndefined()) return def;
  if (!v.IsNumber()) ThrowTypeError(o.Env(), "ERR_INVALID_ARG_TYPE", std::string(key) + " must be a number");
  double d = v.As<Napi::Number>().DoubleValue();
  if (!(d >= min && d <= max)) {
    ThrowRangeError(o.Env(), "ERR_OUT_OF_RANGE",
                    std::string(key) + " must be between " + std::to_string(int64_t(min)) + " and " + std::to_string(int64_t(max)));
  }
  return d;
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

// echoStartServer(engine, { host, port, maxConns, buffers, idleTimeoutMs })
Napi::Value StartServer(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string engine = info[0].IsString() ? info[0].As<Napi::String>().Utf8Value() : "";
  if (engine != "uring" && engine != "epoll") {
    ThrowTypeError(env, "ERR_INVALID_ARG_VALUE", "engine must be 'uring' or 'epoll'");
  }
  if (!info[1].IsObject()) ThrowTypeError(env, "ERR_INVALID_ARG_TYPE", "options must be an object");
  Napi::Object opts = info[1].As<Napi::Object>();
  std::string host = HostArg(opts.Get("host"));
  int port = PortArg(opts.Get("port"));
  double max_conns = NumberOpt(opts, "maxConns", 0, 0, 4294967295.0);
  double buffers = NumberOpt(opts, "buffers", 4096, 1, 32768);
  double idle_ms = NumberOpt(opts, "idleTimeoutMs", 0, 0, 1e9);
  if ((uint32_t(buffers) & (uint32_t(buffers) - 1)) != 0 || buffers != double(uint32_t(buffers))) {
    ThrowRangeError(env, "ERR_OUT_OF_RANGE", "buffers must be a power of two up to 32768");
  }
  int bound = 0;
  OwnedFd lfd = Listen(env, host, port, 4096, engine == "epoll", &bound);
  int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (efd < 0) ThrowErrno(env, errno, "eventfd");
  Job* job = new Job(env);
  job->kind = engine == "uring" ? JobKind::kUringServer : JobKind::kEpollServer;
  job->stop_fd.emplace(efd);
  job->listen_fd.emplace(lfd.release());
  job->server_cfg.listen_fd = job->listen_fd->get();
  job->server_cfg.stop_fd = job->stop_fd->get();
  job->server_cfg.max_conns = uint32_t(max_conns);
  job->server_cfg.buffers = uint32_t(buffers);
  job->server_cfg.idle_timeout_ns = uint64_t(idle_ms * 1e6);
  Napi::Object handle = Launch(env, job, "iolab echo server");
  handle.Set("port", Napi::Number::New(env, bound));
  return handle;
}

// echoRunLoad({ host, port, clients, length, durationMs, graceMs, threads, mode })
Napi::Value RunLoad(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsObject()) ThrowTypeError(env, "ERR_INVALID_ARG_TYPE", "options must be an object");
  Napi::Object opts = info[0].As<Napi::Object>();
  std::string host = HostArg(opts.Get("host"));
  int port = PortArg(opts.Get("port"));
  Job* job = new Job(env);
  job->kind = JobKind::kLoad;
  echo_load_config& cfg = job->load_cfg;
  try {
    if (echo_make_addr(host.c_str(), port, &cfg.addr, &cfg.addr_len) < 0) {
      ThrowErrno(env, EINVAL, "inet_pton", host.c_str());
    }
    cfg.clients = uint32_t(NumberOpt(opts, "clients", 50, 1, 1000000));
    cfg.length = uint32_t(NumberOpt(opts, "length", 512, 1, 64 * 1024 * 1024));
    cfg.duration_ns = uint64_t(NumberOpt(opts, "durationMs", 1000, 0, 1e9) * 1e6);
    cfg.grace_ns = uint64_t(NumberOpt(opts, "graceMs", 2000, 0, 1e9) * 1e6);
    cfg.threads = uint32_t(NumberOpt(opts, "threads", 4, 1, 64));
    Napi::Value mode = opts.Get("mode");
    std::string m = mode.IsString() ? mode.As<Napi::String>().Utf8Value() : "epoll";
    if (m != "epoll" && m != "threads" && m != "uring") {
      ThrowTypeError(env, "ERR_INVALID_ARG_VALUE", "mode must be 'epoll', 'uring' or 'threads'");
    }
    cfg.mode = m == "threads" ? ECHO_LOAD_THREADS : m == "uring" ? ECHO_LOAD_URING : ECHO_LOAD_EPOLL;
  } catch (...) {
    delete job;
    throw;
  }
  cfg.stop = &job->stop_flag;
  return Launch(env, job, "iolab echo load");
}

// echoListen(host, port, { backlog, nonBlocking }) -> { fd, port }: the fd belongs to JS.
Napi::Value ListenTcp(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string host = HostArg(info[0]);
  int port = PortArg(info[1]);
  int backlog = 4096;
  bool nonblocking = false;
  if (info[2].IsObject()) {
    Napi::Object o = info[2].As<Napi::Object>();
    backlog = int(NumberOpt(o, "backlog", 4096, 1, 65535));
    nonblocking = o.Get("nonBlocking").ToBoolean();
  }
  int bound = 0;
  OwnedFd fd = Listen(env, host, port, backlog, nonblocking, &bound);
  Napi::Object r = Napi::Object::New(env);
  r.Set("port", Napi::Number::New(env, bound));
  r.Set("fd", Napi::Number::New(env, fd.release()));
  return r;
}

Napi::Value SetNoDelay(const Napi::CallbackInfo& info) {
  if (!info[0].IsNumber()) ThrowTypeError(info.Env(), "ERR_INVALID_ARG_TYPE", "fd must be a number");
  int ret = echo_set_nodelay(info[0].As<Napi::Number>().Int32Value());
  if (ret < 0) ThrowErrno(info.Env(), -ret, "setsockopt");
  return info.Env().Undefined();
}

Napi::Value OpenFileLimit(const Napi::CallbackInfo& info) {
  uint64_t hard = 0;
  uint64_t soft = echo_open_file_limit(&hard);
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("soft", Napi::Number::New(info.Env(), double(soft)));
  o.Set("hard", Napi::Number::New(info.Env(), double(hard)));
  return o;
}

void Init(Napi::Env env, Napi::Object exports) {
  exports.Set("echoStartServer", Napi::Function::New(env, StartServer, "echoStartServer"));
  exports.Set("echoRunLoad", Napi::Function::New(env, RunLoad, "echoRunLoad"));
  exports.Set("echoListen", Napi::Function::New(env, ListenTcp, "echoListen"));
  exports.Set("echoSetNoDelay", Napi::Function::New(env, SetNoDelay, "echoSetNoDelay"));
  exports.Set("echoOpenFileLimit", Napi::Function::New(env, OpenFileLimit, "echoOpenFileLimit"));
}

}  // namespace
}  // namespace iolab

IOLAB_FEATURE(echo, iolab::Init);
