// The storage benchmark's binding: turns JS job descriptions into job_specs (bench_parse.cc)
// (engine options read through the engine's own option table), runs them at the same time with
// job_run_group (native/bench/job.c) on an AsyncProgressWorker, and turns job_results into JS.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "args.h"
#include "errors.h"
#include "live_objects.h"
#include "registry.h"
#include "bench_parse.h"

extern "C" {
#include "bench/engine.h"
#include <fcntl.h>

#include "bench/job.h"
#include "stats/histogram.h"
}

namespace iolab {
namespace {

struct Progress {
  int phase;
  uint64_t ios, bytes, elapsed_ns;
};

const char* const kPhaseNames[] = {"layout", "ramp", "run", "verify"};

// fio's latency_ns / latency_us / latency_ms bucket edges, in ns: below 2, 4, 10 ... 1000 ns,
// then the same in us, then ms up to 2000 (the last count is ">= 2000 ms").
const uint64_t kLatencyEdges[] = {
    2, 4, 10, 20, 50, 100, 250, 500, 750, 1000,
    2000, 4000, 10000, 20000, 50000, 100000, 250000, 500000, 750000, 1000000,
    2000000, 4000000, 10000000, 20000000, 50000000, 100000000, 250000000, 500000000, 750000000,
    1000000000, 2000000000};
constexpr int kNumEdges = sizeof(kLatencyEdges) / sizeof(kLatencyEdges[0]);

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
  uint64_t bins[kNumEdges + 1];
  hist_bins(&h, kLatencyEdges, kNumEdges, bins);
  Napi::Array b = Napi::Array::New(env, kNumEdges + 1);
  for (uint32_t i = 0; i <= kNumEdges; i++) b.Set(i, double(bins[i]));
  o.Set("bins", b);
  // every bucket that counted something, [bucket, count, ...] (fio's json+ bins)
  Napi::Array buckets = Napi::Array::New(env);
  uint32_t n = 0;
  for (uint32_t i = 0; i < HIST_BUCKETS && h.n != 0; i++) {
    if (h.counts[i] == 0) continue;
    buckets.Set(n++, double(i));
    buckets.Set(n++, double(h.counts[i]));
  }
  o.Set("buckets", buckets);
  return o;
}

Napi::Object SamplesToJs(Napi::Env env, const sample_stats& s) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("n", double(s.n));
  o.Set("min", s.min);
  o.Set("max", s.max);
  o.Set("mean", s.mean);
  o.Set("stddev", s.n > 1 ? std::sqrt(s.m2 / double(s.n - 1)) : 0.0);
  return o;
}

Napi::Object DirToJs(Napi::Env env, const dir_stats& d, bool async) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("ios", double(d.ios));
  o.Set("bytes", double(d.bytes));
  o.Set("slat", async ? HistToJs(env, d.slat) : Napi::Value(env.Null()));
  o.Set("clat", HistToJs(env, d.clat));
  o.Set("lat", HistToJs(env, d.lat));
  o.Set("bwKiBSamples", SamplesToJs(env, d.bw_kib));
  o.Set("iopsSamples", SamplesToJs(env, d.iops));
  return o;
}

Napi::Array CountsToJs(Napi::Env env, const uint64_t* counts) {
  Napi::Array a = Napi::Array::New(env, DEPTH_BUCKETS);
  for (uint32_t i = 0; i < DEPTH_BUCKETS; i++) a.Set(i, double(counts[i]));
  return a;
}

class BenchWorker : public Napi::AsyncProgressWorker<Progress> {
 public:
  BenchWorker(Napi::Env env, Napi::Function on_progress, bool single)
      : Napi::AsyncProgressWorker<Progress>(env), deferred_(Napi::Promise::Deferred::New(env)), single_(single) {
    if (!on_progress.IsEmpty()) on_progress_ = Napi::Persistent(on_progress);
    LiveInc(Live::kNativeJobs);
  }
  ~BenchWorker() override {
    for (size_t i = 0; results_ && i < jobs.size(); i++)
      for (int k = 0; k < LOG_KINDS; k++) log_text_free(&results_[i].logs[k]);
  }

  std::vector<ParsedJob> jobs;
  Napi::Promise Promise() { return deferred_.Promise(); }

 protected:
  void Execute(const ExecutionProgress& progress) override {
    specs_.resize(jobs.size());
    for (size_t i = 0; i < jobs.size(); i++) {
      specs_[i] = jobs[i].spec;
      specs_[i].filename = jobs[i].filename.c_str();
      jobs[i].filename_ptrs.clear();
      for (const std::string& f : jobs[i].filenames) jobs[i].filename_ptrs.push_back(f.c_str());
      specs_[i].filenames = jobs[i].filename_ptrs.data();
      specs_[i].nfiles = unsigned(jobs[i].filename_ptrs.size());
      specs_[i].engine_options = jobs[i].engine_options.get();
      specs_[i].verify_pattern = reinterpret_cast<const unsigned char*>(jobs[i].verify_pattern.data());
      specs_[i].verify_pattern_len = unsigned(jobs[i].verify_pattern.size());
    }
    results_.reset(new job_result[jobs.size()]());
    progress_ = &progress;
    job_run_group(specs_.data(), unsigned(specs_.size()), results_.get(), &BenchWorker::OnNativeProgress, this);
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
    for (size_t i = 0; i < jobs.size(); i++) {
      if (results_[i].error.kind != JOB_OK) {
        deferred_.Reject(ErrorValue(env, results_[i].error, jobs[i].filename));
        return;
      }
    }
    // fio's log files' text, per job (a group_reporting entry has its jobs' logs, one each)
    std::vector<Napi::Value> logs(jobs.size());
    for (size_t i = 0; i < jobs.size(); i++) logs[i] = LogsToJs(env, results_[i], specs_[i].log_mask);
    // each entry: its first job's result, the others of the entry merged into it
    uint32_t entries = 0;
    for (const ParsedJob& j : jobs) entries = std::max(entries, j.entry + 1);
    std::vector<int> first(entries, -1);
    for (size_t i = 0; i < jobs.size(); i++) {
      int& f = first[jobs[i].entry];
      if (f < 0) f = int(i);
      else job_result_merge(&results_[f], &results_[i]);
    }
    auto entry = [&](uint32_t e) {
      Napi::Object o = ResultToJs(env, results_[first[e]], specs_[first[e]]);
      Napi::Array own = Napi::Array::New(env);
      for (size_t i = 0; i < jobs.size(); i++)
        if (jobs[i].entry == e && !logs[i].IsUndefined()) own.Set(own.Length(), logs[i]);
      if (own.Length() > 0) o.Set("logs", own);
      return o;
    };
    if (single_) {
      deferred_.Resolve(entry(0));
      return;
    }
    Napi::Array out = Napi::Array::New(env, entries);
    for (uint32_t e = 0; e < entries; e++) out.Set(e, first[e] < 0 ? env.Undefined() : Napi::Value(entry(e)));
    deferred_.Resolve(out);
  }

  void OnError(const Napi::Error& e) override {
    LiveDec(Live::kNativeJobs);
    deferred_.Reject(e.Value());
  }

 private:
  // { lat, clat, slat, bw, iops }: the text of each log the job keeps (undefined: none kept)
  static Napi::Value LogsToJs(Napi::Env env, job_result& r, unsigned mask) {
    static const char* const kNames[LOG_KINDS] = {"lat", "clat", "slat", "bw", "iops"};
    if (mask == 0) return env.Undefined();
    Napi::Object o = Napi::Object::New(env);
    for (int k = 0; k < LOG_KINDS; k++) {
      if (mask & (1u << k)) o.Set(kNames[k], Napi::String::New(env, r.logs[k].buf ? r.logs[k].buf : "", r.logs[k].len));
      log_text_free(&r.logs[k]);
    }
    return o;
  }

  static Napi::Object ResultToJs(Napi::Env env, const job_result& r, const job_spec& spec) {
    Napi::Object o = Napi::Object::New(env);
    o.Set("engine", spec.ops->name);
    if (r.unavailable) o.Set("unavailable", std::string(r.reason));
    o.Set("async", Napi::Boolean::New(env, r.async != 0));
    o.Set("interrupted", Napi::Boolean::New(env, r.interrupted != 0));
    o.Set("layoutRemoved", Napi::Boolean::New(env, r.layout_removed != 0));
    o.Set("size", double(r.size));
    o.Set("laidOutBytes", double(r.laid_out_bytes));
    o.Set("runtimeNs", double(r.runtime_ns));
    o.Set("jobRuntimeNs", double(r.job_runtime_ns));
    o.Set("elapsedNs", double(r.elapsed_ns));
    o.Set("startUnixMs", double(r.start_unix_ms));
    o.Set("usrSec", r.usr_sec);
    o.Set("sysSec", r.sys_sec);
    o.Set("ctx", double(r.ctx));
    o.Set("majf", double(r.majf));
    o.Set("minf", double(r.minf));
    o.Set("verifiedBlocks", double(r.verified_blocks));
    o.Set("read", DirToJs(env, r.dir[DDIR_READ], r.async != 0));
    o.Set("write", DirToJs(env, r.dir[DDIR_WRITE], r.async != 0));
    Napi::Object sync = Napi::Object::New(env);
    sync.Set("ios", double(r.syncs));
    sync.Set("lat", HistToJs(env, r.sync_lat));
    o.Set("sync", sync);
    if (r.latency_depth != 0) o.Set("latencyDepth", double(r.latency_depth));
    if (r.ss.n != 0) {
      Napi::Object ss = Napi::Object::New(env);
      ss.Set("attained", r.ss.attained != 0);
      ss.Set("criterion", r.ss.criterion);
      ss.Set("deviation", r.ss.deviation);
      ss.Set("slope", r.ss.slope);
      Napi::Array iops = Napi::Array::New(env, r.ss.n), bw = Napi::Array::New(env, r.ss.n), lat = Napi::Array::New(env, r.ss.n);
      for (uint32_t i = 0; i < r.ss.n; i++) {
        iops.Set(i, double(r.ss.iops[i]));
        bw.Set(i, double(r.ss.bw[i]));
        lat.Set(i, double(r.ss.lat[i]));
      }
      ss.Set("iops", iops);
      ss.Set("bw", bw);
      ss.Set("latNs", lat);
      o.Set("steadystate", ss);
    }
    Napi::Object depth = Napi::Object::New(env);
    depth.Set("level", CountsToJs(env, r.depth.level));
    depth.Set("submit", CountsToJs(env, r.depth.submit));
    depth.Set("complete", CountsToJs(env, r.depth.complete));
    o.Set("depth", depth);
    return o;
  }

  static void OnNativeProgress(void* arg, job_phase phase, uint64_t ios, uint64_t bytes, uint64_t elapsed_ns) {
    auto* self = static_cast<BenchWorker*>(arg);
    if (self->progress_ == nullptr || self->on_progress_.IsEmpty()) return;
    Progress p{int(phase), ios, bytes, elapsed_ns};
    self->progress_->Send(&p, 1);
  }

  static Napi::Value ErrorValue(Napi::Env env, const job_error& e, const std::string& filename) {
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
  bool single_;
  std::vector<job_spec> specs_;
  std::unique_ptr<job_result[]> results_;
  const ExecutionProgress* progress_ = nullptr;
};

Napi::Function ProgressArg(const Napi::CallbackInfo& info) {
  if (info.Length() > 1 && !info[1].IsUndefined()) {
    if (!info[1].IsFunction()) ThrowTypeError(info.Env(), "ERR_INVALID_ARG_TYPE", "onProgress must be a function");
    return info[1].As<Napi::Function>();
  }
  return Napi::Function();
}

// benchRun(job, onProgress?) -> Promise<result>, and benchRunGroup(jobs, onProgress?) ->
// Promise<result[]>: the jobs at the same time, a result per entry (jobs[i].entry, default i),
// the jobs of one entry merged into one result, as fio's group_reporting sums them.
Napi::Value Run(const Napi::CallbackInfo& info, bool single) {
  Napi::Env env = info.Env();
  std::vector<ParsedJob> jobs(1);
  if (single) {
    ParseJob(env, info[0], "job", 0, &jobs[0]);
    jobs[0].entry = 0;
  } else {
    if (!info[0].IsArray() || info[0].As<Napi::Array>().Length() == 0 || info[0].As<Napi::Array>().Length() > 1024)
      ThrowTypeError(env, "ERR_INVALID_ARG_TYPE", "jobs must be an array of 1 to 1024 jobs");
    Napi::Array list = info[0].As<Napi::Array>();
    jobs.resize(list.Length());
    for (uint32_t i = 0; i < list.Length(); i++) ParseJob(env, list.Get(i), "jobs[" + std::to_string(i) + "]", i, &jobs[i]);
  }
  auto* worker = new BenchWorker(env, ProgressArg(info), single);
  worker->jobs = std::move(jobs);
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

Napi::Value BenchRun(const Napi::CallbackInfo& info) { return Run(info, true); }
Napi::Value BenchRunGroup(const Napi::CallbackInfo& info) { return Run(info, false); }

// The engine table as JS: names, flags, depth limit and option tables (the CLI builds its
// engine options and help from it).
Napi::Array EnginesToJs(Napi::Env env) {
  Napi::Array list = Napi::Array::New(env);
  for (uint32_t i = 0; engine_at(i) != nullptr; i++) {
    const engine_ops* e = engine_at(i);
    Napi::Object o = Napi::Object::New(env);
    o.Set("name", e->name);
    if (e->alias != nullptr) o.Set("alias", e->alias);
    o.Set("async", Napi::Boolean::New(env, (e->flags & ENGINE_ASYNC) != 0));
    o.Set("testOnly", Napi::Boolean::New(env, (e->flags & ENGINE_TEST_ONLY) != 0));
    o.Set("namedOnly", Napi::Boolean::New(env, (e->flags & ENGINE_NAMED) != 0));
    o.Set("diskless", Napi::Boolean::New(env, (e->flags & ENGINE_DISKLESS) != 0));
    if (e->max_depth != 0) {
      o.Set("maxDepth", double(e->max_depth));
      o.Set("maxDepthReason", e->max_depth_why);
    }
    Napi::Array opts = Napi::Array::New(env);
    uint32_t n = 0;
    for (const engine_option* opt = e->options; opt != nullptr && opt->name != nullptr; opt++) {
      Napi::Object so = Napi::Object::New(env);
      so.Set("name", opt->name);
      so.Set("type", opt->type == ENGINE_OPT_BOOL ? "bool" : "uint");
      so.Set("help", opt->help);
      so.Set("default", double(opt->def));
      so.Set("min", double(opt->min));
      so.Set("max", double(opt->max));
      opts.Set(n++, so);
    }
    o.Set("options", opts);
    list.Set(i, o);
  }
  return list;
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
  layout_mark_written(info[0].As<Napi::String>().Utf8Value().c_str(), 0);
  return info.Env().Undefined();
}

void Init(Napi::Env env, Napi::Object exports) {
  exports.Set("benchRun", Napi::Function::New(env, BenchRun));
  exports.Set("benchRunGroup", Napi::Function::New(env, BenchRunGroup));
  exports.Set("benchMarkWritten", Napi::Function::New(env, BenchMarkWritten));
  exports.Set("benchHistogram", Napi::Function::New(env, BenchHistogram));
  exports.Set("benchEngines", EnginesToJs(env));
  Napi::Array plist = Napi::Array::New(env, HIST_NPERCENTILES);
  for (uint32_t i = 0; i < HIST_NPERCENTILES; i++) plist.Set(i, hist_percentile_list[i]);
  exports.Set("benchPercentileList", plist);
}

}  // namespace

IOLAB_FEATURE(bench, Init);

}  // namespace iolab
