#include "diff/grown_wait.h"

#include <fmt/core.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "localize/collective_waits.h"
#include "localize/localizer.h"
#include "localize/worker_table.h"

namespace eroica {
namespace {

bool NamedByALocalFinding(const Diagnosis& diagnosis, int rank) {
  return std::any_of(diagnosis.findings.begin(), diagnosis.findings.end(), [&](const Finding& f) {
    return f.scope == FindingScope::kLocal && std::find(f.workers.begin(), f.workers.end(), rank) != f.workers.end();
  });
}

// Most of the others' waiting, not merely the largest part of it: where it is spread over ranks
// the slowness moved between them (batch I's i-blur3, whose rank 3's loader was the cause: rank
// 0 waited for most in 4 of 5 steps, for 0.45 of all the waiting).
constexpr double kMostOfTheWaiting = 0.5;

struct GrownWait {
  RankWaits now;
  double base_s_per_iter = 0;
  double growth_ms() const { return (now.waited_s_per_iter - base_s_per_iter) * 1e3; }
};

// The rank whose wait grew most of those the others waited for across the window now (the
// header's bars), its growth at least half the slowdown; nullopt where none.
std::optional<GrownWait> MostGrownWait(const std::vector<RankWaits>& base, const std::vector<RankWaits>& now,
                                       const Diagnosis& diagnosis, double slowdown_ms, const Expectations& e) {
  std::optional<GrownWait> best;
  for (const RankWaits& w : now) {
    if (w.iterations == 0 || w.iterations_waited_for < kAcrossIterationsShare * w.iterations) continue;
    const double floor =
        static_cast<double>(w.group_size) < e.small_group ? e.small_group_min_excess_beta : e.min_excess_beta;
    if (w.wait_share <= kMostOfTheWaiting || w.waited_s_per_iter < floor * w.group_iteration_s) continue;
    if (NamedByALocalFinding(diagnosis, w.rank)) continue;
    auto then = std::find_if(base.begin(), base.end(), [&](const RankWaits& b) { return b.rank == w.rank; });
    GrownWait grown{.now = w, .base_s_per_iter = then != base.end() ? then->waited_s_per_iter : 0.0};
    if (grown.growth_ms() < slowdown_ms / 2) continue;
    if (!best || grown.growth_ms() > best->growth_ms()) best = grown;
  }
  return best;
}

}  // namespace

void FindGrownWaitForOneRank(const std::vector<WorkerPattern>& base, const std::vector<WorkerPattern>& now,
                             const PatternDiff& diff, const Expectations& expectations, Diagnosis* diagnosis,
                             const BaselineOptions& options) {
  BaselineOptions measured = options;
  measured.window_globals_stand_for_it = false;
  const CoresNow cores = ReadCoresNow(now);
  const double slowdown_ms = UnexplainedSlowdownMs(diff, *diagnosis, measured, cores);
  if (slowdown_ms <= 0) return;
  const WorkerTable now_table = WorkerTableOf(now);
  const std::optional<GrownWait> grown = MostGrownWait(
      WaitsForEachRank(WorkerTableOf(base)), WaitsForEachRank(now_table), *diagnosis, slowdown_ms, expectations);
  if (!grown) return;
  const int rank = grown->now.rank;
  std::vector<Finding> local = LocalFindingsWaitedAcross(now_table, rank, expectations);
  std::erase_if(local, [&](const Finding& f) {
    return f.scope != FindingScope::kLocal || f.category == FindingCategory::kCommunication ||
           f.workers != std::vector<int>{rank};
  });
  if (local.empty()) return;
  Finding f = std::move(*std::max_element(local.begin(), local.end(), [](const Finding& a, const Finding& b) {
    return a.impact_s_per_iter < b.impact_s_per_iter;
  }));
  f.from_baseline = true;
  f.impact_s_per_iter = std::min(f.impact_s_per_iter, slowdown_ms / 1e3);
  f.evidence = fmt::format(
      "against the baseline{}: the others' wait for rank {} at the collectives grew {:.1f} -> {:.1f} ms/iter "
      "({:+.1f}), mostly for it in {} of {} iterations and {:.2f} of all their waiting {}: the slowness stayed with "
      "it, where its excess sits inside its peers' swings; {}",
      StepsText(diff.base), rank, grown->base_s_per_iter * 1e3, grown->now.waited_s_per_iter * 1e3, grown->growth_ms(),
      grown->now.iterations_waited_for, grown->now.iterations, grown->now.wait_share,
      SlowdownSource(diff, measured, slowdown_ms), f.evidence);
  InsertUnexplainedCause(diagnosis, std::move(f), cores);
}

}  // namespace eroica
