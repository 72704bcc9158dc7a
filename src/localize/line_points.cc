#include "localize/line_points.h"

#include <string_view>
#include <unordered_map>

#include "localize/host_gaps.h"
#include "summary/function_name.h"

namespace eroica {

bool IsCodePoint(const WorkerGroup& group, const FunctionEntry& f) {
  std::string_view name = group.table->name(f.name);
  return f.category == Category::kHost && !IsFoldedTail(name) && name != kUnattributedPython && !IsResumePoint(name);
}

namespace {

// Each point name's line: the top frame holding at least half of its samples on the most ranks.
std::unordered_map<StringId, StringId> LineOfEachPoint(const WorkerGroup& group) {
  constexpr double kMostOfItsSamples = 0.5;
  std::unordered_map<StringId, std::unordered_map<StringId, size_t>> votes;
  for (size_t k = 0; k < group.size(); ++k) {
    for (const FunctionEntry& f : group.functions(k)) {
      if (IsCodePoint(group, f) && f.hot_frame != Interner::kEmpty && f.hot_share >= kMostOfItsSamples) {
        ++votes[f.name][f.hot_frame];
      }
    }
  }
  std::unordered_map<StringId, StringId> line;
  for (const auto& [name, lines] : votes) {
    StringId best = Interner::kEmpty;
    size_t most = 0;
    for (const auto& [frame, count] : lines) {
      if (count > most || (count == most && frame < best)) best = frame, most = count;
    }
    line[name] = best;
  }
  return line;
}

}  // namespace

std::vector<std::vector<LinePoint>> LinePoints(const WorkerGroup& group) {
  const std::unordered_map<StringId, StringId> line_of = LineOfEachPoint(group);
  std::vector<std::vector<LinePoint>> out(group.size());
  for (size_t k = 0; k < group.size(); ++k) {
    std::vector<LinePoint>& points = out[k];
    std::unordered_map<uint64_t, size_t> index;
    const int iterations = group.row(k).iterations;
    for (const FunctionEntry& f : group.functions(k)) {
      if (!IsCodePoint(group, f)) continue;
      auto line = line_of.find(f.name);
      bool by_line = line != line_of.end();
      // A line's key and a lone point's differ in their lowest bit: names and frames share one
      // interner, so their ids alone could meet.
      uint64_t key = (static_cast<uint64_t>(by_line ? line->second : f.name) << 1) | (by_line ? 1U : 0U);
      auto [it, added] = index.try_emplace(key, points.size());
      if (added) points.push_back({.key = key, .by_line = by_line});
      LinePoint& p = points[it->second];
      if (p.largest == nullptr || f.beta > p.largest->beta) p.largest = &f;
      p.beta += f.beta;
      p.calls_per_iter += f.calls_per_iter;
      p.usual += UsualCallShare(f, iterations);
      ++p.points;
    }
  }
  return out;
}

}  // namespace eroica
