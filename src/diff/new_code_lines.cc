#include "diff/new_code_lines.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "base/robust_stats.h"
#include "localize/own_code_line.h"

namespace eroica {
namespace {

struct NewLine {
  size_t ranks_new = 0;  // ranks whose baseline never reached it while it holds the share now
  uint32_t depth = 0;
  std::vector<double> shares;
};

bool Listed(const WorkerPattern& w, const std::string& location) {
  return std::any_of(w.code_lines.begin(), w.code_lines.end(),
                     [&](const CodeFrame& line) { return line.location == location; });
}

// Whether the rank's code is where it was: most of the baseline's lines are still sampled now. A
// job restarted with edited code has its lines moved, and every line of it would look new.
bool SameCode(const WorkerPattern& base, const WorkerPattern& now) {
  size_t kept = std::count_if(base.code_lines.begin(), base.code_lines.end(),
                              [&](const CodeFrame& line) { return Listed(now, line.location); });
  return 2 * kept > base.code_lines.size();
}

}  // namespace

void LocateByNewCodeLines(const std::vector<WorkerPattern>& base, const std::vector<WorkerPattern>& now,
                          std::vector<Finding>* findings) {
  std::unordered_map<int, const WorkerPattern*> base_by_rank, now_by_rank;
  for (const WorkerPattern& w : base) base_by_rank.emplace(w.rank, &w);
  for (const WorkerPattern& w : now) now_by_rank.emplace(w.rank, &w);
  for (Finding& f : *findings) {
    if (f.scope != FindingScope::kGlobal || !f.location.empty()) continue;
    std::map<std::string, NewLine> lines;
    size_t sampled = 0;  // the finding's ranks with samples at both times
    for (int rank : std::unordered_set<int>(f.workers.begin(), f.workers.end())) {
      auto b = base_by_rank.find(rank);
      auto n = now_by_rank.find(rank);
      if (b == base_by_rank.end() || n == now_by_rank.end() || b->second->code_lines.empty() ||
          n->second->code_lines.empty() || n->second->iteration_s <= 0) {
        continue;
      }
      ++sampled;
      // A line missing from a full list may still have been sampled there, below its last line.
      if (b->second->code_lines.size() >= kMaxCodeLines || !SameCode(*b->second, *n->second)) continue;
      double share_of_iteration = f.impact_s_per_iter / n->second->iteration_s;
      for (const CodeFrame& line : n->second->code_lines) {
        if (line.share < share_of_iteration / 2 || Listed(*b->second, line.location) ||
            !MissingLineMeansNeverRan(line.share * n->second->code_line_periods, n->second->code_line_periods,
                                      b->second->code_line_periods)) {
          continue;
        }
        NewLine& entry = lines[line.location];
        entry.depth = entry.ranks_new == 0 ? line.depth : std::min(entry.depth, line.depth);
        ++entry.ranks_new;
        entry.shares.push_back(line.share);
      }
    }
    const std::pair<const std::string, NewLine>* best = nullptr;
    for (const auto& candidate : lines) {
      if (2 * candidate.second.ranks_new <= sampled) continue;
      if (best == nullptr || candidate.second.depth > best->second.depth ||
          (candidate.second.depth == best->second.depth && candidate.second.ranks_new > best->second.ranks_new)) {
        best = &candidate;
      }
    }
    if (best == nullptr) continue;
    std::vector<double> shares = best->second.shares;
    f.location = best->first;
    f.evidence += fmt::format(
        "; its stack samples now put {:.0f}% of a rank's window (median) under {}, a line the baseline's samples of {} "
        "of its {} ranks sampled then and now never reached: code that runs now and did not then",
        100 * MedianInPlace(shares), f.location, best->second.ranks_new, sampled);
    f.action += fmt::format(" Start with the code at {}: the baseline never ran it.", f.location);
  }
}

}  // namespace eroica
