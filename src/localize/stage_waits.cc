#include "localize/stage_waits.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <string_view>

#include "base/robust_stats.h"

namespace eroica {

// A real 2-stage x 2-replica gloo pipeline whose rank 0 (stage 0) slept 20 ms in its loader each
// micro-batch (python/tests/workloads/pipeline_train.py): rank 0 +41.4 ms a step, and stage 1
// (ranks 2, 3) 0.92 of each step in communication, 32.3 ms a step lost in its receives, reported
// as a second problem ("check the network"). A communication problem of the waiting stage's own
// (a slow link) would cost it more than the straggler's time, or come with no straggler.
void FoldWaitsForAnotherStage(std::vector<GroupFindings>* groups) {
  std::vector<bool> stage(groups->size());
  for (size_t g = 0; g < groups->size(); ++g) stage[g] = ExchangesPointToPoint(*(*groups)[g].group);
  for (size_t waiting = 0; waiting < groups->size(); ++waiting) {
    if (!stage[waiting]) continue;
    std::erase_if((*groups)[waiting].global, [&](const Finding& wait) {
      if (wait.category != FindingCategory::kCommunication) return false;
      Finding* cause = nullptr;
      for (size_t other = 0; other < groups->size(); ++other) {
        if (other == waiting || !stage[other]) continue;
        for (Finding& straggler : (*groups)[other].local) {
          if (straggler.category == FindingCategory::kCommunication || straggler.category == FindingCategory::kHang) {
            continue;
          }
          if (cause == nullptr || straggler.impact_s_per_iter > cause->impact_s_per_iter) cause = &straggler;
        }
      }
      if (cause == nullptr || wait.impact_s_per_iter > cause->impact_s_per_iter) return false;
      cause->evidence += fmt::format(
          "; the pipeline stage of ranks {} waits for it too: {:.2f} of each of its steps in communication ({}), "
          "{:.1f} ms per iteration, the stages passing their data point-to-point",
          fmt::join(wait.workers, ","), wait.beta, wait.function, wait.impact_s_per_iter * 1e3);
      return true;
    });
  }
}

void SeeWaitsForABusierStage(std::vector<GroupFindings>* groups, const Expectations& e,
                             std::vector<std::string>* notes) {
  // Receives: what the summarizer names gloo's (summary/function_name.h), as groups.cc reads them.
  constexpr std::string_view kReceive = "recv";
  std::vector<bool> stage(groups->size());
  for (size_t g = 0; g < groups->size(); ++g) stage[g] = ExchangesPointToPoint(*(*groups)[g].group);
  // A stage waiting within its box: its time is its own work (a straggler's among it, where one
  // is slower than its peers) -- unless a finding of its own is in communication (a degraded
  // link of its own).
  auto busier = [&](size_t other, double* wait) {
    const GroupFindings& g = (*groups)[other];
    auto in_communication = [](const Finding& f) { return f.category == FindingCategory::kCommunication; };
    if (!stage[other] || std::any_of(g.local.begin(), g.local.end(), in_communication) ||
        std::any_of(g.global.begin(), g.global.end(), in_communication)) {
      return false;
    }
    std::vector<double> betas = CategoryBetas(*g.group, Category::kCommunication);
    *wait = MedianInPlace(betas);
    return e.CategoryDistance(Category::kCommunication, *wait, g.group->row(0).has_device) <= 0;
  };
  for (size_t waiting = 0; waiting < groups->size(); ++waiting) {
    if (!stage[waiting]) continue;
    std::erase_if((*groups)[waiting].global, [&](const Finding& wait) {
      if (wait.category != FindingCategory::kCommunication || wait.function != kReceive) return false;
      for (size_t other = 0; other < groups->size(); ++other) {
        double other_wait = 0;
        if (other == waiting || !busier(other, &other_wait)) continue;
        std::vector<int> ranks;
        for (size_t k = 0; k < (*groups)[other].group->size(); ++k)
          ranks.push_back((*groups)[other].group->row(k).rank);
        notes->push_back(fmt::format(
            "the pipeline stage of ranks {} waits β {:.2f} of each step in its receives ({:.1f} ms per iteration over "
            "its box) for the stage of ranks {}, which waits β {:.2f}, within its box: that stage's work (the "
            "schedule's fill and drain, stages of unequal work), not the network; more micro-batches a step or "
            "layers moved between the stages shrink it",
            fmt::join(wait.workers, ","), wait.beta, wait.impact_s_per_iter * 1e3, fmt::join(ranks, ","), other_wait));
        return true;
      }
      return false;
    });
  }
}

}  // namespace eroica
