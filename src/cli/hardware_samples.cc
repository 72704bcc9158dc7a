#include "cli/hardware_samples.h"

#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>

#include "agent/utilization.h"
#include "base/file_util.h"
#include "base/json_access.h"
#include "summary/rank_meta.h"
#include "summary/trace_clock.h"

namespace eroica {
namespace {

namespace fs = std::filesystem;

int64_t MostCommonNumericPid(const Trace& trace) {
  std::map<int64_t, int64_t> counts;
  for (const TraceEvent& e : trace.events) {
    if (!IsStringPid(e.pid) && e.pid > 0) ++counts[trace.IdValue(e.pid)];
  }
  int64_t best = -1, best_count = 0;
  for (auto [pid, count] : counts) {
    if (count > best_count) best = pid, best_count = count;
  }
  return best;
}

}  // namespace

HardwareSamples HardwareSamples::FromFile(const std::string& path, std::vector<std::string>* errors) {
  HardwareSamples samples;
  StatusOr<agent::MetricsFile> file = agent::ReadMetricsFile(path);
  if (file.ok()) {
    samples.files_.push_back(std::make_shared<const agent::MetricsFile>(std::move(*file)));
  } else {
    errors->push_back(file.status().message());
  }
  return samples;
}

HardwareSamples HardwareSamples::FromFolder(const std::string& folder, std::vector<std::string>* errors) {
  HardwareSamples samples;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(folder, error)) {
    if (entry.path().extension() != ".eroica-metrics") continue;
    HardwareSamples one = FromFile(entry.path().string(), errors);
    samples.files_.insert(samples.files_.end(), one.files_.begin(), one.files_.end());
  }
  return samples;
}

std::vector<ResourceSamples> HardwareSamples::ForTrace(const Trace& trace, std::string* why) const {
  if (files_.empty()) return {};
  std::optional<Json> meta = ReadRankMeta(trace);
  int64_t pid = meta ? JsonIntOr(*meta, {"pid"}, -1) : -1;
  if (pid <= 0) pid = MostCommonNumericPid(trace);
  std::optional<int64_t> offset = UnixClockOffset(trace, meta ? &*meta : nullptr);
  if (pid <= 0 || !offset) {
    *why = fmt::format("{}: hardware samples not used: {}", trace.meta.path,
                       pid <= 0 ? "the training process's pid is unknown (no rank meta file)"
                                : "its timestamps are relative and no rank meta file anchors them");
    return {};
  }
  for (const auto& file : files_) {
    StatusOr<std::vector<agent::UtilizationSeries>> series = agent::UtilizationForProcess(*file, pid);
    if (!series.ok()) continue;
    std::vector<ResourceSamples> out;
    for (const agent::UtilizationSeries& s : *series) {
      ResourceSamples r;
      r.kind = s.resource;
      r.ts_ns.reserve(s.ts_unix_ns.size());
      for (size_t i = 0; i < s.ts_unix_ns.size() && i < s.utilization.size(); ++i) {
        int64_t ts_ns = 0;  // a damaged file's timestamps can be anything: skip what overflows
        if (__builtin_sub_overflow(s.ts_unix_ns[i], *offset, &ts_ns)) continue;
        r.ts_ns.push_back(ts_ns);
        r.utilization.push_back(s.utilization[i]);
      }
      out.push_back(std::move(r));
    }
    return out;
  }
  *why = fmt::format("{}: no hardware samples for its process (pid {})", trace.meta.path, pid);
  return {};
}

}  // namespace eroica
