#include "diff/own_compute_growth.h"

#include <gtest/gtest.h>

#include <optional>
#include <utility>

#include "diff/diff_test_util.h"

namespace eroica {
namespace {

// 4 ranks; now rank 1's aten::fill_ takes `grown_ms` more a step and the others wait that much
// longer in their all-reduce. `rank1_on_cpu`: its training thread's CPU share of the window (the
// others' 0.30; nullopt: no thread readings), on cores 85 % busy.
std::vector<WorkerPattern> StallJob(double grown_ms, std::optional<float> rank1_on_cpu = std::nullopt) {
  std::vector<WorkerPattern> job = JobWith(4, [&](int r) {
    bool mine = r == 1;
    return FunctionMs{{"aten::fill_", Category::kCompute, 5 + (mine ? grown_ms : 0)},
                      {"gloo:broadcast", Category::kCommunication, 5 + (mine ? 0 : grown_ms)}};
  });
  if (rank1_on_cpu) {
    for (WorkerPattern& w : job) {
      w.cpu = CpuShare{.cpus = 2, .host_busy = 0.85f, .process_cpu = 0.35f, .main_cpu = 0.30f};
    }
    job[1].cpu->main_cpu = *rank1_on_cpu;
  }
  return job;
}

Diagnosis AfterComputeGrowth(std::vector<WorkerPattern> now, std::vector<Finding> findings = {}) {
  Diagnosis d;
  d.findings = std::move(findings);
  FindOwnComputeGrowth(now, DiffPatterns(StallJob(0, now[0].cpu ? std::optional<float>(0.30f) : std::nullopt), now),
                       &d);
  return d;
}

TEST(OwnComputeGrowth, OneRanksOpsGrownSinceTheBaselineOnACpuLongerThanItsPeersAreItsOwnWork) {
  Diagnosis d = AfterComputeGrowth(StallJob(150, 0.62f));
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.scope, FindingScope::kLocal);
  EXPECT_EQ(f.category, FindingCategory::kCompute);
  EXPECT_EQ(f.workers, std::vector<int>{1});
  EXPECT_EQ(f.function, "aten::fill_");
  EXPECT_TRUE(f.from_baseline);
  EXPECT_NEAR(f.impact_s_per_iter, 0.150, 0.01);
  EXPECT_NE(f.evidence.find("ran on a CPU 0.32 of the window longer"), std::string::npos) << f.evidence;
}

// On busy shared cores the scheduler slows a rank's ops by giving it less processor: with its
// thread on a CPU no longer than its peers', its slower ops may be the contention's.
TEST(OwnComputeGrowth, SlowerOpsOnACpuNoLongerThanThePeersAreNoFinding) {
  EXPECT_TRUE(AfterComputeGrowth(StallJob(150, 0.32f)).findings.empty());
}

// Without thread readings (GPU training, or none read) on cores not known busy: its ops' growth.
TEST(OwnComputeGrowth, WithoutThreadReadingsTheGrowthAloneNamesIt) {
  Diagnosis d = AfterComputeGrowth(StallJob(150));
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].workers, std::vector<int>{1});
}

TEST(OwnComputeGrowth, ARankAFindingNamesAlreadyOrAFindingThatExplainsTheSlowdownLeaveNothing) {
  EXPECT_EQ(
      AfterComputeGrowth(StallJob(150, 0.62f), {FindingOf(FindingScope::kLocal, FindingCategory::kHost, {1}, 0.02)})
          .findings.size(),
      1u);
  EXPECT_EQ(AfterComputeGrowth(StallJob(150, 0.62f),
                               {FindingOf(FindingScope::kGlobal, FindingCategory::kHost, {0, 1, 2, 3}, 0.150)})
                .findings.size(),
            1u);
}

// Every rank's cost that the window found names every rank and explains its share only.
TEST(OwnComputeGrowth, EveryRanksCostBesideItLeavesTheRanksOwnGrowth) {
  Diagnosis d = AfterComputeGrowth(StallJob(150, 0.62f),
                                   {FindingOf(FindingScope::kGlobal, FindingCategory::kHost, {0, 1, 2, 3}, 0.040)});
  ASSERT_EQ(d.findings.size(), 2u);
  EXPECT_EQ(d.findings[0].workers, std::vector<int>{1});  // most costly first
  EXPECT_EQ(d.findings[0].category, FindingCategory::kCompute);
}

// Its peers are the workers of its declared role: two ranks of another role whose threads run on
// a CPU far longer (a different stage's work) do not hide it.
TEST(OwnComputeGrowth, ItsPeersAreTheWorkersOfItsRole) {
  auto job = [](double grown_ms) {
    std::vector<WorkerPattern> workers = JobWith(5, [&](int r) {
      bool mine = r == 1;
      return FunctionMs{{"aten::fill_", Category::kCompute, 5 + (mine ? grown_ms : 0)},
                        {"gloo:broadcast", Category::kCommunication, 5 + (mine ? 0 : grown_ms)}};
    });
    for (WorkerPattern& w : workers) {
      w.cpu = CpuShare{.cpus = 2, .host_busy = 0.85f, .process_cpu = 0.35f, .main_cpu = 0.30f};
      if (w.rank >= 3) {
        w.group = "other stage";
        w.cpu->main_cpu = 0.9f;
      }
    }
    if (grown_ms > 0) workers[1].cpu->main_cpu = 0.42f;
    return workers;
  };
  std::vector<WorkerPattern> now = job(150);
  Diagnosis d;
  FindOwnComputeGrowth(now, DiffPatterns(job(0), now), &d);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].workers, std::vector<int>{1});
}

// Grown on every rank: every rank's matter (ApplyBaseline), not one rank's.
TEST(OwnComputeGrowth, GrowthOnHalfTheRanksOrMoreIsNoOneRanksOwn) {
  std::vector<WorkerPattern> now = JobWith(4, [&](int r) {
    return FunctionMs{{"aten::fill_", Category::kCompute, r < 2 ? 155.0 : 5.0},
                      {"gloo:broadcast", Category::kCommunication, r < 2 ? 5.0 : 155.0}};
  });
  EXPECT_TRUE(AfterComputeGrowth(now).findings.empty());
}

}  // namespace
}  // namespace eroica
