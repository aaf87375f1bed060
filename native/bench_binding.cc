// The storage benchmark's only Node-aware file: turns a JS job description into a job_spec,
// runs job_run (native/bench/job.c) on an AsyncProgressWorker, and turns job_result into JS.
#include <cmath>
#include <memory>
#include <string>

#include "errors.h"
#include "vectored.h"
#include "live_objects.h"
#include "registry.h"

extern "C" {
#include "bench/engine.h"
#include "bench/fdmsg.h"
#include "bench/histogram.h"
#include "bench/job.h"
}

namespace iolab {
namespace {

struct Progress {
  int phase;
  uint64_t ios, bytes, elapsed_ns;
};

const char* const kPhaseNames[] = {"layout", "ramp", "run", "verify"};

Napi::Object HistToJs(Napi::Env env, const histogram& h) {
  Napi::Object o = Napi::Object::New(env);
  uint64_t values[HIST_NPERCENTILES];
  hist_percentiles(&h, hist_percentile_list, HIST_NPERCENTILES, values);
  o.Set("n", double(h.n));
  o.Set("min", double(h.n ? h.min : 0));
  o.Set("max", double(h.max));
  o.Set("mean", h.n ? h.mean : 0.0);
  o.Set("stddev", hist_stddev(&h));
  Napi::Array p = Napi::Array::New(env, HIST_NPERCENTILES);
  for (uint32_t i = 0; i < HIST_NPERCENTILES; i++) p.Set(i, double(values[i]));
  o.Set("percentiles", p);
  return o;
}

Napi::Object DirToJs(Napi::Env env, const dir_stats& d, bool async) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("ios", double(d.ios));
  o.Set("bytes", double(d.bytes));
  o.Set("slat", async ? HistToJs(env, d.slat) : Napi::Value(env.Null()));
  o.Set("clat", HistToJs(env, d.clat));
  o.Set("lat", HistToJs(env, d.lat));
  return o;
}

class BenchWorker : public Napi::AsyncProgressWorker<Progress> {
 public:
  BenchWorker(Napi::Env env, Napi::Function on_progress)
      : Napi::AsyncProgressWorker<Progress>(env), deferred_(Napi::Promise::Deferred::New(env)),
        result_(new job_result()) {
    if (!on_progress.IsEmpty()) on_progress_ = Napi::Persistent(on_progress);
    LiveInc(Live::kNativeJobs);
  }
  ~BenchWorker() override = default;

  job_spec spec{};
  std::string filename, engine;
  Napi::Promise Promise() { return deferred_.Promise(); }

 protected:
  void Execute(const ExecutionProgress& progress) override {
    spec.filename = filename.c_str();
    spec.engine = engine.c_str();
    progress_ = &progress;
    job_run(&spec, result_.get(), &BenchWorker::OnNativeProgress, this);
    progress_ = nullptr;
  }

  void OnProgress(const Progress* data, size_t count) override {
    if (on_progress_.IsEmpty() || count == 0) return;
    Napi::Env env = Env();
    Napi::HandleScope scope(env);
    Napi::Object o = Napi::Object::New(env);
    o.Set("phase", kPhaseNames[data->phase]);
    o.Set("ios", double(data->ios));
    o.Set("bytes", double(data->bytes));
    o.Set("elapsedMs", double(data->elapsed_ns) / 1e6);
    on_progress_.Call({o});  // an exception here surfaces as an uncaught exception, like any callback
  }

  void OnOK() override {
    Napi::Env env = Env();
    LiveDec(Live::kNativeJobs);
    const job_result& r = *result_;
    if (r.error.kind != JOB_OK) {
      deferred_.Reject(ErrorValue(env, r.error));
      return;
    }
    Napi::Object o = Napi::Object::New(env);
    o.Set("engine", engine);
    if (r.unavailable) o.Set("unavailable", std::string(r.reason));
    o.Set("async", Napi::Boolean::New(env, r.async != 0));
    o.Set("size", double(r.size));
    o.Set("laidOutBytes", double(r.laid_out_bytes));
    o.Set("runtimeNs", double(r.runtime_ns));
    o.Set("usrSec", r.usr_sec);
    o.Set("sysSec", r.sys_sec);
    o.Set("verifiedBlocks", double(r.verified_blocks));
    o.Set("read", DirToJs(env, r.dir[DDIR_READ], r.async != 0));
    o.Set("write", DirToJs(env, r.dir[DDIR_WRITE], r.async != 0));
    deferred_.Resolve(o);
  }

  void OnError(const Napi::Error& e) override {
    LiveDec(Live::kNativeJobs);
    deferred_.Reject(e.Value());
  }

 private:
  static void OnNativeProgress(void* arg, job_phase phase, uint64_t ios, uint64_t bytes, uint64_t elapsed_ns) {
    auto* self = static_cast<BenchWorker*>(arg);
    if (self->progress_ == nullptr || self->on_progress_.IsEmpty()) return;
    Progress p{int(phase), ios, bytes, elapsed_ns};
    self->progress_->Send(&p, 1);
  }

  Napi::Value ErrorValue(Napi::Env env, const job_error& e) {
    if (e.kind == JOB_ERRNO) {
      Napi::Error err = ErrnoError(env, e.err, e.syscall, filename.c_str());
      if (e.offset != UINT64_MAX) {
        Napi::Object obj = err.Value();
        obj.Set("message", obj.Get("message").As<Napi::String>().Utf8Value() + " at offset " + std::to_string(e.offset));
        obj.Set("offset", double(e.offset));
      }
      return err.Value();
    }
    Napi::Error err = Napi::Error::New(env, e.message);
    err.Value().Set("code", e.kind == JOB_VERIFY ? "ERR_IOLAB_VERIFY" : "ERR_IOLAB_BENCH");
    if (e.kind == JOB_VERIFY) err.Value().Set("offset", double(e.offset));
    return err.Value();
  }

  Napi::Promise::Deferred deferred_;
  Napi::FunctionReference on_progress_;
  std::unique_ptr<job_result> result_;
  const ExecutionProgress* progress_ = nullptr;
};

double NumberField(Napi::Object o, const char* name, double min, double max, double fallback) {
  Napi::Value v = o.Get(name);
  if (v.IsUndefined()) return fallback;
  if (!v.IsNumber()) ThrowTypeError(o.Env(), "ERR_INVALID_ARG_TYPE", std::string("job.") + name + " must be a number");
  double d = v.As<Napi::Number>().DoubleValue();
  if (!(d >= min && d <= max) || std::floor(d) != d)
    ThrowRangeError(o.Env(), "ERR_OUT_OF_RANGE",
                    std::string("job.") + name + " must be a whole number in [" + std::to_string((long long)min) +
                        ", " + std::to_string((long long)max) + "], got " + v.ToString().Utf8Value());
  return d;
}

bool BoolField(Napi::Object o, const char* name) {
  Napi::Value v = o.Get(name);
  return !v.IsUndefined() && v.ToBoolean().Value();
}

std::string StringField(Napi::Object o, const char* name) {
  Napi::Value v = o.Get(name);
  if (!v.IsString()) ThrowTypeError(o.Env(), "ERR_INVALID_ARG_TYPE", std::string("job.") + name + " must be a string");
  return v.As<Napi::String>().Utf8Value();
}

rw_mode ParseRw(Napi::Env env, const std::string& rw) {
  if (rw == "read") return RW_READ;
  if (rw == "write") return RW_WRITE;
  if (rw == "randread") return RW_RANDREAD;
  if (rw == "randwrite") return RW_RANDWRITE;
  if (rw == "randrw") return RW_RANDRW;
  if (rw == "readwrite" || rw == "rw") return RW_READWRITE;
  ThrowTypeError(env, "ERR_INVALID_ARG_VALUE", "unknown rw '" + rw + "'");
}

// benchRun(job, onProgress?) -> Promise<result>
Napi::Value BenchRun(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsObject()) ThrowTypeError(env, "ERR_INVALID_ARG_TYPE", "job must be an object");
  Napi::Object job = info[0].As<Napi::Object>();
  Napi::Function on_progress;
  if (info.Length() > 1 && !info[1].IsUndefined()) {
    if (!info[1].IsFunction()) ThrowTypeError(env, "ERR_INVALID_ARG_TYPE", "onProgress must be a function");
    on_progress = info[1].As<Napi::Function>();
  }
  std::string filename = StringField(job, "filename");
  std::string engine = StringField(job, "engine");
  if (engine_find(engine.c_str()) == nullptr)
    ThrowTypeError(env, "ERR_INVALID_ARG_VALUE", "unknown ioengine '" + engine + "'");
  job_spec s{};
  s.rw = ParseRw(env, StringField(job, "rw"));
  s.rwmixread = unsigned(NumberField(job, "rwmixread", 0, 100, 50));
  s.bs = unsigned(NumberField(job, "bs", 1, 1 << 30, 4096));
  s.iodepth = unsigned(NumberField(job, "iodepth", 1, 65536, 1));
  s.numjobs = unsigned(NumberField(job, "numjobs", 1, 1024, 1));
  s.iodepth_batch = unsigned(NumberField(job, "iodepthBatch", 1, 65536, 1));
  s.size = uint64_t(NumberField(job, "size", 1, 9007199254740991.0, 0));
  s.runtime_ns = uint64_t(NumberField(job, "runtimeMs", 0, 1e12, 0)) * 1000000ull;
  s.ramp_ns = uint64_t(NumberField(job, "rampMs", 0, 1e12, 0)) * 1000000ull;
  s.number_ios = uint64_t(NumberField(job, "numberIos", 0, 9007199254740991.0, 0));
  s.seed = uint64_t(NumberField(job, "seed", 0, 9007199254740991.0, 0));
  s.time_based = BoolField(job, "timeBased");
  s.direct = BoolField(job, "direct");
  s.invalidate = BoolField(job, "invalidate");
  s.fixedbufs = BoolField(job, "fixedbufs");
  s.registerfiles = BoolField(job, "registerfiles");
  s.sqthread_poll = BoolField(job, "sqthreadPoll");
  s.verify = BoolField(job, "verify");
  s.force = BoolField(job, "force");
  if (s.size == 0) ThrowRangeError(env, "ERR_OUT_OF_RANGE", "job.size must be > 0");
  if (s.time_based && s.runtime_ns == 0)
    ThrowRangeError(env, "ERR_OUT_OF_RANGE", "job.timeBased needs job.runtimeMs > 0");
  if (s.verify && s.bs % 8 != 0) ThrowRangeError(env, "ERR_OUT_OF_RANGE", "verify needs bs to be a multiple of 8");

  auto* worker = new BenchWorker(env, on_progress);
  worker->spec = s;
  worker->filename = filename;
  worker->engine = engine;
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

// benchHistogram(samples) -> the statistics the runner reports for exactly these samples
// (lets tests check the percentiles against a known sample set).
Napi::Value BenchHistogram(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsArray()) ThrowTypeError(env, "ERR_INVALID_ARG_TYPE", "samples must be an array of numbers");
  Napi::Array a = info[0].As<Napi::Array>();
  auto h = std::make_unique<histogram>();
  hist_init(h.get());
  for (uint32_t i = 0; i < a.Length(); i++) {
    Napi::Value v = a.Get(i);
    double d = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : -1;
    if (!(d >= 0 && d <= 9007199254740991.0))
      ThrowRangeError(env, "ERR_OUT_OF_RANGE", "samples must be whole numbers >= 0");
    hist_add(h.get(), uint64_t(d));
  }
  return HistToJs(env, *h);
}

// benchMarkWritten(filename): another program (fio) wrote into an iolab file: its verify
// pattern can no longer be trusted, so the next --verify read lays it out again.
Napi::Value BenchMarkWritten(const Napi::CallbackInfo& info) {
  if (!info[0].IsString()) ThrowTypeError(info.Env(), "ERR_INVALID_ARG_TYPE", "filename must be a string");
  layout_mark_written(info[0].As<Napi::String>().Utf8Value().c_str());
  return info.Env().Undefined();
}

// benchFdMessages(passedFd, durationMs) -> Promise<{ messages, seconds }>: the C floor of the
// fd-message loop (native/bench/fdmsg.c), run off the JS thread.
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

Napi::Value BenchFdMessages(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = FdArg(env, info[0], "passedFd");
  int64_t ms = IntegerArg(env, info[1], "durationMs", 1, 3600 * 1000);
  auto* worker = new FdMessagesWorker(env, fd, uint64_t(ms) * 1000000u);
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

void Init(Napi::Env env, Napi::Object exports) {
  exports.Set("benchRun", Napi::Function::New(env, BenchRun));
  exports.Set("benchFdMessages", Napi::Function::New(env, BenchFdMessages));
  exports.Set("benchMarkWritten", Napi::Function::New(env, BenchMarkWritten));
  exports.Set("benchHistogram", Napi::Function::New(env, BenchHistogram));
  Napi::Array names = Napi::Array::New(env);
  for (uint32_t i = 0; engine_names[i] != nullptr; i++) names.Set(i, engine_names[i]);
  exports.Set("benchEngines", names);
  Napi::Array plist = Napi::Array::New(env, HIST_NPERCENTILES);
  for (uint32_t i = 0; i < HIST_NPERCENTILES; i++) plist.Set(i, hist_percentile_list[i]);
  exports.Set("benchPercentileList", plist);
}

}  // namespace

IOLAB_FEATURE(bench, Init);

}  // namespace iolab
