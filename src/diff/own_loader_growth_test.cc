#include "diff/own_loader_growth.h"

#include <gtest/gtest.h>

#include <set>
#include <utility>

#include "diff/diff_test_util.h"

namespace eroica {
namespace {

constexpr const char* kLoader = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";

// 4 ranks whose loaders took 2 ms a step at the baseline; now those in `slower` take `grown_ms`
// more, and the others wait that much longer in their all-reduce.
std::vector<WorkerPattern> LoaderJob(double grown_ms, const std::set<int>& slower) {
  return JobWith(4, [&](int r) {
    bool mine = slower.contains(r);
    return FunctionMs{{kLoader, Category::kDataloader, 2 + (mine ? grown_ms : 0)},
                      {"gloo:broadcast", Category::kCommunication, 5 + (mine ? 0 : grown_ms)}};
  });
}

// The rule run on LoaderJob(150, slower) against its baseline, after the window's `findings`.
Diagnosis AfterLoaderGrowth(const std::set<int>& slower, std::vector<Finding> findings = {}) {
  std::vector<WorkerPattern> now = LoaderJob(150, slower);
  Diagnosis d;
  d.findings = std::move(findings);
  FindOwnLoaderGrowth(now, DiffPatterns(LoaderJob(0, {}), now), &d);
  return d;
}

TEST(OwnLoaderGrowth, ARanksLoaderGrownSinceTheBaselineIsItsOwnSlowerInputPipeline) {
  Diagnosis d = AfterLoaderGrowth({1});
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.scope, FindingScope::kLocal);
  EXPECT_EQ(f.category, FindingCategory::kDataloader);
  EXPECT_EQ(f.workers, std::vector<int>{1});
  EXPECT_EQ(f.function, kLoader);
  EXPECT_TRUE(f.from_baseline);
  EXPECT_NEAR(f.impact_s_per_iter, 0.150, 0.01);
  EXPECT_NE(f.evidence.find("grew on rank 1 alone"), std::string::npos) << f.evidence;
}

// Each finding explains its impact: what they leave (where a slowdown by the detector's rule, 5 %
// of the baseline's 7 ms step) is the rank's loader's, held to it.
TEST(OwnLoaderGrowth, AFindingThatExplainsTheSlowdownLeavesNothingToFind) {
  Diagnosis d = AfterLoaderGrowth({1}, {FindingOf(FindingScope::kGlobal, FindingCategory::kHost, {0, 1, 2, 3}, 0.150)});
  EXPECT_EQ(d.findings.size(), 1u);
  d = AfterLoaderGrowth({1}, {FindingOf(FindingScope::kGlobal, FindingCategory::kHost, {0, 1, 2, 3}, 0.140)});
  ASSERT_EQ(d.findings.size(), 2u);
  EXPECT_NEAR(d.findings[1].impact_s_per_iter, 0.010, 1e-3);
}

TEST(OwnLoaderGrowth, EveryRanksCostThatTheWindowFoundExplainsItsShareOnly) {
  Diagnosis d = AfterLoaderGrowth({1}, {FindingOf(FindingScope::kGlobal, FindingCategory::kHost, {0, 1, 2, 3}, 0.040)});
  ASSERT_EQ(d.findings.size(), 2u);
  EXPECT_EQ(d.findings[0].workers, std::vector<int>{1});  // most costly first
  // Every rank's loader: a rank's longer wait is its turn.
  d = AfterLoaderGrowth({1}, {FindingOf(FindingScope::kGlobal, FindingCategory::kDataloader, {0, 1, 2, 3}, 0.040)});
  EXPECT_EQ(d.findings.size(), 1u);
}

TEST(OwnLoaderGrowth, LoadersGrownOnHalfTheRanksAreNoOneRanksOwn) {
  EXPECT_TRUE(AfterLoaderGrowth({1, 2}).findings.empty());
}

TEST(OwnLoaderGrowth, ARankAlreadyNamedForItsLoaderIsNotNamedAgain) {
  // It explains too little to stand for the slowdown.
  EXPECT_EQ(AfterLoaderGrowth({1}, {FindingOf(FindingScope::kLocal, FindingCategory::kDataloader, {1}, 0.020)})
                .findings.size(),
            1u);
}

}  // namespace
}  // namespace eroica
