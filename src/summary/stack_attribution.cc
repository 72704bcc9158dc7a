#include "summary/stack_attribution.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>

namespace eroica {
namespace {

// One sample stands for at most this long: a longer silence is the sampler's, not the code's.
constexpr int64_t kMaxSampleIntervalNs = 2'000'000'000;
constexpr double kDefaultHz = 100;

bool Attributed(Category category) { return category == Category::kHost || category == Category::kDataloader; }

// The innermost frame of the job's own code per stack, or -1.
std::vector<int64_t> UserFrames(const StackSamples& samples) {
  std::vector<int64_t> out(samples.stacks.size(), -1);
  for (size_t s = 0; s < samples.stacks.size(); ++s) {
    for (uint32_t frame : samples.stacks[s]) {
      if (!IsLibraryFrame(samples.frames[frame], samples.library_prefixes)) {
        out[s] = frame;
        break;
      }
    }
  }
  return out;
}

}  // namespace

bool IsLibraryFrame(const SampledFrame& frame, const std::vector<std::string>& prefixes) {
  const std::string& file = frame.file;
  if (file.empty() || file.front() == '<') return true;
  if (file.find("/site-packages/") != std::string::npos || file.find("/dist-packages/") != std::string::npos) {
    return true;
  }
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [&](const std::string& prefix) { return !prefix.empty() && file.starts_with(prefix); });
}

std::unordered_map<uint32_t, std::vector<HotFrame>> AttributeStackSamples(const StackSamples& samples,
                                                                          const SpanList& path,
                                                                          const FunctionTable& table,
                                                                          size_t max_frames) {
  std::unordered_map<uint32_t, std::vector<HotFrame>> out;
  if (samples.empty() || path.empty()) return out;
  std::vector<int64_t> user_frames = UserFrames(samples);
  auto period_ns = static_cast<int64_t>(1e9 / (samples.hz > 0 ? samples.hz : kDefaultHz));
  std::map<uint32_t, int64_t> sampled_ns;                    // by function
  std::map<std::pair<uint32_t, int64_t>, int64_t> frame_ns;  // by (function, frame)
  size_t cursor = 0;
  int64_t previous = samples.samples.front().ts_ns - period_ns;
  for (const StackSample& sample : samples.samples) {
    int64_t end = sample.ts_ns;
    int64_t begin = std::max(previous, end - kMaxSampleIntervalNs);
    previous = end;
    while (cursor < path.size() && path[cursor].end_ns <= begin) ++cursor;
    for (size_t k = cursor; k < path.size() && path[k].start_ns < end; ++k) {
      const Span& span = path[k];
      int64_t overlap = std::min(end, span.end_ns) - std::max(begin, span.start_ns);
      if (overlap <= 0 || !Attributed(table.all()[span.function].category)) continue;
      sampled_ns[span.function] += overlap;
      if (int64_t frame = user_frames[sample.stack]; frame >= 0) frame_ns[{span.function, frame}] += overlap;
    }
  }
  std::map<uint32_t, std::vector<std::pair<int64_t, int64_t>>> ranked;  // function -> (ns, frame)
  for (const auto& [key, ns] : frame_ns) ranked[key.first].push_back({ns, key.second});
  for (auto& [function, frames] : ranked) {
    int64_t total = sampled_ns[function];
    if (total < period_ns / 2) continue;  // less than a sample's worth: no evidence
    std::sort(frames.begin(), frames.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (const auto& [ns, frame] : frames) {
      float share = static_cast<float>(static_cast<double>(ns) / static_cast<double>(total));
      if (out[function].size() >= max_frames || share < kMinHotFrameShare) break;
      const SampledFrame& f = samples.frames[static_cast<size_t>(frame)];
      out[function].push_back({fmt::format("{}:{}({})", f.file, f.line, f.function), share});
    }
    if (out[function].empty()) out.erase(function);
  }
  return out;
}

}  // namespace eroica
