#include "localize/call_sizes.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <utility>

#include "base/robust_stats.h"
#include "summary/function_name.h"

namespace eroica {
namespace {

// Kineto times CPU ops in whole microseconds: a median call shorter than this many ticks is
// timed too coarsely to compare (a 1 us call is 2x a 0.5 us one by rounding alone).
constexpr double kMinTimedUs = 5;

enum class Size { kNone, kBatch, kModel };

Size SizeOf(const WorkerGroup& group, const FunctionEntry& f) {
  std::string_view name = group.table->name(f.name);
  if (IsFoldedTail(name) || f.median_duration_us <= 0) return Size::kNone;
  if (ScalesWithTheModel(name, f.host_kind)) return Size::kModel;
  return f.category == Category::kCompute ? Size::kBatch : Size::kNone;
}

}  // namespace

double WeightedMedianRatio(std::vector<std::pair<double, double>>& pairs) {
  std::sort(pairs.begin(), pairs.end());
  double total = 0;
  for (const auto& [ratio, weight] : pairs) total += weight;
  if (total <= 0) return 0;
  double seen = 0;
  for (const auto& [ratio, weight] : pairs) {
    seen += weight;
    if (seen >= total / 2) return ratio;
  }
  return pairs.back().first;
}

bool ScalesWithTheModel(std::string_view name, HostKind host_kind) {
  // A Python program point named after the op beside it is the host's, not the op's.
  if (host_kind == HostKind::kPython) return false;
  return host_kind == HostKind::kOptimizer || name.find("AccumulateGrad") != std::string_view::npos;
}

namespace {

// What the batch-sized ops cost each member per step, beside its calls' ratios.
struct BatchTime {
  std::vector<double> extra_share;   // CallSizes::extra_share
  std::vector<double> share_beyond;  // CallSizes::batch_share_beyond
};

// Each member's batch- and model-sized calls against the median of the others', by one statistic
// of the calls (`field`), for every member at once; `time` gets what the batch-sized ops cost
// where asked.
std::vector<CallRatios> CompareCalls(const WorkerGroup& group, float FunctionEntry::*field, BatchTime* time) {
  size_t n = group.size();
  std::vector<CallRatios> out(n);
  // Functions every member ran, with each member's call and β: a function missing on some member
  // (not kept in its pattern) or without the statistic is left out rather than guessed.
  struct Column {
    Size kind;
    std::vector<double> size, beta;
  };
  std::map<std::pair<StringId, Category>, Column> columns;
  for (const FunctionEntry& f : group.functions(0)) {
    if (Size kind = SizeOf(group, f); kind != Size::kNone)
      columns[{f.name, f.category}] = {kind, std::vector<double>(n, 0.0), std::vector<double>(n, 0.0)};
  }
  for (size_t k = 0; k < n; ++k) {
    for (const FunctionEntry& f : group.functions(k)) {
      auto it = columns.find({f.name, f.category});
      if (it == columns.end()) continue;
      it->second.size[k] = f.*field;
      it->second.beta[k] = f.beta;
    }
  }
  std::erase_if(columns, [](const auto& column) {
    const std::vector<double>& sizes = column.second.size;
    return std::any_of(sizes.begin(), sizes.end(), [](double v) { return v <= 0; });
  });
  struct Peers {
    std::vector<double> size, beta;  // of the others, for each member
  };
  std::map<std::pair<StringId, Category>, Peers> peers;
  for (const auto& [key, column] : columns) peers[key] = {MedianOfOthers(column.size), MedianOfOthers(column.beta)};
  double median_iteration_s = std::max(MedianIterationS(group), 1e-12);
  if (time != nullptr) {
    // The same ops on every member, each member's step scaled to the group's median one.
    std::vector<double> batch_time(n, 0.0);
    for (const auto& [key, column] : columns) {
      if (column.kind != Size::kBatch) continue;
      for (size_t k = 0; k < n; ++k) batch_time[k] += column.beta[k] * group.row(k).iteration_s / median_iteration_s;
    }
    std::vector<double> peers_time = MedianOfOthers(batch_time);
    time->share_beyond.resize(n);
    for (size_t k = 0; k < n; ++k) time->share_beyond[k] = batch_time[k] - peers_time[k];
    time->extra_share.assign(n, 0.0);
  }
  for (size_t k = 0; k < n; ++k) {
    // Each op's ratio, weighted by the critical-path share it holds on the peers, and the
    // weighted median of each kind: an op whose calls mostly hold something other than work (an
    // embedding's backward of 1 call a step waited 12 ms on some healthy ranks and 0.4 ms on
    // others, with β 0.001) then moves nothing, and neither does one rank's slow optimizer step.
    std::vector<std::pair<double, double>> batch, model;
    double batch_beta = 0;
    for (const FunctionEntry& f : group.functions(k)) {
      auto it = peers.find({f.name, f.category});
      if (it == peers.end() || it->second.size[k] < kMinTimedUs) continue;
      double ratio = f.*field / it->second.size[k];
      if (SizeOf(group, f) == Size::kModel) {
        model.emplace_back(ratio, it->second.beta[k]);
      } else {
        batch.emplace_back(ratio, it->second.beta[k]);
        batch_beta += f.beta;
      }
    }
    CallRatios& c = out[k];
    c.batch_ratio = WeightedMedianRatio(batch);
    c.model_ratio = WeightedMedianRatio(model);
    c.measured = c.batch_ratio > 0 && c.model_ratio > 0;
    if (time != nullptr && c.batch_ratio > 1) {
      time->extra_share[k] = batch_beta * (1 - 1 / c.batch_ratio) * group.row(k).iteration_s / median_iteration_s;
    }
  }
  // The largest and the second largest, so each member's "largest of the others" is one look.
  size_t top = 0;
  for (size_t k = 1; k < n; ++k) {
    if (out[k].batch_ratio > out[top].batch_ratio) top = k;
  }
  double second = 0;
  for (size_t k = 0; k < n; ++k) {
    if (k != top) second = std::max(second, out[k].batch_ratio);
  }
  for (size_t k = 0; k < n; ++k) out[k].others_largest = k == top ? second : out[top].batch_ratio;
  return out;
}

}  // namespace

std::vector<CallSizes> CompareCallSizes(const WorkerGroup& group) {
  size_t n = group.size();
  std::vector<CallSizes> out(n);
  if (n < 2) return out;
  for (size_t k = 0; k < n; ++k) {
    if (group.row(k).has_device) return {};
  }
  BatchTime time;
  std::vector<CallRatios> medians = CompareCalls(group, &FunctionEntry::median_duration_us, &time);
  std::vector<CallRatios> quartiles = CompareCalls(group, &FunctionEntry::low_quartile_duration_us, nullptr);
  std::vector<CallRatios> means = CompareCalls(group, &FunctionEntry::mean_duration_us, nullptr);
  for (size_t k = 0; k < n; ++k)
    out[k] = {medians[k], quartiles[k], means[k], time.extra_share[k], time.share_beyond[k]};
  return out;
}

}  // namespace eroica
