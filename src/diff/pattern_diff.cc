#include "diff/pattern_diff.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "base/robust_stats.h"

namespace eroica {
namespace {

constexpr double kMadToSigma = 1.4826;
// A function "persists" when it ran in all but at most one of the worker's profiled
// iterations: a Python program point is named by the ops around it, and the window's first or
// last iteration can name it differently.
bool Persists(double calls_per_iter, int iterations) {
  if (iterations <= 1) return calls_per_iter > 0;
  return calls_per_iter >= (iterations - 1.0) / iterations - 1e-3;
}

// Workers compare only with their like (docs/DESIGN.md "Compare only like with like").
using RoleKey = std::pair<bool, std::string>;  // has_device, declared role
using RoleWorkers = std::vector<const WorkerPattern*>;

std::map<RoleKey, RoleWorkers> ByRole(const std::vector<WorkerPattern>& workers) {
  std::map<RoleKey, RoleWorkers> roles;
  for (const WorkerPattern& w : workers) roles[{w.has_device, w.group}].push_back(&w);
  for (auto& [key, members] : roles) {
    std::sort(members.begin(), members.end(),
              [](const WorkerPattern* a, const WorkerPattern* b) { return a->rank < b->rank; });
  }
  return roles;
}

// One worker's figures for one function or category.
struct Sample {
  double ms_per_iter = 0;
  double ms_per_call = 0;
  double calls_per_iter = 0;
  double standard_error_ms = 0;  // of ms_per_iter, from its category's per-iteration spread
  int iterations = 0;            // the worker's profiled iterations
};

// How well a worker's mean time per iteration in `category` is known from its few profiled
// iterations: the standard error of that category's per-iteration time. A loaded machine's
// iterations vary, and two runs of it then differ by more than a quiet one's.
double CategoryStandardError(const WorkerPattern& w, Category category) {
  const auto& per_iteration = w.iteration_category_beta;
  if (per_iteration.size() < 2) return 0;
  double sum = 0, sum_sq = 0;
  for (const auto& shares : per_iteration) {
    double ms = shares[static_cast<size_t>(category)] * w.iteration_s * 1e3;
    sum += ms;
    sum_sq += ms * ms;
  }
  double n = static_cast<double>(per_iteration.size());
  double variance = std::max(0.0, (sum_sq - sum * sum / n) / (n - 1));
  return std::sqrt(variance / n);
}

struct Column {
  std::vector<int> ranks;
  std::vector<double> iteration_ms;
  std::vector<Sample> samples;
};

using FunctionKey = std::pair<std::string, Category>;

Sample FunctionSample(const WorkerPattern& w, const FunctionKey& key) {
  for (const FunctionPattern& f : w.functions) {
    if (f.category == key.second && f.name == key.first) {
      return {f.beta * w.iteration_s * 1e3, f.mean_duration_us / 1e3, f.calls_per_iter,
              CategoryStandardError(w, f.category)};
    }
  }
  return {0, 0, 0, CategoryStandardError(w, key.second)};
}

Sample CategorySample(const WorkerPattern& w, Category category) {
  return {w.category_beta[static_cast<size_t>(category)] * w.iteration_s * 1e3, 0, 0,
          CategoryStandardError(w, category)};
}

template <typename SampleOf>
Column ColumnOf(const RoleWorkers& workers, SampleOf sample_of) {
  Column column;
  for (const WorkerPattern* w : workers) {
    column.ranks.push_back(w->rank);
    column.iteration_ms.push_back(w->iteration_s * 1e3);
    column.samples.push_back(sample_of(*w));
    column.samples.back().iterations = w->iterations();
  }
  return column;
}

double Median(std::vector<double> values) { return MedianInPlace(values); }

double Spread(const Column& column) {
  std::vector<double> values;
  for (const Sample& s : column.samples) values.push_back(s.ms_per_iter);
  return kMadToSigma * MedianAndMad(std::move(values)).mad;
}

// The base's figures a worker of "now" is compared with: the same rank when the base has it,
// else the median of the base's workers of the role (a different world size).
struct Reference {
  Sample sample;
  double iteration_ms = 0;
};

Reference MedianReference(const Column& base) {
  std::vector<double> ms, per_call, calls, standard_errors;
  int iterations = 0;
  for (const Sample& s : base.samples) {
    ms.push_back(s.ms_per_iter);
    calls.push_back(s.calls_per_iter);
    standard_errors.push_back(s.standard_error_ms);
    if (s.calls_per_iter > 0) per_call.push_back(s.ms_per_call);
    iterations = std::max(iterations, s.iterations);
  }
  Sample median{Median(ms), Median(per_call), Median(calls), Median(standard_errors), iterations};
  return {median, Median(base.iteration_ms)};
}

Reference ReferenceFor(int rank, const Column& base, const Reference& median) {
  auto it = std::find(base.ranks.begin(), base.ranks.end(), rank);
  if (it == base.ranks.end()) return median;
  size_t j = static_cast<size_t>(it - base.ranks.begin());
  return {base.samples[j], base.iteration_ms[j]};
}

bool AllZero(const Column& column) {
  return std::all_of(column.samples.begin(), column.samples.end(),
                     [](const Sample& s) { return s.ms_per_iter == 0 && s.calls_per_iter == 0; });
}

struct Affected {
  std::vector<size_t> now_index;
  std::vector<Reference> references;
  std::vector<double> deltas;
  std::vector<double> bars;
};

PatternChange Summarize(const Affected& a, const Column& now, bool grew, bool kind_new, int role_workers) {
  PatternChange c;
  c.kind = grew ? (kind_new ? ChangeKind::kAppeared : ChangeKind::kGrew)
                : (kind_new ? ChangeKind::kVanished : ChangeKind::kShrank);
  std::vector<double> base_ms, now_ms, base_call, now_call, base_calls, now_calls;
  for (size_t k = 0; k < a.now_index.size(); ++k) {
    const Sample& n = now.samples[a.now_index[k]];
    const Sample& b = a.references[k].sample;
    base_ms.push_back(b.ms_per_iter);
    now_ms.push_back(n.ms_per_iter);
    base_calls.push_back(b.calls_per_iter);
    now_calls.push_back(n.calls_per_iter);
    if (b.calls_per_iter > 0) base_call.push_back(b.ms_per_call);
    if (n.calls_per_iter > 0) now_call.push_back(n.ms_per_call);
    c.ranks.push_back(now.ranks[a.now_index[k]]);
    if (std::abs(a.deltas[k]) > std::abs(c.largest_delta_ms_per_iter)) c.largest_delta_ms_per_iter = a.deltas[k];
  }
  c.base_ms_per_iter = Median(base_ms);
  c.now_ms_per_iter = Median(now_ms);
  c.delta_ms_per_iter = Median(a.deltas);
  c.base_ms_per_call = Median(base_call);
  c.now_ms_per_call = Median(now_call);
  c.base_calls_per_iter = Median(base_calls);
  c.now_calls_per_iter = Median(now_calls);
  c.noise_ms_per_iter = Median(a.bars);
  c.role_workers = role_workers;
  std::sort(c.ranks.begin(), c.ranks.end());
  return c;
}

// The grown and the shrunk changes (zero, one or both) of one function or category in a role.
// `persistent`: a function's change must be carried by calls in every profiled iteration of the
// side where it is larger (localization's rule too: a fault persists, noise moves around).
// `exact_calls`: its calls are exact (a collective, named by its op and size), so one that no
// worker called at the base and a worker now calls in every iteration appeared there, whatever its
// time's noise: its bar is only the least share of an iteration a change must hold. Its time
// varies between ranks by nature (a collective owns little of the last arriver's step), and a
// loaded node's iterations vary: 5 ranks beside a neighbour that each called a new barrier 20
// times a step, 15.5-18.8 ms of it, cleared the noise of their communication on 2 ranks.
std::vector<PatternChange> CompareColumns(const Column& base, const Column& now, const DiffOptions& options,
                                          bool persistent, bool exact_calls = false) {
  std::vector<PatternChange> changes;
  if (base.samples.empty() || now.samples.empty()) return changes;
  const double noise = options.noise_spreads * std::max(Spread(base), Spread(now));
  const Reference median = MedianReference(base);
  auto [base_low, base_high] =
      std::minmax_element(base.samples.begin(), base.samples.end(),
                          [](const Sample& a, const Sample& b) { return a.ms_per_iter < b.ms_per_iter; });
  Affected grew, shrank;
  const bool new_calls = exact_calls && AllZero(base);
  for (size_t i = 0; i < now.samples.size(); ++i) {
    Reference ref = ReferenceFor(now.ranks[i], base, median);
    const double value = now.samples[i].ms_per_iter;
    double delta = value - ref.sample.ms_per_iter;
    double bar = options.min_iteration_share * std::max(now.iteration_ms[i], ref.iteration_ms);
    if (!(new_calls && Persists(now.samples[i].calls_per_iter, now.samples[i].iterations))) {
      bar = std::max(
          {bar, noise,
           options.noise_spreads * std::hypot(now.samples[i].standard_error_ms, ref.sample.standard_error_ms)});
    }
    if (std::abs(delta) <= bar) continue;
    // Like workers are interchangeable: which of them is slowest in a healthy run is chance.
    // A change must also leave the base's whole range of like workers by the bar.
    if (delta > 0 ? value <= base_high->ms_per_iter + bar : value >= base_low->ms_per_iter - bar) continue;
    const Sample& larger = delta > 0 ? now.samples[i] : ref.sample;
    if (persistent && !Persists(larger.calls_per_iter, larger.iterations)) continue;
    Affected& side = delta > 0 ? grew : shrank;
    side.now_index.push_back(i);
    side.references.push_back(ref);
    side.deltas.push_back(delta);
    side.bars.push_back(bar);
  }
  int role_workers = static_cast<int>(now.samples.size());
  if (!grew.deltas.empty()) changes.push_back(Summarize(grew, now, true, AllZero(base), role_workers));
  if (!shrank.deltas.empty()) changes.push_back(Summarize(shrank, now, false, AllZero(now), role_workers));
  return changes;
}

void SortChanges(std::vector<PatternChange>* changes) {
  std::stable_sort(changes->begin(), changes->end(), [](const PatternChange& a, const PatternChange& b) {
    auto key = [](const PatternChange& c) {
      return std::make_tuple(!c.grew(), c.category == Category::kCommunication, -std::abs(c.largest_delta_ms_per_iter));
    };
    return key(a) < key(b);
  });
}

DiffSide SideOf(const std::vector<WorkerPattern>& workers) {
  DiffSide side;
  side.workers = static_cast<int>(workers.size());
  std::vector<double> iteration_ms;
  for (const WorkerPattern& w : workers) {
    side.world_size = std::max(side.world_size, w.world_size);
    iteration_ms.push_back(w.iteration_s * 1e3);
    if (w.step_ids.empty()) continue;
    if (side.first_step < 0 || w.step_ids.front() < side.first_step) side.first_step = w.step_ids.front();
    side.last_step = std::max(side.last_step, w.step_ids.back());
  }
  if (iteration_ms.empty()) return side;
  auto [lo, hi] = std::minmax_element(iteration_ms.begin(), iteration_ms.end());
  side.min_iteration_ms = *lo;
  side.max_iteration_ms = *hi;
  side.iteration_ms = Median(iteration_ms);
  return side;
}

std::string RoleName(const RoleKey& key) {
  return key.second.empty() ? std::string(key.first ? "GPU workers" : "CPU workers") : key.second;
}

// A collective's calls on `workers`, aligned by their order among the collective's calls on each.
CollectiveCalls CallsOf(const RoleWorkers& workers, const std::string& collective) {
  std::vector<std::vector<float>> durations;  // per worker, its calls of `collective` in order
  for (const WorkerPattern* w : workers) {
    std::vector<float> calls;
    for (const CollectiveCall& c : w->collectives) {
      if (c.name == collective) calls.push_back(c.duration_us);
    }
    if (!calls.empty()) durations.push_back(std::move(calls));
  }
  if (durations.size() < 2) return {};
  size_t aligned = SIZE_MAX;
  for (const auto& calls : durations) aligned = std::min(aligned, calls.size());
  double shortest_us = 0, all_us = 0;
  for (size_t i = 0; i < aligned; ++i) {
    float shortest = durations.front()[i];
    for (const auto& calls : durations) {
      shortest = std::min(shortest, calls[i]);
      all_us += calls[i];
    }
    shortest_us += shortest;
  }
  const auto n = static_cast<double>(aligned);
  return {shortest_us / n / 1e3, all_us / n / static_cast<double>(durations.size()) / 1e3};
}

void DiffRole(const std::string& role, const RoleWorkers& base, const RoleWorkers& now, const DiffOptions& options,
              PatternDiff* diff) {
  std::vector<FunctionKey> keys;
  for (const RoleWorkers* side : {&base, &now}) {
    for (const WorkerPattern* w : *side) {
      for (const FunctionPattern& f : w->functions) keys.emplace_back(f.name, f.category);
    }
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  for (const FunctionKey& key : keys) {
    auto of = [&](const WorkerPattern& w) { return FunctionSample(w, key); };
    for (PatternChange& c : CompareColumns(ColumnOf(base, of), ColumnOf(now, of), options, /*persistent=*/true,
                                           /*exact_calls=*/key.second == Category::kCommunication)) {
      c.role = role;
      c.function = key.first;
      c.category = key.second;
      if (key.second == Category::kCommunication) {
        c.base_calls = CallsOf(base, key.first);
        c.now_calls = CallsOf(now, key.first);
      }
      diff->functions.push_back(std::move(c));
    }
  }
  for (int i = 0; i < kCategoryCount; ++i) {
    Category category = static_cast<Category>(i);
    auto of = [&](const WorkerPattern& w) { return CategorySample(w, category); };
    for (PatternChange& c : CompareColumns(ColumnOf(base, of), ColumnOf(now, of), options, /*persistent=*/false)) {
      c.role = role;
      c.category = category;
      diff->categories.push_back(std::move(c));
    }
  }
}

}  // namespace

std::string_view Name(ChangeKind kind) {
  switch (kind) {
    case ChangeKind::kGrew:
      return "grew";
    case ChangeKind::kShrank:
      return "shrank";
    case ChangeKind::kAppeared:
      return "appeared";
    case ChangeKind::kVanished:
      return "vanished";
  }
  return "?";
}

PatternDiff DiffPatterns(const std::vector<WorkerPattern>& base, const std::vector<WorkerPattern>& now,
                         const DiffOptions& options) {
  PatternDiff diff;
  diff.base = SideOf(base);
  diff.now = SideOf(now);
  if (diff.base.world_size != diff.now.world_size) {
    diff.notes.push_back(
        fmt::format("world size {} at the base, {} now: each worker is compared with the same rank "
                    "of its role where the base has it, else with the median of the base's "
                    "workers of its role",
                    diff.base.world_size, diff.now.world_size));
  }
  std::map<RoleKey, RoleWorkers> base_roles = ByRole(base), now_roles = ByRole(now);
  const bool one_role = base_roles.size() <= 1 && now_roles.size() <= 1;
  for (const auto& [key, workers] : now_roles) {
    std::string role = one_role ? "" : RoleName(key);
    // One role on each side is the same job's workers even when its signature changed.
    auto it = one_role ? base_roles.begin() : base_roles.find(key);
    if (it == base_roles.end()) {
      diff.notes.push_back(
          fmt::format("{}: {} workers now, none at the base: not compared", RoleName(key), workers.size()));
      continue;
    }
    DiffRole(role, it->second, workers, options, &diff);
  }
  for (const auto& [key, workers] : base_roles) {
    if (!one_role && !now_roles.count(key)) {
      diff.notes.push_back(
          fmt::format("{}: {} workers at the base, none now: not compared", RoleName(key), workers.size()));
    }
  }
  SortChanges(&diff.functions);
  SortChanges(&diff.categories);
  return diff;
}

const PatternChange* GrownOnFewerThanHalf(const std::vector<PatternChange>& changes, Category category,
                                          const std::function<bool(int rank)>& excluded) {
  auto grown = std::find_if(changes.begin(), changes.end(), [&](const PatternChange& c) {
    return c.grew() && c.category == category && !c.ranks.empty() &&
           2 * c.ranks.size() < static_cast<size_t>(c.role_workers) &&
           std::none_of(c.ranks.begin(), c.ranks.end(), excluded);
  });
  return grown == changes.end() ? nullptr : &*grown;
}

}  // namespace eroica
