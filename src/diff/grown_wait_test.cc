#include "diff/grown_wait.h"

#include <gtest/gtest.h>

#include <array>
#include <tuple>
#include <utility>

#include "diff/diff_test_util.h"

namespace eroica {
namespace {

// 4 ranks, 5 iterations of 0.5 s, two all-reduces each. `rank3_excess`: how much more of each step
// rank 3 computes than its peers' swinging median; `waited_ms`: how long the others wait for it at
// each step's first all-reduce, in 4 of the 5 steps (in the fifth they wait 30 ms for rank 0: its
// share of their waiting stays under the 0.9 the window alone asks for); 0: the waiting moves
// between ranks, 10 ms a step.
std::vector<WorkerPattern> WaitedForJob(double iteration_s, double rank3_excess, float waited_ms) {
  const float peers_compute[5] = {0.80f, 0.66f, 0.82f, 0.60f, 0.78f};
  std::vector<WorkerPattern> job;
  for (int r = 0; r < 4; ++r) {
    WorkerPattern w;
    w.rank = r;
    w.world_size = 4;
    w.iteration_s = iteration_s;
    w.step_ids = {10, 11, 12, 13, 14};
    double compute = 0, comm = 0;
    for (size_t i = 0; i < 5; ++i) {
      float c = r == 3 ? 0.86f + static_cast<float>(rank3_excess) - 0.1f : peers_compute[(i + r) % 5];
      std::array<float, kCategoryCount> shares{};
      shares[static_cast<size_t>(Category::kCompute)] = c;
      shares[static_cast<size_t>(Category::kHost)] = 0.05f;
      shares[static_cast<size_t>(Category::kCommunication)] = 0.95f - c;
      w.iteration_category_beta.push_back(shares);
      compute += c / 5;
      comm += (0.95 - c) / 5;
    }
    for (auto [name, category, beta] :
         {std::tuple{"aten::mm", Category::kCompute, compute}, std::tuple{"(python)", Category::kHost, 0.05},
          std::tuple{"allreduce", Category::kCommunication, comm}}) {
      FunctionPattern f;
      f.name = name;
      f.category = category;
      f.beta = beta;
      f.calls_per_iter = 10;
      w.functions.push_back(std::move(f));
    }
    w.category_beta[static_cast<size_t>(Category::kCompute)] = compute;
    w.category_beta[static_cast<size_t>(Category::kHost)] = 0.05;
    w.category_beta[static_cast<size_t>(Category::kCommunication)] = comm;
    for (int i = 0; i < 5; ++i) {
      // Who the others wait for at this step's first all-reduce.
      int last = waited_ms > 0 ? (i == 4 ? 0 : 3) : i % 4;
      float wait_us = waited_ms > 0 ? (i == 4 ? 30000 : waited_ms * 1000) : 10000;
      w.collectives.push_back({"allreduce", r == last ? 1000 : 1000 + wait_us + 100 * r});
      w.collectives.push_back({"allreduce", 500});
    }
    job.push_back(std::move(w));
  }
  return job;
}

Diagnosis AfterGrownWait(const std::vector<WorkerPattern>& base, const std::vector<WorkerPattern>& now,
                         std::vector<Finding> findings = {}) {
  Diagnosis d;
  d.findings = std::move(findings);
  PatternDiff diff = IterationsOnly(base[0].iteration_s * 1e3, now[0].iteration_s * 1e3);
  FindGrownWaitForOneRank(base, now, diff, DefaultExpectations(), &d);
  return d;
}

TEST(GrownWait, TheRankTheOthersWaitForMoreThanInTheJobsPastIsAStraggler) {
  Diagnosis d = AfterGrownWait(WaitedForJob(0.47, 0, 0), WaitedForJob(0.5, 0.1, 40));
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.scope, FindingScope::kLocal);
  EXPECT_NE(f.category, FindingCategory::kCommunication);
  EXPECT_EQ(f.workers, std::vector<int>{3});
  EXPECT_TRUE(f.from_baseline);
  EXPECT_LE(f.impact_s_per_iter, 0.030 + 1e-9);
  EXPECT_NE(f.evidence.find("the others' wait for rank 3 at the collectives grew 2.0 -> 32.1 ms/iter"),
            std::string::npos)
      << f.evidence;
  EXPECT_NE(f.evidence.find("mostly for it in 4 of 5 iterations and 0.84 of all their waiting"), std::string::npos)
      << f.evidence;
}

// As long a wait at the baseline is the job's own: no growth, nothing new.
TEST(GrownWait, AWaitAsLongAtTheBaselineIsNoCause) {
  EXPECT_TRUE(AfterGrownWait(WaitedForJob(0.47, 0.1, 40), WaitedForJob(0.5, 0.1, 40)).findings.empty());
}

// Under the straggler floor of a step (0.05 of 500 ms) the others' wait is the scheduler's, though
// it grew by more than half the slowdown (2.0 -> 17.7 ms/iter, +15.7 of 30).
TEST(GrownWait, AWaitUnderTheStragglerFloorIsNoCause) {
  EXPECT_TRUE(AfterGrownWait(WaitedForJob(0.47, 0, 0), WaitedForJob(0.5, 0.1, 22)).findings.empty());
}

// A finding that explains the slowdown leaves nothing to explain; a rank already named keeps its own.
TEST(GrownWait, AnExplainedSlowdownOrARankNamedAlreadyLeavesNothing) {
  EXPECT_EQ(AfterGrownWait(WaitedForJob(0.47, 0, 0), WaitedForJob(0.5, 0.1, 40),
                           {FindingOf(FindingScope::kLocal, FindingCategory::kHost, {1}, 0.030)})
                .findings.size(),
            1u);
  EXPECT_EQ(AfterGrownWait(WaitedForJob(0.47, 0, 0), WaitedForJob(0.5, 0.1, 40),
                           {FindingOf(FindingScope::kLocal, FindingCategory::kHost, {3}, 0.005)})
                .findings.size(),
            1u);
}

// Without a slowdown against the baseline there is nothing to explain.
TEST(GrownWait, NoSlowdownNoFinding) {
  EXPECT_TRUE(AfterGrownWait(WaitedForJob(0.5, 0, 0), WaitedForJob(0.5, 0.1, 40)).findings.empty());
}

}  // namespace
}  // namespace eroica
