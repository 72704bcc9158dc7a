#include "diff/own_loader_growth.h"

#include <gtest/gtest.h>

#include <set>

#include "diff/diff_test_util.h"

namespace eroica {
namespace {

constexpr const char* kLoader = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";

// 4 ranks whose loaders took `loader_ms` a step at the baseline; now those in `slower` take
// `grown_ms` more, and the others wait that much longer in their all-reduce.
std::vector<WorkerPattern> LoaderJob(double grown_ms, const std::set<int>& slower) {
  return JobWith(4, [&](int r) {
    bool mine = slower.contains(r);
    return FunctionMs{{kLoader, Category::kDataloader, 2 + (mine ? grown_ms : 0)},
                      {"gloo:broadcast", Category::kCommunication, 5 + (mine ? 0 : grown_ms)}};
  });
}

TEST(OwnLoaderGrowth, ARanksLoaderGrownSinceTheBaselineIsItsOwnSlowerInputPipeline) {
  std::vector<WorkerPattern> now = LoaderJob(150, {1});
  PatternDiff diff = DiffPatterns(LoaderJob(0, {}), now);
  Diagnosis d;
  FindOwnLoaderGrowth(now, diff, &d);
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

TEST(OwnLoaderGrowth, AFindingThatExplainsTheSlowdownLeavesNothingToFind) {
  std::vector<WorkerPattern> now = LoaderJob(150, {1});
  PatternDiff diff = DiffPatterns(LoaderJob(0, {}), now);
  Diagnosis d;
  d.findings.push_back(FindingOf(FindingScope::kGlobal, FindingCategory::kHost, {0, 1, 2, 3}, 0.140));
  FindOwnLoaderGrowth(now, diff, &d);
  EXPECT_EQ(d.findings.size(), 1u);
}

TEST(OwnLoaderGrowth, EveryRanksCostThatTheWindowFoundExplainsItsShareOnly) {
  std::vector<WorkerPattern> now = LoaderJob(150, {1});
  PatternDiff diff = DiffPatterns(LoaderJob(0, {}), now);
  Diagnosis d;
  d.findings.push_back(FindingOf(FindingScope::kGlobal, FindingCategory::kHost, {0, 1, 2, 3}, 0.040));
  FindOwnLoaderGrowth(now, diff, &d);
  ASSERT_EQ(d.findings.size(), 2u);
  EXPECT_EQ(d.findings[0].workers, std::vector<int>{1});  // most costly first
  // Every rank's loader: a rank's longer wait is its turn.
  d.findings = {FindingOf(FindingScope::kGlobal, FindingCategory::kDataloader, {0, 1, 2, 3}, 0.040)};
  FindOwnLoaderGrowth(now, diff, &d);
  EXPECT_EQ(d.findings.size(), 1u);
}

TEST(OwnLoaderGrowth, LoadersGrownOnHalfTheRanksAreNoOneRanksOwn) {
  std::vector<WorkerPattern> now = LoaderJob(150, {1, 2});
  PatternDiff diff = DiffPatterns(LoaderJob(0, {}), now);
  Diagnosis d;
  FindOwnLoaderGrowth(now, diff, &d);
  EXPECT_TRUE(d.findings.empty());
}

TEST(OwnLoaderGrowth, ARankAlreadyNamedForItsLoaderIsNotNamedAgain) {
  std::vector<WorkerPattern> now = LoaderJob(150, {1});
  PatternDiff diff = DiffPatterns(LoaderJob(0, {}), now);
  Diagnosis d;
  // It explains too little to stand for the slowdown.
  d.findings.push_back(FindingOf(FindingScope::kLocal, FindingCategory::kDataloader, {1}, 0.020));
  FindOwnLoaderGrowth(now, diff, &d);
  EXPECT_EQ(d.findings.size(), 1u);
}

}  // namespace
}  // namespace eroica
