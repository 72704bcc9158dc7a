#include "localize/stage_waits.h"

#include <fmt/core.h>
#include <fmt/format.h>

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

}  // namespace eroica
