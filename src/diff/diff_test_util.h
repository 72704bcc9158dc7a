// Small synthetic data-parallel jobs for the diff tests.
#pragma once

#include <functional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "diff/pattern_diff.h"
#include "localize/finding.h"
#include "summary/pattern.h"

namespace eroica {

using FunctionMs = std::vector<std::tuple<std::string, Category, double>>;

// A data-parallel worker: `ms` per iteration in each function, with a rank-dependent jitter
// (a few percent) so that the spread across ranks is not zero.
inline WorkerPattern Worker(int rank, int world_size, const FunctionMs& ms) {
  WorkerPattern w;
  w.rank = rank;
  w.world_size = world_size;
  w.step_ids = {10, 11, 12, 13, 14};
  double total_ms = 0;
  for (const auto& [name, category, t] : ms) total_ms += t;
  double jitter = 1.0 + 0.01 * (rank % 3);
  w.iteration_s = total_ms * jitter / 1e3;
  for (const auto& [name, category, t] : ms) {
    FunctionPattern f;
    f.name = name;
    f.category = category;
    f.beta = t / total_ms;
    f.calls_per_iter = 10;
    f.mean_duration_us = t * jitter * 1e3 / 10;
    w.functions.push_back(f);
    w.category_beta[static_cast<size_t>(category)] += f.beta;
  }
  return w;
}

inline FunctionMs Healthy() {
  return {{"aten::mm", Category::kCompute, 60},
          {"aten::relu", Category::kCompute, 10},
          {"gloo:all_reduce", Category::kCommunication, 20},
          {"(python)", Category::kHost, 10}};
}

// `world_size` healthy workers, each with the functions `extra(rank)` beside the healthy ones.
inline std::vector<WorkerPattern> JobWith(int world_size, const std::function<FunctionMs(int)>& extra) {
  std::vector<WorkerPattern> job;
  job.reserve(static_cast<size_t>(world_size));
  for (int r = 0; r < world_size; ++r) {
    FunctionMs ms = Healthy();
    for (auto& f : extra(r)) ms.push_back(std::move(f));
    job.push_back(Worker(r, world_size, ms));
  }
  return job;
}

inline std::vector<WorkerPattern> Job(int world_size) {
  return JobWith(world_size, [](int) { return FunctionMs{}; });
}

// A diff that holds the two sides' iteration times alone: what the rules against a baseline read
// of the slowdown.
inline PatternDiff IterationsOnly(double base_ms, double now_ms) {
  PatternDiff diff;
  diff.base.iteration_ms = base_ms;
  diff.now.iteration_ms = now_ms;
  return diff;
}

// A finding the window's analysis made, as the baseline's rules find it.
inline Finding FindingOf(FindingScope scope, FindingCategory category, std::vector<int> workers, double impact_s,
                         std::string function = "") {
  Finding f;
  f.scope = scope;
  f.category = category;
  f.workers = std::move(workers);
  f.impact_s_per_iter = impact_s;
  f.function = std::move(function);
  return f;
}

}  // namespace eroica
