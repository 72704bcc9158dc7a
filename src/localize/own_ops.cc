#include "localize/own_ops.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "base/robust_stats.h"
#include "localize/group_members.h"
#include "localize/work_signals.h"
#include "summary/function_name.h"

namespace eroica {
namespace {

// A function's key across members: its name and category.
uint64_t Key(const FunctionEntry& f) {
  return (static_cast<uint64_t>(f.name) << 8) | static_cast<uint64_t>(f.category);
}

// An op, not a program point or a folded tail: "(python between ...)", "(other compute)".
bool IsOp(std::string_view name) { return !name.empty() && name.front() != '('; }

// The ops on either side of a program point, "(python between A and B)"; empty views otherwise.
std::pair<std::string_view, std::string_view> Neighbours(std::string_view name) {
  constexpr std::string_view kPrefix = "(python between ";
  constexpr std::string_view kAnd = " and ";
  if (!name.starts_with(kPrefix) || !name.ends_with(')')) return {};
  std::string_view inner = name.substr(kPrefix.size(), name.size() - kPrefix.size() - 1);
  size_t at = inner.find(kAnd);
  if (at == std::string_view::npos) return {};
  return {inner.substr(0, at), inner.substr(at + kAnd.size())};
}

struct OwnOps {
  double share = 0;                        // the ops' β and the Python between them
  std::vector<const FunctionEntry*> ops;   // by their calls times β, descending
  const FunctionEntry* largest = nullptr;  // the largest entry of all (an op or a program point)
};

}  // namespace

void NameOpsOnlyItCalls(const WorkerGroup& group, const Expectations& e, std::vector<Finding>* local) {
  size_t n = group.size();
  double iteration_s = MedianIterationS(group);
  if (n < 3 || iteration_s <= 0) return;
  // How many members list each function, and each member's smallest listed β: one pass.
  std::unordered_map<uint64_t, size_t> listed_by;
  std::vector<double> smallest(n, 0.0);
  for (size_t k = 0; k < n; ++k) {
    double least = 1.0;
    for (const FunctionEntry& f : group.functions(k)) {
      ++listed_by[Key(f)];
      if (!IsFoldedTail(group.table->name(f.name))) least = std::min(least, static_cast<double>(f.beta));
    }
    smallest[k] = least;
  }
  // The largest and second largest smallest β: every peer's but one member's own, in O(1) each.
  size_t top = 0;
  for (size_t k = 1; k < n; ++k) top = smallest[k] > smallest[top] ? k : top;
  double second = 0;
  for (size_t k = 0; k < n; ++k) second = k != top ? std::max(second, smallest[k]) : second;
  const double floor = StragglerFloor(group, e);
  const ComputeCalls calls(group);
  // The local finding naming each member alone, by index (findings are appended below).
  std::vector<size_t> finding_of(n, SIZE_MAX);
  std::unordered_map<int, size_t> member_of = MembersByRank(group);
  for (size_t i = 0; i < local->size(); ++i) {
    if (std::optional<size_t> k = MemberNamedAlone(member_of, (*local)[i])) finding_of[*k] = i;
  }
  for (size_t k = 0; k < n; ++k) {
    if (group.row(k).has_device) continue;
    double peers_cutoff = k == top ? second : smallest[top];
    OwnOps own;
    std::unordered_set<std::string_view> own_names;
    for (const FunctionEntry& f : group.functions(k)) {
      std::string_view name = group.table->name(f.name);
      if (f.category != Category::kCompute || !IsOp(name) || f.calls_per_iter < 1 || f.beta <= peers_cutoff ||
          listed_by[Key(f)] != 1) {
        continue;
      }
      own.share += f.beta;
      own.ops.push_back(&f);
      own_names.insert(name);
    }
    if (own.ops.empty()) continue;
    for (const FunctionEntry& f : group.functions(k)) {
      auto [before, after] = Neighbours(group.table->name(f.name));
      if (f.category == Category::kHost && (own_names.contains(before) || own_names.contains(after))) {
        own.share += f.beta;
        if (own.largest == nullptr || f.beta > own.largest->beta) own.largest = &f;
      }
    }
    // Extra calls, not the peers' ops listed under another name: the critical path can take a
    // nested op for its parent on one rank (a 4-rank ViT's rank 0 listed `ConvolutionBackward0`, 2
    // a step, where its peers list `aten::convolution_backward`), which adds no calls.
    double own_calls = 0;
    for (const FunctionEntry* f : own.ops) own_calls += f->calls_per_iter;
    // And more calls than the ranks' counts differ by anyway (a loader's ops, a print: a healthy
    // 6-rank MLP's ranks made 5,525-5,536 compute calls a step, one of them with 3 aten::cumsum
    // calls β 0.055 that the peers' patterns folded: one call the scheduler stretched).
    if (calls.of(k) - calls.peers(k) < 0.5 * own_calls || !calls.StandsOut(k, e)) continue;
    std::sort(own.ops.begin(), own.ops.end(),
              [](const auto* a, const auto* b) { return a->calls_per_iter * a->beta > b->calls_per_iter * b->beta; });
    for (const FunctionEntry* f : own.ops) {
      if (own.largest == nullptr || f->beta > own.largest->beta) own.largest = f;
    }
    if (own.share < floor) continue;
    const WorkerRow& row = group.row(k);
    std::vector<std::string> listed;
    for (size_t i = 0; i < std::min<size_t>(3, own.ops.size()); ++i) {
      listed.push_back(
          fmt::format("{} {:.0f} a step", group.table->name(own.ops[i]->name), own.ops[i]->calls_per_iter));
    }
    std::string evidence = fmt::format(
        "rank {} calls ops its peers never call ({}{}), which with the Python between them hold β {:.2f} of its "
        "step: code of its own, not the scheduler's (its noise stretches the code every rank runs)",
        row.rank, fmt::join(listed, ", "), own.ops.size() > listed.size() ? ", ..." : "", own.share);
    std::string action = fmt::format(
        "Find what rank {} runs beside the training step (it calls {} {:.0f} times a step): metrics or logging per "
        "parameter, an extra pass; run it less often, batch it into a few ops, or move it off the step.",
        row.rank, group.table->name(own.ops.front()->name), own.ops.front()->calls_per_iter);
    Finding* found = finding_of[k] != SIZE_MAX ? &(*local)[finding_of[k]] : nullptr;
    double cost_s = own.share * iteration_s;
    if (found != nullptr) {
      bool own_work = found->category == FindingCategory::kCompute || found->category == FindingCategory::kHost ||
                      found->category == FindingCategory::kDataloader || found->category == FindingCategory::kImbalance;
      if (!own_work || cost_s < 0.5 * found->impact_s_per_iter) continue;
      found->evidence += "; " + evidence;
      found->impact_s_per_iter = std::max(found->impact_s_per_iter, cost_s);
    } else {
      local->push_back(Finding{});
      found = &local->back();
      found->scope = FindingScope::kLocal;
      found->workers = {row.rank};
      found->impact_s_per_iter = cost_s;
      found->evidence = evidence;
    }
    found->category = FindingCategory::kHost;
    found->function = std::string(group.table->name(own.largest->name));
    found->beta = own.share;
    found->peer_beta = 0;
    found->location.clear();
    found->action = std::move(action);
  }
}

}  // namespace eroica
