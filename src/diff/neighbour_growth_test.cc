#include "diff/neighbour_growth.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "diff/baseline_findings.h"
#include "diff/diff_test_util.h"

namespace eroica {
namespace {

// 4 ranks on one 2-core node: the node `busy` (cores' worth), each rank's process `per_rank` cores.
std::vector<WorkerPattern> OnANode(const FunctionMs& ms, double busy, double per_rank, std::string host = "vm") {
  std::vector<WorkerPattern> job;
  for (int r = 0; r < 4; ++r) {
    WorkerPattern w = Worker(r, 4, ms);
    w.host = host;
    w.cpu = CpuShare{.cpus = 2, .host_busy = static_cast<float>(busy / 2), .process_cpu = static_cast<float>(per_rank)};
    job.push_back(std::move(w));
  }
  return job;
}

// The healthy control beside two compilers: the job's 4 ranks held 0.74 cores at the baseline
// with 0.17 outside it, 0.52 now with 1.48 outside (measured, 2 cores).
TEST(NeighbourGrowth, ANeighbourThatFilledTheIdleCoresIsFound) {
  std::optional<NeighbourGrowth> g =
      FindNeighbourGrowth(OnANode(Healthy(), 0.91, 0.185), OnANode(Healthy(), 2.0, 0.13));
  ASSERT_TRUE(g.has_value());
  EXPECT_NEAR(g->now.outside(), 1.48, 1e-3);
  EXPECT_NEAR(g->then.outside(), 0.17, 1e-3);
  EXPECT_NEAR(g->now.job, 0.52, 1e-3);
  std::string note = NeighbourGrowthNote(*g);
  EXPECT_NE(note.find("outside the job held 1.48 of node vm's 2 cores over this window, 0.17 at the baseline"),
            std::string::npos)
      << note;
}

// A 4-rank GAN beside the same compilers (batch P): the job held most of the cores itself, and
// the neighbour took 0.69 of them from it (1.87 -> 1.26 cores).
TEST(NeighbourGrowth, ANeighbourThatTookPartOfACpuBoundJobsCoresIsFound) {
  std::optional<NeighbourGrowth> g =
      FindNeighbourGrowth(OnANode(Healthy(), 1.92, 0.4675), OnANode(Healthy(), 2.0, 0.315));
  ASSERT_TRUE(g.has_value());
  EXPECT_NEAR(g->now.outside() - g->then.outside(), 0.69, 1e-3);
}

// The outside's own noise on a node one job runs on: up to 0.26 cores over stops 62-66's 208
// batch sessions against their baselines (a healthy TP run), within the 0.3 cores the busy bar
// leaves on 2 cores. Nor did processes outside take the job's cores where its own held as many
// as at the baseline.
TEST(NeighbourGrowth, OutsideGrownWithinTheNoiseOrBesideTheJobIsNone) {
  EXPECT_FALSE(FindNeighbourGrowth(OnANode(Healthy(), 1.91, 0.4575), OnANode(Healthy(), 1.78, 0.36)).has_value());
  EXPECT_FALSE(FindNeighbourGrowth(OnANode(Healthy(), 1.40, 0.30), OnANode(Healthy(), 2.0, 0.30)).has_value());
}

// As much outside, on cores that had idle time: nobody waited for a processor.
TEST(NeighbourGrowth, ANodeWithIdleCoresIsNone) {
  EXPECT_FALSE(FindNeighbourGrowth(OnANode(Healthy(), 0.91, 0.185), OnANode(Healthy(), 1.6, 0.03)).has_value());
}

// A rank without readings: the node's job share is unknown; nor are nodes compared by anything
// but their names.
TEST(NeighbourGrowth, UnreadRanksAndOtherNodesAreNone) {
  std::vector<WorkerPattern> now = OnANode(Healthy(), 2.0, 0.13);
  now[2].cpu.reset();
  EXPECT_FALSE(FindNeighbourGrowth(OnANode(Healthy(), 0.91, 0.185), now).has_value());
  EXPECT_FALSE(
      FindNeighbourGrowth(OnANode(Healthy(), 0.91, 0.185, "a"), OnANode(Healthy(), 2.0, 0.13, "b")).has_value());
}

// A rank's own cost that explains half the slowdown (its checkpoint saves, whose writeback the
// kernel's threads do outside the job's processes) leaves the outside's growth no cause of its own;
// one the baseline had too, or a global one, does not.
TEST(NeighbourGrowth, ALocalFindingThatExplainsTheSlowdownComesFirst) {
  Diagnosis d;
  d.findings.push_back(FindingOf(FindingScope::kLocal, FindingCategory::kHost, {3}, 0.030));
  EXPECT_TRUE(ALocalFindingExplains(d, 60, 0.5));
  EXPECT_FALSE(ALocalFindingExplains(d, 61, 0.5));
  d.findings[0].standing = true;
  EXPECT_FALSE(ALocalFindingExplains(d, 60, 0.5));
  d.findings[0] = FindingOf(FindingScope::kGlobal, FindingCategory::kHost, {0, 1, 2, 3}, 0.030);
  EXPECT_FALSE(ALocalFindingExplains(d, 60, 0.5));
}

// GPU training: its kernels and collectives run on the devices, which a neighbour's processes do
// not hold.
TEST(NeighbourGrowth, GpuTrainingIsNone) {
  std::vector<WorkerPattern> now = OnANode(Healthy(), 2.0, 0.13);
  for (WorkerPattern& w : now) w.has_device = true;
  EXPECT_FALSE(FindNeighbourGrowth(OnANode(Healthy(), 0.91, 0.185), now).has_value());
}

// Every rank's all-reduce 3x as long as at the baseline on a node a neighbour came to hold: a
// note, no `global communication`; without the neighbour, the network.
TEST(NeighbourGrowth, EveryRanksSlowerCollectivesAreItsSymptom) {
  FunctionMs slower = Healthy();
  std::get<2>(slower[2]) = 60;  // gloo:all_reduce, 20 ms at the baseline
  std::vector<WorkerPattern> base = OnANode(Healthy(), 0.91, 0.185), now = OnANode(slower, 2.0, 0.13);
  Diagnosis network;
  ApplyBaseline(DiffPatterns(base, now), &network);
  ASSERT_EQ(network.findings.size(), 1u);
  EXPECT_EQ(network.findings[0].category, FindingCategory::kCommunication);
  EXPECT_EQ(network.slowed_by, "");

  BaselineOptions options;
  options.neighbour = FindNeighbourGrowth(base, now);
  Diagnosis shared;
  ApplyBaseline(DiffPatterns(base, now), &shared, options);
  EXPECT_TRUE(shared.healthy()) << shared.findings[0].evidence;
  // 100 -> 140 ms a step (the all-reduce's +40 ms, times the median rank's jitter).
  EXPECT_EQ(
      shared.slowed_by.rfind("+40% a step since the baseline: its node vm is shared, processes outside the job held "
                             "1.48 of its 2 cores (0.17 at the baseline)",
                             0),
      0u)
      << shared.slowed_by;
  auto said = [&](const std::string& words) {
    return std::any_of(shared.notes.begin(), shared.notes.end(),
                       [&](const std::string& note) { return note.find(words) != std::string::npos; });
  };
  EXPECT_TRUE(said("processes outside the job held 1.48 of node vm's 2 cores"));
  EXPECT_TRUE(said("gloo:all_reduce takes"));
  EXPECT_TRUE(said("waiting for the processors, not a cause of the job's"));
  // Nor is what it leaves a slowdown for the rules that look for one rank's cause.
  EXPECT_EQ(UnexplainedSlowdownMs(DiffPatterns(base, now), shared, options, CoresNow{}), 0);
}

}  // namespace
}  // namespace eroica
