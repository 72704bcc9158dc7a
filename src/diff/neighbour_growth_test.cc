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
TEST(NeighbourGrowth, OutsideProcessesGrownPastTheJobAreFound) {
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

// A rank saving a checkpoint each step: the kernel's writeback threads, outside the job, grew
// 0.24 -> 0.66 cores while the job held 1.34 (stop 66's m-ckpt3): the job's own work, no neighbour.
TEST(NeighbourGrowth, OutsideGrownByLessThanTheJobHoldsIsNone) {
  EXPECT_FALSE(FindNeighbourGrowth(OnANode(Healthy(), 2.0, 0.44), OnANode(Healthy(), 2.0, 0.335)).has_value());
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

  BaselineOptions options;
  options.neighbour = FindNeighbourGrowth(base, now);
  Diagnosis shared;
  ApplyBaseline(DiffPatterns(base, now), &shared, options);
  EXPECT_TRUE(shared.healthy()) << shared.findings[0].evidence;
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
