#include "diff/own_compute_growth.h"

#include <fmt/core.h>

#include <algorithm>
#include <optional>
#include <string>

#include "base/robust_stats.h"
#include "diff/diff_report.h"
#include "localize/expectations.h"

namespace eroica {
namespace {

// Named by a finding of its own (every rank's cause names every rank, and leaves one rank's own).
bool NamedAlone(const Diagnosis& diagnosis, int rank) {
  return std::any_of(diagnosis.findings.begin(), diagnosis.findings.end(), [&](const Finding& f) {
    return f.scope == FindingScope::kLocal && std::find(f.workers.begin(), f.workers.end(), rank) != f.workers.end();
  });
}

// The least by which the grown ranks' training threads ran on a CPU longer than the median of the
// other workers' of their kind (GPU or CPU) and declared role, as the diff's roles (share of the
// window); nullopt where any was not read.
std::optional<double> LeastOnCpuBeyondPeers(const std::vector<WorkerPattern>& now, const std::vector<int>& ranks) {
  auto of_rank = [&](int r) {
    return std::find_if(now.begin(), now.end(), [&](const WorkerPattern& p) { return p.rank == r; });
  };
  auto first = of_rank(ranks.front());
  if (first == now.end()) return std::nullopt;
  std::vector<double> peers;
  for (const WorkerPattern& w : now) {
    if (w.has_device != first->has_device || w.group != first->group) continue;
    if (std::find(ranks.begin(), ranks.end(), w.rank) != ranks.end()) continue;
    if (!w.cpu || w.cpu->main_cpu < 0) return std::nullopt;
    peers.push_back(w.cpu->main_cpu);
  }
  if (peers.empty()) return std::nullopt;
  const double peer = MedianInPlace(peers);
  double least = 1e300;
  for (int r : ranks) {
    auto w = of_rank(r);
    if (w == now.end() || !w->cpu || w->cpu->main_cpu < 0) return std::nullopt;
    least = std::min(least, w->cpu->main_cpu - peer);
  }
  return least;
}

}  // namespace

void FindOwnComputeGrowth(const std::vector<WorkerPattern>& now, const PatternDiff& diff, Diagnosis* diagnosis,
                          const BaselineOptions& options) {
  // The category's total: a stall spreads over the ops it hit (each by less than its bar).
  const PatternChange* grown =
      GrownOnFewerThanHalf(diff.categories, Category::kCompute, [&](int r) { return NamedAlone(*diagnosis, r); });
  if (grown == nullptr) return;
  const Expectations e;
  const double floor =
      static_cast<double>(grown->role_workers) < e.small_group ? e.small_group_min_excess_beta : e.min_excess_beta;
  const std::optional<double> beyond = LeastOnCpuBeyondPeers(now, grown->ranks);
  const CoresNow cores = ReadCoresNow(now);
  if (beyond ? *beyond < floor : cores.busy) return;
  BaselineOptions measured = options;
  measured.window_globals_stand_for_it = false;
  const double slowdown_ms = UnexplainedSlowdownMs(diff, *diagnosis, measured, cores);
  if (slowdown_ms <= 0) return;
  // Named by its largest grown compute function on those ranks (functions come largest first).
  auto function = std::find_if(diff.functions.begin(), diff.functions.end(), [&](const PatternChange& c) {
    return c.grew() && c.category == Category::kCompute && !c.ranks.empty() &&
           std::all_of(c.ranks.begin(), c.ranks.end(), [&](int r) {
             return std::find(grown->ranks.begin(), grown->ranks.end(), r) != grown->ranks.end();
           });
  });
  Finding f;
  f.scope = FindingScope::kLocal;
  f.category = FindingCategory::kCompute;
  f.workers = grown->ranks;
  f.function = function != diff.functions.end() ? function->function : "";
  f.from_baseline = true;
  f.impact_s_per_iter = std::min(grown->delta_ms_per_iter, slowdown_ms) / 1e3;
  std::string named = function != diff.functions.end()
                          ? fmt::format(", most in {} ({:.1f} -> {:.1f} ms/iter)", function->function,
                                        function->base_ms_per_iter, function->now_ms_per_iter)
                          : "";
  const bool one = grown->ranks.size() == 1;
  std::string cpu =
      beyond ? fmt::format(
                   ", and {} training thread{} ran on a CPU {:.2f} of the window longer than {} "
                   "peers': {} own work (the scheduler gives a rank less processor, not more)",
                   one ? "its" : "their", one ? "" : "s", *beyond, one ? "its" : "their", one ? "its" : "their")
             : "";
  f.evidence = fmt::format(
      "against the baseline{}: compute grew on {} alone, {:.1f} -> {:.1f} ms/iter ({:+.1f}, noise bar {:.1f}){}, the "
      "{} peers' not{}; each step's collectives wait for the rank that is late; the comparison with peers did not "
      "single {} out in this window (late in some steps only, where the others' own work swings as much) {}",
      StepsText(diff.base), RanksText(grown->ranks), grown->base_ms_per_iter, grown->now_ms_per_iter,
      grown->delta_ms_per_iter, grown->noise_ms_per_iter, named,
      grown->role_workers - static_cast<int>(grown->ranks.size()), cpu, one ? "it" : "them",
      SlowdownSource(diff, measured, slowdown_ms));
  InsertUnexplainedCause(diagnosis, std::move(f), cores);
}

}  // namespace eroica
