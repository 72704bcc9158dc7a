#include "localize/across_roles.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace eroica {
namespace {

Finding Global(FindingCategory category, std::string function, std::vector<int> workers, double impact_s) {
  Finding f;
  f.scope = FindingScope::kGlobal;
  f.category = category;
  f.function = std::move(function);
  f.workers = std::move(workers);
  f.impact_s_per_iter = impact_s;
  f.beta = impact_s * 4;
  f.evidence = "2 of 2 workers spend it";
  return f;
}

// A 2-stage pipeline whose every rank collected reference cycles each step: one finding per
// stage, one problem. A local finding, another category or function stays apart.
TEST(AcrossRolesTest, OneGlobalCauseOfEveryRoleIsOneFinding) {
  Finding straggler = Global(FindingCategory::kDataloader, "enumerate(DataLoader)", {0}, 0.15);
  straggler.scope = FindingScope::kLocal;
  std::vector<Finding> findings = {straggler, Global(FindingCategory::kHost, "eroica::gc", {2, 3}, 0.081),
                                   Global(FindingCategory::kCommunication, "recv", {4, 5}, 0.02),
                                   Global(FindingCategory::kHost, "eroica::gc", {0, 1}, 0.0727),
                                   Global(FindingCategory::kHost, "(python loop)", {4, 5}, 0.03)};
  MergeGlobalFindingsAcrossRoles(&findings);
  ASSERT_EQ(findings.size(), 4u);
  EXPECT_EQ(findings[0].scope, FindingScope::kLocal);
  EXPECT_EQ(findings[1].workers, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_DOUBLE_EQ(findings[1].impact_s_per_iter, 0.081);
  EXPECT_EQ(findings[1].evidence,
            "each role pays it: ranks 2,3: 2 of 2 workers spend it; ranks 0,1: 2 of 2 workers spend it");
  EXPECT_EQ(findings[2].function, "recv");
  EXPECT_EQ(findings[3].function, "(python loop)");
}

}  // namespace
}  // namespace eroica
