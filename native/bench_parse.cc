// The storage benchmark's job descriptions: one JS job object -> its job_spec (engine options read
// through the engine's own option table), every field checked before a job runs.
#include "bench_parse.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "args.h"
#include "errors.h"

extern "C" {
#include <fcntl.h>
}

namespace iolab {

static rw_mode ParseRw(Napi::Env env, const std::string& rw) {
  static const std::pair<const char*, rw_mode> kModes[] = {{"read", RW_READ}, {"write", RW_WRITE}, {"randread", RW_RANDREAD},
      {"randwrite", RW_RANDWRITE}, {"randrw", RW_RANDRW}, {"readwrite", RW_READWRITE}, {"rw", RW_READWRITE}};
  for (const auto& [name, mode] : kModes) if (rw == name) return mode;
  ThrowTypeError(env, "ERR_INVALID_ARG_VALUE", "unknown rw '" + rw + "'");
}

// The engine's options struct, filled from its option table: job.engineOptions[name] (a number,
// or a boolean for a flag), or the table's default. Keys of other engines' options are ignored:
// one options object serves every engine of a run.
static std::unique_ptr<char[]> EngineOptions(Napi::Env env, const engine_ops* ops, Napi::Value given) {
  std::unique_ptr<char[]> opts(new char[ops->options_size > 0 ? ops->options_size : 1]());
  engine_default_options(ops, opts.get());
  OptionsArg o(env, given, "job.engineOptions");
  for (const engine_option* opt = ops->options; opt != nullptr && opt->name != nullptr; opt++) {
    Napi::Value v(env, o.Get(opt->name));
    unsigned value = opt->type == ENGINE_OPT_BOOL && v.IsBoolean() ? unsigned(o.Bool(opt->name, false))
                                                                   : unsigned(o.Integer(opt->name, opt->min, opt->max, opt->def));
    *reinterpret_cast<unsigned*>(opts.get() + opt->offset) = value;
  }
  return opts;
}

// [a, b, a, b, ...] (bssplit's sizes and percents, zoned's percents) into two arrays; their count.
static uint32_t PairsArg(Napi::Env env, napi_value value, const char* name, uint32_t max, int64_t max_a, unsigned* a, unsigned* b) {
  Napi::Value v(env, value);
  if (!v.IsArray()) return 0;
  Napi::Array arr = v.As<Napi::Array>();
  uint32_t n = std::min<uint32_t>(arr.Length() / 2, max);
  for (uint32_t i = 0; i < n; i++) {
    a[i] = unsigned(IntegerArg(env, arr.Get(2 * i), name, 0, max_a));
    b[i] = unsigned(IntegerArg(env, arr.Get(2 * i + 1), name, 0, 100));
  }
  return n;
}

// fio's zones of one direction, [access %, size, ...]: the size a percent of the blocks, or bytes (abs).
static void ZonesArg(Napi::Env env, napi_value value, const char* name, bool abs, job_spec* s, int ddir) {
  Napi::Value v(env, value);
  if (!v.IsArray()) return;
  Napi::Array arr = v.As<Napi::Array>();
  uint32_t n = std::min<uint32_t>(arr.Length() / 2, DIST_MAX_ZONES);
  for (uint32_t i = 0; i < n; i++) {
    s->zone_access_pct[ddir][i] = unsigned(IntegerArg(env, arr.Get(2 * i), name, 0, 100));
    s->zone_size[ddir][i] = uint64_t(IntegerArg(env, arr.Get(2 * i + 1), name, 0, abs ? kMaxSafeInteger : 100));
  }
  s->nzones[ddir] = n;
}

void ParseJob(Napi::Env env, Napi::Value value, const std::string& what, uint32_t entry_default, ParsedJob* out) {
  if (!value.IsObject()) ThrowTypeError(env, "ERR_INVALID_ARG_TYPE", what + " must be an object");
  OptionsArg job(env, value, what.c_str());
  std::string filename = StringArg(env, job.Get("filename"), (what + ".filename").c_str());
  std::string engine = StringArg(env, job.Get("engine"), (what + ".engine").c_str());
  const engine_ops* ops = engine_find(engine.c_str());
  if (ops == nullptr) ThrowTypeError(env, "ERR_INVALID_ARG_VALUE", "unknown ioengine '" + engine + "'");
  job_spec s{};
  s.ops = ops;
  s.rw = ParseRw(env, StringArg(env, job.Get("rw"), (what + ".rw").c_str()));
  s.rwmixread = unsigned(job.Integer("rwmixread", 0, 100, 50));
  s.bs = unsigned(job.Integer("bs", 1, 1 << 30, 4096));
  s.iodepth = unsigned(job.Integer("iodepth", 1, 65536, 1));
  if (ops->max_depth != 0 && s.iodepth > ops->max_depth)
    ThrowRangeError(env, "ERR_OUT_OF_RANGE", what + ".iodepth " + std::to_string(s.iodepth) + " is above " +
                                                 ops->max_depth_why + ": " + std::to_string(ops->max_depth));
  s.numjobs = unsigned(job.Integer("numjobs", 1, 1024, 1));
  s.clone = unsigned(job.Integer("clone", 0, 1 << 20, 0));
  s.iodepth_batch = unsigned(job.Integer("iodepthBatch", 1, 65536, 1));
  s.iodepth_batch_complete_min = unsigned(job.Integer("iodepthBatchCompleteMin", 0, 65536, 1));
  s.iodepth_batch_complete_max = unsigned(job.Integer("iodepthBatchCompleteMax", 0, 65536, 0));
  s.size = uint64_t(job.Integer("size", 1, kMaxSafeInteger, 0));
  s.runtime_ns = uint64_t(job.Integer("runtimeMs", 0, int64_t(1e12), 0)) * 1000000ull;
  s.ramp_ns = uint64_t(job.Integer("rampMs", 0, int64_t(1e12), 0)) * 1000000ull;
  s.number_ios = uint64_t(job.Integer("numberIos", 0, kMaxSafeInteger, 0));
  s.randseed = uint64_t(job.Integer("randseed", 0, kMaxSafeInteger, 0));
  s.fadvise_hint = fadvise_hint(job.Integer("fadviseHint", 0, 3, FADVISE_BY_RW));
  s.layout_write_cap = uint32_t(job.Integer("layoutWriteCap", 0, 1 << 30, 0));
  s.time_based = job.Bool("timeBased", false);
  s.direct = job.Bool("direct", false);
  s.invalidate = job.Bool("invalidate", false);
  s.verify = job.Bool("verify", false);
  s.force = job.Bool("force", false);
  s.refill_buffers = job.Bool("refillBuffers", false);
  s.norandommap = job.Bool("norandommap", false);
  s.size_is_default = job.Bool("sizeIsDefault", false);
  s.number_ios_wraps = job.Bool("numberIosWraps", false);
  s.file_size = uint64_t(job.Integer("fileSize", 0, kMaxSafeInteger, 0));
  s.gtod_reduce = job.Bool("gtodReduce", false);
  s.end_fsync = job.Bool("endFsync", false);
  s.end_syncfs = job.Bool("endSyncfs", false);
  s.ramp_bytes = uint64_t(job.Integer("rampBytes", 0, kMaxSafeInteger, 0));
  s.ramp_group = job.Bool("rampGroup", false);
  s.exit_what = unsigned(job.Integer("exitWhat", EXIT_NONE, EXIT_RUNNING, EXIT_NONE));
  s.groupid = unsigned(job.Integer("groupid", 0, UINT32_MAX, 0));
  s.ioprio = int(job.Integer("ioprio", -1, 0xffff, -1));
  s.log_prio = job.Bool("logPrio", false);
  s.log_offset = job.Bool("logOffset", false);
  s.verify_backlog = unsigned(job.Integer("verifyBacklog", 0, 1 << 30, 0));
  s.verify_backlog_batch = unsigned(job.Integer("verifyBacklogBatch", 0, 1 << 30, 0));
  s.verify_dump = job.Bool("verifyDump", false);
  s.dedupe_pct = unsigned(job.Integer("dedupePercentage", 0, 100, 0));
  s.dedupe_mode = unsigned(job.Integer("dedupeMode", DEDUPE_REPEAT, DEDUPE_WORKING_SET, DEDUPE_REPEAT));
  s.dedupe_ws_pct = unsigned(job.Integer("dedupeWorkingSetPercentage", 0, 100, 5));
  s.dedupe_global = job.Bool("dedupeGlobal", false);
  s.dedupe_index = unsigned(job.Integer("dedupeIndex", 0, 1 << 20, 0));
  s.dedupe_jobs = unsigned(job.Integer("dedupeJobs", 1, 1 << 20, 1));
  s.compress_pct = unsigned(job.Integer("compressPercentage", 0, 100, 0));
  s.compress_chunk = unsigned(job.Integer("compressChunk", 0, 1 << 30, 512));
  s.file_service = file_service(job.Integer("fileService", FS_ROUNDROBIN, FS_NORMAL, FS_ROUNDROBIN));
  s.file_service_nr = unsigned(job.Integer("fileServiceNr", 1, 1 << 30, 1));
  s.file_service_param = double(job.Integer("fileServiceParamMicros", 0, int64_t(1e15), 0)) / 1e6;
  s.file_service_center = double(job.Integer("fileServiceCenterMicros", -1000000, 1000000, -1000000)) / 1e6;
  s.atomic = job.Bool("atomic", false);
  // fio's cmdprio_bssplit: [ddir, bs, percent, prio (-1: the engine's cmdprio), ...]
  Napi::Value split(env, job.Get("cmdprioBssplit"));
  if (split.IsArray()) {
    Napi::Array a = split.As<Napi::Array>();
    s.nprio_split = std::min<uint32_t>(a.Length() / 4, 64);
    for (uint32_t i = 0; i < s.nprio_split; i++) {
      s.prio_split[i].ddir = int(IntegerArg(env, a.Get(4 * i), "job.cmdprioBssplit", 0, 1));
      s.prio_split[i].bs = uint32_t(IntegerArg(env, a.Get(4 * i + 1), "job.cmdprioBssplit", 1, 1 << 30));
      s.prio_split[i].perc = unsigned(IntegerArg(env, a.Get(4 * i + 2), "job.cmdprioBssplit", 0, 100));
      s.prio_split[i].prio = int(IntegerArg(env, a.Get(4 * i + 3), "job.cmdprioBssplit", -1, 0xffff));
    }
  }
  // fio's steadystate: the criterion's bits (ss_kind), its limit in millionths, its times
  s.ss_kind = unsigned(job.Integer("ssKind", 0, SS_IOPS | SS_BW | SS_LAT | SS_SLOPE | SS_PCT, 0));
  s.ss_limit = double(job.Integer("ssLimitMicros", 0, int64_t(1e15), 0)) / 1e6;
  s.ss_dur_ns = uint64_t(job.Integer("ssDurMs", 0, int64_t(1e12), 0)) * 1000000ull;
  s.ss_ramp_ns = uint64_t(job.Integer("ssRampMs", 0, int64_t(1e12), 0)) * 1000000ull;
  s.ss_interval_ns = uint64_t(job.Integer("ssIntervalMs", 1, int64_t(1e12), 1000)) * 1000000ull;
  s.ss_group = job.Bool("ssGroup", false);
  s.latency_target_ns = uint64_t(job.Integer("latencyTargetNs", 0, kMaxSafeInteger, 0));
  s.latency_window_ns = uint64_t(job.Integer("latencyWindowNs", 0, kMaxSafeInteger, 0));
  // the percentile in millionths of a percent (the argument module reads whole numbers)
  s.latency_percentile = double(job.Integer("latencyPercentileMicros", 0, 100000000, 100000000)) / 1e6;
  s.latency_run = job.Bool("latencyRun", false);
  s.dist = rand_dist(job.Integer("randomDistribution", 0, DIST_ZONED_ABS, DIST_RANDOM));
  // zoned: [access %, size %, ...] (zoned_abs: [access %, bytes, ...]); the writes' own, or the same
  ZonesArg(env, job.Get("distributionZones"), "job.distributionZones", s.dist == DIST_ZONED_ABS, &s, DDIR_READ);
  Napi::Value write_zones(env, job.Get("distributionZonesWrite"));
  ZonesArg(env, write_zones.IsUndefined() ? job.Get("distributionZones") : napi_value(write_zones), "job.distributionZonesWrite",
           s.dist == DIST_ZONED_ABS, &s, DDIR_WRITE);
  // the distribution's values in millionths (the argument module reads whole numbers)
  s.dist_param = double(job.Integer("distributionMicros", 0, int64_t(1e15), 0)) / 1e6;
  s.dist_center = double(job.Integer("distributionCenterMicros", -1000000, 1000000, -1000000)) / 1e6;
  s.offset = uint64_t(job.Integer("offset", 0, kMaxSafeInteger, 0));
  s.strided_size = uint64_t(job.Integer("zoneSize", 0, kMaxSafeInteger, 0));
  s.strided_range = uint64_t(job.Integer("zoneRange", 0, kMaxSafeInteger, 0));
  s.strided_skip = uint64_t(job.Integer("zoneSkip", 0, kMaxSafeInteger, 0));
  if (s.strided_size != 0 && s.strided_range == 0) s.strided_range = s.strided_size;  // fio's default zonerange
  s.io_limit = uint64_t(job.Integer("ioSize", 0, kMaxSafeInteger, 0));
  s.loops = uint32_t(job.Integer("loops", 0, 1 << 30, 0));
  s.seq_add = int64_t(job.Integer("seqAdd", -kMaxSafeInteger, kMaxSafeInteger, 0));
  s.rate_bytes[0] = uint64_t(job.Integer("rateRead", 0, kMaxSafeInteger, 0));
  s.rate_bytes[1] = uint64_t(job.Integer("rateWrite", 0, kMaxSafeInteger, 0));
  s.rate_iops[0] = uint64_t(job.Integer("rateIopsRead", 0, 1000000000, 0));
  s.rate_iops[1] = uint64_t(job.Integer("rateIopsWrite", 0, 1000000000, 0));
  s.rate_poisson = job.Bool("ratePoisson", false);
  s.offload = job.Bool("offload", false);
  int64_t open_sync = job.Integer("openSync", 0, 2, 0);  // fio's sync: 1 sync, 2 dsync
  s.open_sync = open_sync == 1 ? O_SYNC : open_sync == 2 ? O_DSYNC : 0;
  s.thinktime_ns = uint64_t(job.Integer("thinktimeUs", 0, int64_t(1e12), 0)) * 1000ull;
  s.bs_max = uint32_t(job.Integer("bsMax", 0, 1 << 30, 0));
  s.block_align = uint32_t(job.Integer("blockAlign", 0, 1 << 30, 0));
  // [size, percent, ...] in fio's order; bssplitWrite: the writes' own (fio's split after a comma), else the same
  s.nsplit[DDIR_READ] = PairsArg(env, job.Get("bssplit"), "job.bssplit", 16, 1 << 30, s.split_bs[DDIR_READ], s.split_pct[DDIR_READ]);
  Napi::Value writes(env, job.Get("bssplitWrite"));
  if (writes.IsUndefined()) {
    s.nsplit[DDIR_WRITE] = s.nsplit[DDIR_READ];
    std::copy(std::begin(s.split_bs[DDIR_READ]), std::end(s.split_bs[DDIR_READ]), std::begin(s.split_bs[DDIR_WRITE]));
    std::copy(std::begin(s.split_pct[DDIR_READ]), std::end(s.split_pct[DDIR_READ]), std::begin(s.split_pct[DDIR_WRITE]));
  } else {
    s.nsplit[DDIR_WRITE] = PairsArg(env, writes, "job.bssplitWrite", 16, 1 << 30, s.split_bs[DDIR_WRITE], s.split_pct[DDIR_WRITE]);
  }
  s.flow = int(job.Integer("flow", -1000, 1000, 0));
  s.flow_id = uint32_t(job.Integer("flowId", 0, 1 << 30, 0));
  s.flow_sleep_ns = uint64_t(job.Integer("flowSleepUs", 0, int64_t(1e12), 0)) * 1000ull;
  s.fsync_every = uint32_t(job.Integer("fsync", 0, 1 << 30, 0));
  s.sync_is_fdatasync = job.Bool("fdatasync", false);
  s.log_mask = uint32_t(job.Integer("logMask", 0, (1 << LOG_KINDS) - 1, 0));
  s.log_avg_ms = uint32_t(job.Integer("logAvgMs", 0, 1 << 30, 0));
  uint32_t entry = uint32_t(job.Integer("entry", 0, 1023, entry_default));
  if (s.size == 0) ThrowRangeError(env, "ERR_OUT_OF_RANGE", what + ".size must be > 0");
  auto refuse = [&](bool bad, const std::string& why) { if (bad) ThrowRangeError(env, "ERR_OUT_OF_RANGE", why); };
  refuse(s.ss_dur_ns != 0 && s.ss_dur_ns / s.ss_interval_ns > SS_MAX_INTERVALS,
         "steadystate: ss_dur over ss_interval is more than " + std::to_string(SS_MAX_INTERVALS) + " intervals, the most iolab keeps");
  refuse(s.time_based && s.runtime_ns == 0, what + ".timeBased needs " + what + ".runtimeMs > 0");
  refuse(s.ramp_bytes != 0 && s.ramp_ns != 0, "ramp_time and ramp_size: one ramp or the other (fio: \"job rejected: cannot specify both ramp_time and ramp_size\")");
  refuse(s.block_align != 0 && s.block_align % s.bs != 0, what + ".blockAlign must be a multiple of bs");
  refuse(s.verify && (ops->flags & ENGINE_DISKLESS), std::string("verify: the ") + ops->name + " engine moves no data to check");
  refuse(s.atomic && !(ops->flags & ENGINE_ATOMIC_WRITES),
         std::string("atomic: the ") + ops->name + " engine issues no atomic writes (fio: \"engine does not support atomic writes\"); " +
             "libaio, io_uring and pvsync2 do");
  refuse(s.verify && (s.nsplit[0] != 0 || s.nsplit[1] != 0 || s.bs_max > s.bs), "verify needs one block size (bsrange and bssplit vary it)");
  for (int d = 0; d < 2; d++)
    for (unsigned i = 0; i < s.nsplit[d]; i++)
      refuse(s.split_bs[d][i] % s.bs != 0, what + ".bssplit: each size must be a multiple of bs, which offsets are aligned to");
  if (s.verify && s.bs % 8 != 0) ThrowRangeError(env, "ERR_OUT_OF_RANGE", "verify needs bs to be a multiple of 8");
  std::unique_ptr<char[]> engine_options = EngineOptions(env, ops, Napi::Value(env, job.Get("engineOptions")));
  Napi::Value stop(env, job.Get("stop"));
  int32_t* stop_flag = nullptr;
  if (!stop.IsUndefined()) {
    if (!stop.IsTypedArray() || stop.As<Napi::TypedArray>().TypedArrayType() != napi_int32_array ||
        stop.As<Napi::TypedArray>().ElementLength() < 1)
      ThrowTypeError(env, "ERR_INVALID_ARG_TYPE", what + ".stop must be an Int32Array (set [0] to 1 to stop the job)");
    stop_flag = stop.As<Napi::Int32Array>().Data();
  }
  out->spec = s;
  out->spec.stop = stop_flag;
  out->filename = filename;
  // the job's files (fio's filename=a:b), the first of them filename
  Napi::Value files(env, job.Get("filenames"));
  if (!files.IsUndefined()) {
    if (!files.IsArray()) ThrowTypeError(env, "ERR_INVALID_ARG_TYPE", what + ".filenames must be an array of strings");
    Napi::Array list = files.As<Napi::Array>();
    if (list.Length() > 4096) ThrowRangeError(env, "ERR_OUT_OF_RANGE", what + ".filenames has more than 4096 files");
    for (uint32_t i = 0; i < list.Length(); i++)
      out->filenames.push_back(StringArg(env, list.Get(i), (what + ".filenames[" + std::to_string(i) + "]").c_str()));
    if (!out->filenames.empty() && out->filenames[0] != filename)
      ThrowRangeError(env, "ERR_OUT_OF_RANGE", what + ".filenames[0] must be " + what + ".filename");
    if (out->filenames.size() > 1 && s.size < out->filenames.size())
      ThrowRangeError(env, "ERR_OUT_OF_RANGE", what + ".size must hold a byte per file");
  }
  Napi::Value v(env, job.Get("verifyPattern"));
  if (!v.IsUndefined()) {
    if (!v.IsBuffer()) ThrowTypeError(env, "ERR_INVALID_ARG_TYPE", what + ".verifyPattern must be a Buffer");
    Napi::Buffer<uint8_t> b = v.As<Napi::Buffer<uint8_t>>();
    if (b.Length() == 0 || b.Length() > 512 || s.bs % b.Length() != 0)
      ThrowRangeError(env, "ERR_OUT_OF_RANGE", what + ".verifyPattern must be 1 to 512 bytes, a length that divides bs");
    out->verify_pattern.assign(reinterpret_cast<const char*>(b.Data()), b.Length());
  }
  out->engine_options = std::move(engine_options);
  out->entry = entry;
  if (stop_flag != nullptr) out->stop_ref = Napi::Persistent(stop.As<Napi::Object>());
}

}  // namespace iolab
