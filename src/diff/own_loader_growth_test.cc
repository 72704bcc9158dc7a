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
  Finding host;
  host.scope = FindingScope::kGlobal;
  host.category = FindingCategory::kHost;
  host.workers = {0, 1, 2, 3};
  host.impact_s_per_iter = 0.140;
  d.findings.push_back(host);
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
  Finding loader;
  loader.scope = FindingScope::kLocal;
  loader.category = FindingCategory::kDataloader;
  loader.workers = {1};
  loader.impact_s_per_iter = 0.020;  // explains too little to stand for the slowdown
  d.findings.push_back(loader);
  FindOwnLoaderGrowth(now, diff, &d);
  EXPECT_EQ(d.findings.size(), 1u);
}

}  // namespace
}  // namespace eroica
