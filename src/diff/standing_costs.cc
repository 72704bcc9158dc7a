#include "diff/standing_costs.h"

#include <fmt/core.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <string_view>
#include <unordered_set>

#include "base/robust_stats.h"
#include "diff/baseline_findings.h"
#include "diff/new_code_lines.h"
#include "localize/cpu_contention.h"

namespace eroica {
namespace {

double Share(const WorkerPattern& w, Category c) { return w.category_beta[static_cast<size_t>(c)]; }

// The finding's category's share of the step and time a step then and now (medians over its ranks),
// for a global finding.
struct Shares {
  double base = 0;
  double now = 0;
  double base_ms = 0;
  double now_ms = 0;
};

std::optional<Shares> GlobalShares(const std::vector<RankPair>& pairs, const Finding& f, Category c) {
  const std::unordered_set<int> named(f.workers.begin(), f.workers.end());  // a global one may name 10^4 ranks
  std::vector<double> base, now, base_ms, now_ms;
  for (const RankPair& p : pairs) {
    if (!named.contains(p.now->rank)) continue;
    base.push_back(Share(*p.base, c));
    now.push_back(Share(*p.now, c));
    base_ms.push_back(Share(*p.base, c) * p.base->iteration_s * 1e3);
    now_ms.push_back(Share(*p.now, c) * p.now->iteration_s * 1e3);
  }
  if (base.empty()) return std::nullopt;
  return Shares{MedianInPlace(base), MedianInPlace(now), MedianInPlace(base_ms), MedianInPlace(now_ms)};
}

// The rank's excess over the median of the others' `value`, on one side; nullopt where any rank
// has no value there.
std::optional<double> ExcessOverOthers(const std::vector<RankPair>& pairs, int rank, bool base_side,
                                       const std::function<std::optional<double>(const WorkerPattern&)>& value) {
  std::optional<double> mine;
  std::vector<double> others;
  for (const RankPair& p : pairs) {
    std::optional<double> v = value(base_side ? *p.base : *p.now);
    if (!v) return std::nullopt;
    if (p.now->rank == rank) {
      mine = v;
    } else {
      others.push_back(*v);
    }
  }
  if (!mine || others.empty()) return std::nullopt;
  return *mine - MedianInPlace(others);
}

// A rank's share of the step in category `c`.
auto ShareOf(Category c) {
  return [c](const WorkerPattern& w) -> std::optional<double> { return Share(w, c); };
}

// A rank's DataLoader workers' cores; none where they were not read (none, or it loads in its
// training process).
std::optional<double> LoaderCores(const WorkerPattern& w) {
  if (!w.cpu || !LoaderWorkersRead(*w.cpu)) return std::nullopt;
  return w.cpu->loader_cpu;
}

// Whether the rank's CPU quota holds it back now and held it back less than half as long at the
// baseline (cpu.stat's throttled share of the window: exact, 0 on ranks without a quota): then
// its finding is the new quota's, whatever its excess over its peers was then. An unseen 5-rank
// language model whose rank 1 got a 45 % quota after its baseline (5 ranks sharing 2 cores): its
// window 0.10 throttled, its baseline's 0.00, its compute +0.01 of the step over its peers' then
// and +0.02 now, which had read "as at the baseline".
bool QuotaNewSinceTheBaseline(const std::vector<RankPair>& pairs, int rank) {
  for (const RankPair& p : pairs) {
    if (p.now->rank != rank) continue;
    if (!p.now->cpu || !p.base->cpu || p.now->cpu->throttled <= 0 || p.base->cpu->throttled < 0) return false;
    return p.base->cpu->throttled < 0.5 * p.now->cpu->throttled;
  }
  return false;
}

// Whether `f` was there at the baseline, and the evidence that says so (a clause).
std::optional<std::string> StandingEvidence(const std::vector<WorkerPattern>& base_workers,
                                            const std::vector<WorkerPattern>& now_workers,
                                            const std::vector<RankPair>& pairs, const Finding& f,
                                            const PatternDiff& diff, double step_ms) {
  auto c = static_cast<Category>(f.category);
  // A function the baseline never ran (the diff's `appeared`) is no cost the job already had,
  // whatever its category's share did: a 5-rank ViT's gc.collect, new at 386 ms a step in a step
  // grown from 519 ms, moved its ranks' host share by less than half its cost and read "as at the
  // baseline" beside the baseline's own "absent at the baseline".
  if (!f.function.empty() && std::any_of(diff.functions.begin(), diff.functions.end(), [&](const PatternChange& ch) {
        return ch.kind == ChangeKind::kAppeared && ch.function == f.function;
      })) {
    return std::nullopt;
  }
  if (f.scope == FindingScope::kGlobal) {
    // Nor is code the baseline never ran, named by its line, whatever the category's share did: an
    // unseen 4-rank LSTM job whose every rank began a Python loop (24 -> 102 ms of host time a
    // step) while rank 2's slower collate doubled the step read "as at the baseline", the host's
    // share 0.04 then and 0.08 now.
    if (!f.location.empty() && LineNewSinceTheBaseline(base_workers, now_workers, f.location, f.workers))
      return std::nullopt;
    std::optional<Shares> s = GlobalShares(pairs, f, c);
    if (!s) return std::nullopt;
    const double half_ms = 0.5 * f.impact_s_per_iter * 1e3;
    // Its time a step, where the job runs no slower than at the baseline: a share grows when the
    // rest of the step shrinks. An unseen recommender's healthy 6-rank run ran 116 ms steps at its
    // baseline and 87 ms in a forced window, its loader 0.15 of the step then and 0.19 now, 17.4
    // and 16.5 ms: `global dataloader`, as if the loader had grown.
    const bool no_slower = diff.now.iteration_ms > 0 && diff.now.iteration_ms <= diff.base.iteration_ms;
    if ((s->now - s->base) * step_ms >= half_ms && (!no_slower || s->now_ms - s->base_ms >= half_ms)) {
      return std::nullopt;
    }
    return fmt::format(
        "as at the baseline ({} {:.2f} of the step then, {:.2f} now; {:.1f} and {:.1f} ms a step): a cost the job "
        "already had",
        CategoryName(c), s->base, s->now, s->base_ms, s->now_ms);
  }
  if (f.workers.size() != 1 || QuotaNewSinceTheBaseline(pairs, f.workers.front())) return std::nullopt;
  // What the finding costs may be the rank's own work in all, not its category's alone: a rank
  // named for calls of its own (host) whose excess lies in its ops. There its category's excess
  // says nothing of that cost, so where it is under half the cost its own work (all but its
  // waiting) is compared then and now. An unseen 5-rank mixture of experts whose rank 2 had 2.2x
  // the batch, named as host time (6,899 compute ops a step against 4,044) at 57 ms (0.108 of the
  // step, its own work +0.105): its host +0.01 over its peers then, +0.00 now, read "as at the
  // baseline". Not where its cost is the cores its processes took from every rank
  // (Finding::cores_taken_s_per_iter): its own work does not hold that (a 5-rank graph network
  // whose rank 0's metrics thread took 0.32 of the cores, its own work +0.04 over its peers then).
  std::function<std::optional<double>(const WorkerPattern&)> measure = ShareOf(c);
  std::string_view measured = CategoryName(c);
  std::optional<double> now = ExcessOverOthers(pairs, f.workers.front(), false, measure);
  const double cost_share = diff.now.iteration_ms > 0 ? 1e3 * f.impact_s_per_iter / diff.now.iteration_ms : 0;
  if (now && *now < 0.5 * cost_share && f.cores_taken_s_per_iter <= 0) {
    measure = [](const WorkerPattern& w) -> std::optional<double> { return 1 - Share(w, Category::kCommunication); };
    measured = "own work";
    now = ExcessOverOthers(pairs, f.workers.front(), false, measure);
  }
  std::optional<double> then = ExcessOverOthers(pairs, f.workers.front(), true, measure);
  if (!then || !now || *now <= 0 || *then < 0.5 * *now) return std::nullopt;
  // A rank's loader workers that keep up by taking cores cost what they take, not the rank's wait
  // for them: that is the cost the baseline must have had. An unseen 3-rank contrastive job whose
  // rank 1's jitter ran Python passes in its 2 workers: 0.78 cores against its peers' 0.09 now,
  // like theirs at the baseline; its wait for batches +0.02 of the step over its peers' then (noise)
  // and +0.04 now had read "as at the baseline".
  if (f.category == FindingCategory::kDataloader) {
    std::optional<double> cores_then = ExcessOverOthers(pairs, f.workers.front(), true, LoaderCores);
    std::optional<double> cores_now = ExcessOverOthers(pairs, f.workers.front(), false, LoaderCores);
    if (cores_then && cores_now && *cores_now > 0 && *cores_then < 0.5 * *cores_now) return std::nullopt;
  }
  return fmt::format(
      "as at the baseline (its {} {:+.2f} of the step over its peers' then, {:+.2f} now): a cost the job already had",
      measured, *then, *now);
}

}  // namespace

void MarkStandingCosts(const std::vector<WorkerPattern>& base, const std::vector<WorkerPattern>& now,
                       const PatternDiff& diff, Diagnosis* diagnosis) {
  std::vector<RankPair> pairs = PairsByRank(base, now);
  const double step_ms = StepMs(diff);
  if (pairs.size() < 2 || step_ms <= 0) return;
  for (Finding& f : diagnosis->findings) {
    if (f.from_baseline || f.category == FindingCategory::kImbalance || f.category == FindingCategory::kHang) {
      continue;
    }
    if (std::optional<std::string> evidence = StandingEvidence(base, now, pairs, f, diff, step_ms)) {
      f.standing = true;
      // A clause of the evidence's last sentence, or a sentence of its own after a full stop (the
      // code location's).
      if (f.evidence.ends_with('.')) {
        (*evidence)[0] = 'A';
        f.evidence += " " + *evidence + ".";
      } else {
        f.evidence += "; " + *evidence;
      }
    }
  }
}

void PutStandingCostsLast(Diagnosis* diagnosis) {
  std::stable_partition(diagnosis->findings.begin(), diagnosis->findings.end(),
                        [](const Finding& f) { return f.category == FindingCategory::kHang || !f.standing; });
}

}  // namespace eroica
