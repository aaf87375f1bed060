// The storage benchmark's job descriptions as bench_binding.cc reads them (bench_parse.cc).
#pragma once
#include <napi.h>

#include <memory>
#include <string>
#include <vector>

extern "C" {
#include "bench/engine.h"
#include "bench/job.h"
}

namespace iolab {

// One job's spec and what its pointers point at, kept alive while the job runs.
struct ParsedJob {
  job_spec spec{};
  std::string filename;
  std::vector<std::string> filenames;      // fio's filename=a:b: every file (empty: filename alone)
  std::vector<const char*> filename_ptrs;  // what spec.filenames points at
  std::string verify_pattern;  // fio's verify_pattern bytes
  std::unique_ptr<char[]> engine_options;
  Napi::ObjectReference stop_ref;  // keeps the stop flag's memory alive while the job runs
  uint32_t entry = 0;              // the result it is reported in (fio's group_reporting)
};

// One JS job description -> its spec (what names it in errors: "job" or "jobs[2]"); throws a
// TypeError or RangeError naming the field.
void ParseJob(Napi::Env env, Napi::Value value, const std::string& what, uint32_t entry_default, ParsedJob* out);

}  // namespace iolab
