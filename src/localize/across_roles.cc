#include "localize/across_roles.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>

namespace eroica {

void MergeFindingsOfOneCause(std::vector<Finding>* findings, FindingScope scope, std::string_view lead,
                             SameCause same) {
  std::vector<bool> merged(findings->size(), false);  // into an earlier finding
  for (size_t i = 0; i < findings->size(); ++i) {
    Finding& into = (*findings)[i];
    if (merged[i] || into.scope != scope) continue;
    bool grew = false;
    for (size_t j = i + 1; j < findings->size(); ++j) {
      const Finding& other = (*findings)[j];
      bool same_function = same == SameCause::kCategory || other.function == into.function;
      if (merged[j] || other.scope != scope || other.category != into.category || !same_function) continue;
      if (!grew) {  // its own group's evidence gets its ranks too
        // A local finding's evidence starts with its rank already.
        into.evidence = scope == FindingScope::kLocal
                            ? fmt::format("{}: {}", lead, into.evidence)
                            : fmt::format("{}: ranks {}: {}", lead, fmt::join(into.workers, ","), into.evidence);
        grew = true;
      }
      into.evidence += scope == FindingScope::kLocal
                           ? fmt::format("; {}", other.evidence)
                           : fmt::format("; ranks {}: {}", fmt::join(other.workers, ","), other.evidence);
      into.workers.insert(into.workers.end(), other.workers.begin(), other.workers.end());
      into.impact_s_per_iter = std::max(into.impact_s_per_iter, other.impact_s_per_iter);
      into.beta = std::max(into.beta, other.beta);
      merged[j] = true;
    }
    std::sort(into.workers.begin(), into.workers.end());
  }
  size_t k = 0;
  std::erase_if(*findings, [&](const Finding&) { return merged[k++]; });
}

void MergeGlobalFindingsAcrossRoles(std::vector<Finding>* findings) {
  MergeFindingsOfOneCause(findings, FindingScope::kGlobal, "each role pays it");
}

}  // namespace eroica
