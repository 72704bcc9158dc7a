#include "diff/own_loader_growth.h"

#include <fmt/core.h>

#include <algorithm>
#include <string>

#include "diff/diff_report.h"

namespace eroica {
namespace {

bool NamedForItsLoader(const Diagnosis& diagnosis, int rank) {
  return std::any_of(diagnosis.findings.begin(), diagnosis.findings.end(), [&](const Finding& f) {
    return f.category == FindingCategory::kDataloader &&
           std::find(f.workers.begin(), f.workers.end(), rank) != f.workers.end();
  });
}

}  // namespace

void FindOwnLoaderGrowth(const std::vector<WorkerPattern>& now, const PatternDiff& diff, Diagnosis* diagnosis,
                         const BaselineOptions& options) {
  // Own work first, largest change first (PatternDiff::functions): the first such loader is the largest.
  const PatternChange* grown = GrownOnFewerThanHalf(diff.functions, Category::kDataloader,
                                                    [&](int r) { return NamedForItsLoader(*diagnosis, r); });
  if (grown == nullptr) return;
  // The window's own global findings explain their impact here, not the whole slowdown (a share of
  // this window's step is all they measure): an unseen 4-rank LSTM job whose every rank began a
  // Python loop (82 ms a step) while rank 2's collate grew 4 -> 167 ms had only the loop named.
  // Every rank's loader, though, makes a rank's longer wait its turn.
  if (std::any_of(diagnosis->findings.begin(), diagnosis->findings.end(), [](const Finding& f) {
        return f.scope == FindingScope::kGlobal && f.category == FindingCategory::kDataloader;
      })) {
    return;
  }
  BaselineOptions measured = options;
  measured.window_globals_stand_for_it = false;
  const CoresNow cores = ReadCoresNow(now);
  const double slowdown_ms = UnexplainedSlowdownMs(diff, *diagnosis, measured, cores);
  if (slowdown_ms <= 0) return;
  Finding f;
  f.scope = FindingScope::kLocal;
  f.category = FindingCategory::kDataloader;
  f.workers = grown->ranks;
  f.function = grown->function;
  f.from_baseline = true;
  f.impact_s_per_iter = std::min(grown->delta_ms_per_iter, slowdown_ms) / 1e3;
  f.evidence = fmt::format(
      "against the baseline{}: {} grew on {} alone, {:.1f} -> {:.1f} ms/iter ({:+.1f}, noise bar {:.1f}), its "
      "{} peers' not: its own input pipeline (its dataset, collate, storage, worker processes) got slower, and each "
      "step's collectives wait for the rank that is late; the comparison with its peers did not single it out in "
      "this window (where the ranks' steps vary more than that, the slowest rank moves from step to step) {}",
      StepsText(diff.base), f.function, RanksText(grown->ranks), grown->base_ms_per_iter, grown->now_ms_per_iter,
      grown->delta_ms_per_iter, grown->noise_ms_per_iter, grown->role_workers - static_cast<int>(grown->ranks.size()),
      SlowdownSource(diff, measured, slowdown_ms));
  InsertUnexplainedCause(diagnosis, std::move(f), cores);
}

}  // namespace eroica
