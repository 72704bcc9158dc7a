#include "summary/pattern_builder.h"

#include <algorithm>
#include <string>

#include "summary/function_name.h"

namespace eroica {
namespace {

// Functions that never own the critical path still tell how much work a rank was given (calls,
// shapes): keep the busiest few of them too.
constexpr size_t kKeptByCalls = 12;

FunctionPattern ToPattern(const FunctionStats& f, int64_t window_ns, int iterations) {
  FunctionPattern p;
  p.name = f.name;
  p.category = f.category;
  p.host_kind = f.host_kind;
  p.beta = static_cast<double>(f.owned_ns) / static_cast<double>(window_ns);
  p.calls_per_iter = static_cast<double>(f.calls) / iterations;
  p.mean_duration_us = f.calls > 0 ? static_cast<double>(f.total_duration_ns) / 1e3 / f.calls : 0;
  p.median_duration_us = f.durations.MedianNs() / 1e3;
  p.low_quartile_duration_us = f.durations.LowerQuartileNs() / 1e3;
  p.bytes_per_iter = f.bytes / iterations;
  p.shapes_hash = f.shapes_hash;
  p.mu = f.mu;
  p.sigma = f.sigma;
  return p;
}

}  // namespace

std::vector<FunctionPattern> BuildFunctionPatterns(const std::vector<FunctionStats>& functions, int64_t window_ns,
                                                   int iterations, size_t max_functions,
                                                   std::array<double, kCategoryCount>* category_beta) {
  category_beta->fill(0);
  std::vector<size_t> order(functions.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (functions[a].owned_ns != functions[b].owned_ns) return functions[a].owned_ns > functions[b].owned_ns;
    return functions[a].name < functions[b].name;
  });
  std::vector<FunctionPattern> kept;
  std::vector<bool> is_kept(functions.size(), false);
  for (size_t i : order) {
    if (kept.size() >= max_functions || functions[i].owned_ns == 0) break;
    kept.push_back(ToPattern(functions[i], window_ns, iterations));
    is_kept[i] = true;
  }
  std::vector<size_t> by_calls;
  for (size_t i = 0; i < functions.size(); ++i) {
    if (!is_kept[i] && functions[i].calls > 0) by_calls.push_back(i);
  }
  std::sort(by_calls.begin(), by_calls.end(), [&](size_t a, size_t b) {
    if (functions[a].calls != functions[b].calls) return functions[a].calls > functions[b].calls;
    return functions[a].name < functions[b].name;
  });
  for (size_t k = 0; k < std::min(kKeptByCalls, by_calls.size()); ++k) {
    kept.push_back(ToPattern(functions[by_calls[k]], window_ns, iterations));
    is_kept[by_calls[k]] = true;
  }
  std::array<FunctionStats, kCategoryCount> other;
  for (size_t i = 0; i < functions.size(); ++i) {
    const FunctionStats& f = functions[i];
    (*category_beta)[static_cast<size_t>(f.category)] +=
        static_cast<double>(f.owned_ns) / static_cast<double>(window_ns);
    if (is_kept[i] || (f.owned_ns == 0 && f.calls == 0)) continue;
    FunctionStats& fold = other[static_cast<size_t>(f.category)];
    fold.category = f.category;
    fold.owned_ns += f.owned_ns;
    fold.calls += f.calls;
    fold.total_duration_ns += f.total_duration_ns;
    fold.bytes += f.bytes;
  }
  for (FunctionStats& fold : other) {
    if (fold.owned_ns == 0 && fold.calls == 0) continue;
    fold.name = FoldedTailName(fold.category);
    kept.push_back(ToPattern(fold, window_ns, iterations));
  }
  std::stable_sort(kept.begin(), kept.end(),
                   [](const FunctionPattern& a, const FunctionPattern& b) { return a.beta > b.beta; });
  return kept;
}

}  // namespace eroica
