#include "summary/trace_clock.h"

#include <algorithm>
#include <string>
#include <vector>

#include "base/json_access.h"

namespace eroica {
namespace {

// Kineto's epoch timestamps are far past this; CPU-only builds count from the profiler's start.
constexpr int64_t kAbsoluteClockNs = int64_t{100'000'000} * 1'000'000'000;  // ~1973
// Host times are bounded so that subtracting a trace time cannot overflow.
constexpr int64_t kMaxUnixNs = int64_t{1} << 62;

// The median over the steps of (host time ProfilerStep#N opened - its trace time), from the
// CPU-side step ranges (a GPU trace also draws them on the device's timeline), or nullopt.
std::optional<int64_t> StepAnchoredOffset(const Trace& trace, const Json& anchors) {
  const Json* steps = JsonObjectField(anchors, {"step_start_unix_ns"});
  if (steps == nullptr) return std::nullopt;
  std::vector<int64_t> offsets;
  for (const TraceEvent& e : trace.events) {
    std::string_view name = trace.Str(e.name);
    if (!name.starts_with("ProfilerStep#") || trace.Str(e.cat).find("gpu") != std::string_view::npos) continue;
    std::string id(name.substr(13));
    if (std::optional<int64_t> at = JsonInt(JsonField(*steps, {id}), 0, kMaxUnixNs)) {
      offsets.push_back(*at - e.ts_ns);
    }
  }
  if (offsets.empty()) return std::nullopt;
  std::nth_element(offsets.begin(), offsets.begin() + static_cast<long>(offsets.size() / 2), offsets.end());
  return offsets[offsets.size() / 2];
}

}  // namespace

std::optional<int64_t> UnixClockOffset(const Trace& trace, const Json* anchors) {
  bool anchored = anchors != nullptr && anchors->is_object();
  if (anchored) {
    if (std::optional<int64_t> offset = StepAnchoredOffset(trace, *anchors)) return offset;
  }
  int64_t latest = 0;
  for (const TraceEvent& e : trace.events) latest = std::max(latest, e.ts_ns);
  if (latest > kAbsoluteClockNs) return 0;
  if (anchored) return JsonInt(JsonField(*anchors, {"profiler_start_unix_ns"}), 0, kMaxUnixNs);
  return std::nullopt;
}

}  // namespace eroica
