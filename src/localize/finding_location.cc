#include "localize/finding_location.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <unordered_set>

namespace eroica {
namespace {

bool Located(FindingCategory category) {
  return category == FindingCategory::kHost || category == FindingCategory::kDataloader;
}

// The function's entry on the worker (by name, in a host or dataloader category), or nullptr.
const FunctionEntry* EntryOf(const WorkerTable& table, size_t worker, std::string_view function) {
  for (const FunctionEntry& f : table.functions(worker)) {
    if ((f.category == Category::kHost || f.category == Category::kDataloader) && table.name(f.name) == function) {
      return &f;
    }
  }
  return nullptr;
}

}  // namespace

void LocateFindings(const WorkerTable& table, std::vector<Finding>* findings) {
  for (Finding& f : *findings) {
    if (!Located(f.category) || !f.location.empty() || f.function.empty()) continue;
    std::unordered_set<int> ranks(f.workers.begin(), f.workers.end());
    // Location -> (ranks that name it, their summed share); the culprits' order decides ties.
    std::map<StringId, std::pair<int, double>> votes;
    StringId first = Interner::kEmpty;
    for (size_t w = 0; w < table.size(); ++w) {
      if (ranks.count(table.row(w).rank) == 0) continue;
      const FunctionEntry* entry = EntryOf(table, w, f.function);
      if (entry == nullptr || entry->hot_frame == Interner::kEmpty) continue;
      if (first == Interner::kEmpty) first = entry->hot_frame;
      auto& [count, share] = votes[entry->hot_frame];
      ++count;
      share += entry->hot_share;
    }
    if (votes.empty()) continue;
    auto best = std::max_element(votes.begin(), votes.end(), [](const auto& a, const auto& b) {
      return a.second.first != b.second.first ? a.second.first < b.second.first : a.second.second < b.second.second;
    });
    const auto& [count, share] = best->second;
    f.location = std::string(table.name(best->first));
    std::string who = count == 1 ? "its rank" : fmt::format("{} of its {} ranks", count, f.workers.size());
    bool closed = f.evidence.empty() || f.evidence.back() == '.';
    f.evidence += fmt::format("{}Python stack samples put {:.0f}% of this time at {} ({}).", closed ? " " : ". ",
                              100.0 * share / count, f.location, who);
  }
}

}  // namespace eroica
