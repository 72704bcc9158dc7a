// The AI prompt's request for a finding (prompt.h): the category's own (localize/finding_kind.h),
// or, for a straggler whose delay began before the window, a request to look around the step.
#include <fmt/core.h>

#include "report/prompt.h"
#include "report/verdict.h"

namespace eroica {

std::string FindingRequest(const Finding& f, const Diagnosis& d, const std::string& where,
                           const std::string& waiting_in) {
  int rank = f.workers.empty() ? -1 : f.workers.front();
  std::string start = where.empty() ? fmt::format("`{}`", f.function) : fmt::format("`{}`", where);
  RequestArguments args{rank, FormatDuration(f.impact_s_per_iter), start, f.function, ""};
  if (f.category == FindingCategory::kHang) {
    args.waiting_at = waiting_in.empty() ? "the point where the other ranks wait for it"
                                         : fmt::format("the collective the other ranks wait in (`{}`)", waiting_in);
    return RequestFor(f.category, FindingScope::kLocal, args);
  }
  if (f.scope == FindingScope::kLocal && f.evidence.find("began before the profiled window") != std::string::npos) {
    return fmt::format(
        "Rank {0} arrives last at the collectives and the other ranks wait {1} per iteration for it, but inside the "
        "profiled window it works only slightly more than they do: the delay starts between iterations or before the "
        "window. Look for work that only rank {0} does around the step (logging, metrics, checkpointing, evaluation, "
        "data preparation, a rank-dependent branch), starting from {2}, and propose a patch that removes it from the "
        "step or spreads it across ranks. If nothing in the code singles out rank {0}, say which host-level checks "
        "to run on its machine.",
        rank, FormatDuration(f.impact_s_per_iter), start);
  }
  bool everyone = d.workers > 1 && static_cast<int>(f.workers.size()) >= d.workers;
  return RequestFor(f.category, everyone ? FindingScope::kGlobal : f.scope, args);
}

}  // namespace eroica
