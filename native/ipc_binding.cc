// bench ipc's only Node-aware file: runs the plain-C sender, receiver and memcpy cells of
// native/ipc/ off the JS thread (one AsyncWorker each) and turns their results into JS.
// Every job is returned as { stop(), done }: stop() asks the C loop to end (an interrupted
// run), done settles when it has.
#include <napi.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "args.h"
#include "errors.h"
#include "live_objects.h"
#include "registry.h"

extern "C" {
#include "stats/histogram.h"
#include "ipc/fdmsg.h"
#include "ipc/ipc.h"
#include "ipc/pingpong.h"
}

namespace iolab {
namespace {

enum class JobKind { kSend, kMemcpy, kServe };

class IpcJob;
// Touched only on the JS thread (created, stopped and finished there), so no lock.
std::map<uint64_t, IpcJob*> jobs;
uint64_t next_job_id = 1;

Napi::Value ErrorValue(Napi::Env env, const ipc_error& e) {
  if (e.kind == IPC_ERRNO) return ErrnoError(env, e.err, e.syscall[0] ? e.syscall : "ipc").Value();
  const char* code = "ERR_IOLAB_IPC_PROTOCOL";
  switch (e.kind) {
    case IPC_CHECK: code = "ERR_IOLAB_IPC_CHECK"; break;
    case IPC_PEER_GONE: code = "ERR_IOLAB_IPC_PEER_GONE"; break;
    case IPC_UNAVAILABLE: code = "ERR_IOLAB_IPC_UNAVAILABLE"; break;
    case IPC_STOPPED: code = "ERR_IOLAB_IPC_STOPPED"; break;
    default: break;
  }
  Napi::Error err = Napi::Error::New(env, e.message[0] ? e.message : "bench ipc failed");
  err.Value().Set("code", code);
  return err.Value();
}

class IpcJob : public Napi::AsyncWorker {
 public:
  IpcJob(Napi::Env env, JobKind kind, int control)
      : Napi::AsyncWorker(env), kind_(kind), control_(control), deferred_(Napi::Promise::Deferred::New(env)) {
    id_ = next_job_id++;
    jobs[id_] = this;
    LiveInc(Live::kNativeJobs);
    if (kind == JobKind::kSend) {
      round_trips_ = std::make_unique<histogram>();
      hist_init(round_trips_.get());
    }
  }
  ~IpcJob() override {
    jobs.erase(id_);
    LiveDec(Live::kNativeJobs);
  }

  ipc_cell cell{};
  uint64_t id() const { return id_; }
  void Stop() { __atomic_store_n(&stop_, 1, __ATOMIC_RELAXED); }
  Napi::Promise Promise() { return deferred_.Promise(); }

 protected:
  void Execute() override {
    result_.round_trips = cell.mode == IPC_PINGPONG ? round_trips_.get() : nullptr;
    switch (kind_) {
      case JobKind::kSend: ret_ = ipc_send_cell(control_, &cell, &result_, &stop_); break;
      case JobKind::kMemcpy: ret_ = ipc_memcpy_cell(&cell, &result_, &stop_); break;
      case JobKind::kServe: ret_ = ipc_serve(control_, &stop_, &result_.error); break;
    }
  }

  void OnOK() override {
    Napi::Env env = Env();
    if (ret_ != 0) {
      deferred_.Reject(ErrorValue(env, result_.error));
      return;
    }
    if (kind_ == JobKind::kServe) {
      deferred_.Resolve(env.Undefined());
      return;
    }
    Napi::Object o = Napi::Object::New(env);
    o.Set("messages", double(result_.messages));
    o.Set("elapsedNs", double(result_.elapsed_ns));
    if (result_.round_trips != nullptr) {
      static const double wanted[3] = {50, 99, 99.9};
      uint64_t p[3];
      hist_percentiles(result_.round_trips, wanted, 3, p);
      o.Set("p50Ns", double(p[0]));
      o.Set("p99Ns", double(p[1]));
      o.Set("p999Ns", double(p[2]));
      o.Set("checkNs", double(result_.check_ns));
    }
    deferred_.Resolve(o);
  }

  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  JobKind kind_;
  int control_;
  uint64_t id_;
  int stop_ = 0;
  int ret_ = 0;
  ipc_result result_{};
  std::unique_ptr<histogram> round_trips_;
  Napi::Promise::Deferred deferred_;
};

Napi::Value StopJob(const Napi::CallbackInfo& info) {
  auto it = jobs.find(reinterpret_cast<uintptr_t>(info.Data()));
  if (it != jobs.end()) it->second->Stop();
  return info.Env().Undefined();
}

Napi::Object Launch(Napi::Env env, IpcJob* job) {
  Napi::Object handle = Napi::Object::New(env);
  handle.Set("stop", Napi::Function::New(env, StopJob, "stop", reinterpret_cast<void*>(uintptr_t(job->id()))));
  handle.Set("done", job->Promise());
  job->Queue();
  return handle;
}

// The transports as choices, built once from the C table (the one list of names).
const Choice* TransportChoices() {
  static std::vector<Choice> choices = [] {
    std::vector<Choice> c;
    for (int i = 0; ipc_transport_name(i) != nullptr; i++) c.push_back({ipc_transport_name(i), i});
    c.push_back({nullptr, 0});
    return c;
  }();
  return choices.data();
}

const Choice kModes[] = {{"throughput", IPC_THROUGHPUT}, {"pingpong", IPC_PINGPONG}, {nullptr, 0}};

unsigned TransportArg(Napi::Env env, Napi::Value v) { return unsigned(ChoiceArg(env, v, "transport", TransportChoices())); }
ipc_mode ModeArg(Napi::Env env, Napi::Value v) { return ipc_mode(ChoiceArg(env, v, "mode", kModes)); }

// { messageBytes, durationMs, minMessages?, faultMessage?, faultStale?, checkFull? } -> ipc_cell (the
// transport and mode are set by the caller).
ipc_cell CellArg(Napi::Env env, Napi::Value v) {
  OptionsArg o(env, v, "cell");
  if (!o.present()) ThrowArgType(env, "cell", "object", v);
  ipc_cell c{};
  c.message_bytes = uint64_t(IntegerArg(env, o.Get("messageBytes"), "cell.messageBytes", IPC_MIN_MESSAGE, kMaxSafeInteger));
  c.duration_ns = uint64_t(IntegerArg(env, o.Get("durationMs"), "cell.durationMs", 0, 3600 * 1000)) * 1000000u;
  c.min_messages = uint64_t(o.Integer("minMessages", 1, kMaxSafeInteger, 1));
  c.fault_message = o.Integer("faultMessage", -1, kMaxSafeInteger, -1);
  c.fault_stale = o.Bool("faultStale", false) ? 1 : 0;
  c.check_full = o.Bool("checkFull", false) ? 1 : 0;
  return c;
}

// ipcSend(controlFd, transport, mode, cell) -> { stop, done: Promise<result> }
Napi::Value IpcSend(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int control = FdArg(env, info[0], "controlFd");
  unsigned transport = TransportArg(env, info[1]);
  ipc_mode mode = ModeArg(env, info[2]);
  ipc_cell cell = CellArg(env, info[3]);
  cell.transport = transport;
  cell.mode = mode;
  auto* job = new IpcJob(env, JobKind::kSend, control);
  job->cell = cell;
  return Launch(env, job);
}

// ipcMemcpy(cell) -> { stop, done: Promise<result> }
Napi::Value IpcMemcpy(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ipc_cell cell = CellArg(env, info[0]);
  auto* job = new IpcJob(env, JobKind::kMemcpy, -1);
  job->cell = cell;
  return Launch(env, job);
}

// ipcServe(controlFd) -> { stop, done: Promise<void> }: the receiving process's loop.
Napi::Value IpcServe(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int control = FdArg(env, info[0], "controlFd");
  return Launch(env, new IpcJob(env, JobKind::kServe, control));
}

// ipcLargestMessage(transport) -> bytes, 0 when the transport has no per-message limit.
Napi::Value IpcLargestMessage(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ipc_error e{};
  int64_t n = ipc_largest_message(TransportArg(env, info[0]), &e);
  if (n < 0) throw Napi::Error(env, ErrorValue(env, e));
  return Napi::Number::New(env, double(n));
}

// ipcUnavailable(transport) -> why it cannot run here, or null.
Napi::Value IpcUnavailable(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  char reason[200];
  if (ipc_unavailable(TransportArg(env, info[0]), reason, sizeof reason)) return Napi::String::New(env, reason);
  return env.Null();
}

// ipcFootprint(transport, mode, messageBytes) -> bytes of memory a cell takes.
Napi::Value IpcFootprint(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  unsigned transport = TransportArg(env, info[0]);
  ipc_mode mode = ModeArg(env, info[1]);
  int64_t bytes = IntegerArg(env, info[2], "messageBytes", IPC_MIN_MESSAGE, kMaxSafeInteger);
  return Napi::Number::New(env, double(ipc_footprint(transport, mode, uint64_t(bytes))));
}

// benchFdMessages(passedFd, durationMs) -> Promise<{ messages, seconds }>: the C floor of the
// fd-message loop (native/ipc/fdmsg.c), run off the JS thread.
class FdMessagesWorker : public Napi::AsyncWorker {
 public:
  FdMessagesWorker(Napi::Env env, int fd, uint64_t duration_ns)
      : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)), fd_(fd), duration_ns_(duration_ns) {
    LiveInc(Live::kNativeJobs);
  }
  ~FdMessagesWorker() override { LiveDec(Live::kNativeJobs); }
  Napi::Promise Promise() { return deferred_.Promise(); }

  void Execute() override { err_ = fdmsg_loop(fd_, duration_ns_, &messages_, &elapsed_ns_, &syscall_); }
  void OnOK() override {
    Napi::Env env = Env();
    if (err_ != 0) {
      deferred_.Reject(ErrnoError(env, err_, syscall_).Value());
      return;
    }
    Napi::Object out = Napi::Object::New(env);
    out.Set("messages", double(messages_));
    out.Set("seconds", double(elapsed_ns_) / 1e9);
    deferred_.Resolve(out);
  }

 private:
  Napi::Promise::Deferred deferred_;
  int fd_;
  uint64_t duration_ns_;
  uint64_t messages_ = 0, elapsed_ns_ = 0;
  const char* syscall_ = "";
  int err_ = 0;
};

static Napi::Value BenchFdMessages(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = FdArg(env, info[0], "passedFd");
  int64_t ms = IntegerArg(env, info[1], "durationMs", 1, 3600 * 1000);
  auto* worker = new FdMessagesWorker(env, fd, uint64_t(ms) * 1000000u);
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

// pingpongEcho(fd) -> Promise<void> (the other end closed), and pingpongLoop(fd, { messageBytes,
// roundTrips?, durationMs }) -> Promise<{ roundTrips, elapsedNs, p50Ns, p99Ns }>: bench api's
// ping-pong group (native/ipc/pingpong.c), off the JS thread.
class PingpongWorker : public Napi::AsyncWorker {
 public:
  PingpongWorker(Napi::Env env, int fd, bool echo)
      : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)), fd_(fd), echo_(echo) {
    LiveInc(Live::kNativeJobs);
    hist_init(&round_trips_);
  }
  ~PingpongWorker() override { LiveDec(Live::kNativeJobs); }
  Napi::Promise Promise() { return deferred_.Promise(); }
  uint64_t bytes = 0, count = 0, duration_ns = 0;

  void Execute() override {
    err_ = echo_ ? pingpong_echo(fd_, &syscall_)
                 : pingpong_loop(fd_, bytes, count, duration_ns, &round_trips_, &done_, &elapsed_ns_, &syscall_);
  }
  void OnOK() override {
    Napi::Env env = Env();
    if (err_ != 0) return deferred_.Reject(ErrnoError(env, err_, syscall_).Value());
    if (echo_) return deferred_.Resolve(env.Undefined());
    static const double wanted[2] = {50, 99};
    uint64_t p[2];
    hist_percentiles(&round_trips_, wanted, 2, p);
    Napi::Object out = Napi::Object::New(env);
    out.Set("roundTrips", double(done_));
    out.Set("elapsedNs", double(elapsed_ns_));
    out.Set("p50Ns", double(p[0]));
    out.Set("p99Ns", double(p[1]));
    deferred_.Resolve(out);
  }

 private:
  Napi::Promise::Deferred deferred_;
  int fd_;
  bool echo_;
  histogram round_trips_;
  uint64_t done_ = 0, elapsed_ns_ = 0;
  const char* syscall_ = "";
  int err_ = 0;
};

static Napi::Value PingpongEcho(const Napi::CallbackInfo& info) {
  auto* worker = new PingpongWorker(info.Env(), FdArg(info.Env(), info[0], "fd"), true);
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

static Napi::Value PingpongLoop(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = FdArg(env, info[0], "fd");
  OptionsArg o(env, info[1], "options");
  if (!o.present()) ThrowArgType(env, "options", "object", info[1]);
  int64_t bytes = IntegerArg(env, o.Get("messageBytes"), "options.messageBytes", 1, 64 << 20);
  int64_t count = o.Integer("roundTrips", 0, kMaxSafeInteger, 0);
  int64_t ms = IntegerArg(env, o.Get("durationMs"), "options.durationMs", 0, 3600 * 1000);
  auto* worker = new PingpongWorker(env, fd, false);  // after every check: a throw leaks nothing
  worker->bytes = uint64_t(bytes);
  worker->count = uint64_t(count);
  worker->duration_ns = uint64_t(ms) * 1000000u;
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

void Init(Napi::Env env, Napi::Object exports) {
  exports.Set("ipcSend", Napi::Function::New(env, IpcSend));
  exports.Set("ipcMemcpy", Napi::Function::New(env, IpcMemcpy));
  exports.Set("ipcServe", Napi::Function::New(env, IpcServe));
  exports.Set("ipcLargestMessage", Napi::Function::New(env, IpcLargestMessage));
  exports.Set("ipcUnavailable", Napi::Function::New(env, IpcUnavailable));
  exports.Set("ipcFootprint", Napi::Function::New(env, IpcFootprint));
  exports.Set("benchFdMessages", Napi::Function::New(env, BenchFdMessages));
  exports.Set("pingpongEcho", Napi::Function::New(env, PingpongEcho));
  exports.Set("pingpongLoop", Napi::Function::New(env, PingpongLoop));
  Napi::Array names = Napi::Array::New(env);
  for (uint32_t i = 0; ipc_transport_name(i) != nullptr; i++) names.Set(i, ipc_transport_name(i));
  exports.Set("ipcTransports", names);
  exports.Set("ipcMinMessage", Napi::Number::New(env, IPC_MIN_MESSAGE));
}

}  // namespace

IOLAB_FEATURE(ipc, Init);

}  // namespace iolab
