#include "localize/stage_waits.h"

#include <gtest/gtest.h>

#include <string>

namespace eroica {
namespace {

// A rank at one pipeline position: its sends and receives in `order` ('s', 'r'), or, with an
// empty order, a data-parallel rank with all-reduces only.
WorkerPattern Rank(int rank, std::string_view order) {
  WorkerPattern w;
  w.rank = rank;
  w.world_size = 4;
  w.iteration_s = 0.05;
  w.step_ids = {1, 2, 3, 4, 5};
  FunctionPattern op;
  op.name = "aten::mm";
  op.category = Category::kCompute;
  op.beta = 0.3;
  op.calls_per_iter = 4;
  w.functions.push_back(op);
  w.collectives.assign(4, {"allreduce", 1000});
  for (char c : order) w.collectives.push_back({c == 's' ? "send" : "recv", 1500});
  return w;
}

Finding Straggler(int rank, FindingCategory category, double impact_s) {
  Finding f;
  f.category = category;
  f.workers = {rank};
  f.impact_s_per_iter = impact_s;
  f.evidence = "rank " + std::to_string(rank) + " is slow";
  return f;
}

Finding Waiting(std::vector<int> ranks, double impact_s) {
  Finding f;
  f.scope = FindingScope::kGlobal;
  f.category = FindingCategory::kCommunication;
  f.workers = std::move(ranks);
  f.function = "recv";
  f.beta = 0.92;
  f.impact_s_per_iter = impact_s;
  return f;
}

struct Job {
  WorkerTable table;
  std::vector<WorkerGroup> groups;
  std::vector<GroupFindings> findings;

  // `first_wait`: the first stage's share of each step in communication.
  Job(std::string_view first, std::string_view second, double first_wait = 0) {
    for (int r : {0, 1}) {
      WorkerPattern w = Rank(r, first);
      w.category_beta[static_cast<size_t>(Category::kCommunication)] = first_wait;
      table.Add(w);
    }
    for (int r : {2, 3}) table.Add(Rank(r, second));
    groups = GroupWorkers(table);
    for (const WorkerGroup& g : groups) findings.push_back({&g, {}, {}});
  }
};

// Stage 1 waits in its receives for stage 0's straggler: one problem, not a second one in the
// network.
TEST(StageWaitsTest, AStageWaitingForAnotherStagesStragglerIsItsEffect) {
  Job job("ssrr", "rrss");
  ASSERT_EQ(job.groups.size(), 2u);
  job.findings[0].local.push_back(Straggler(0, FindingCategory::kHost, 0.0414));
  job.findings[1].global.push_back(Waiting({2, 3}, 0.0323));
  FoldWaitsForAnotherStage(&job.findings);
  EXPECT_TRUE(job.findings[1].global.empty());
  ASSERT_EQ(job.findings[0].local.size(), 1u);
  EXPECT_NE(job.findings[0].local[0].evidence.find("the pipeline stage of ranks 2,3 waits for it too: 0.92 of each "
                                                   "of its steps in communication (recv), 32.3 ms per iteration"),
            std::string::npos)
      << job.findings[0].local[0].evidence;
}

// Not the straggler's effect: a wait longer than the straggler's whole loss, a straggler in
// communication itself, or groups that pass nothing to each other point-to-point.
TEST(StageWaitsTest, OnlyAStragglerThatCostsAsMuchInAnotherStageExplainsTheWait) {
  Job longer("ssrr", "rrss");
  longer.findings[0].local.push_back(Straggler(0, FindingCategory::kHost, 0.010));
  longer.findings[1].global.push_back(Waiting({2, 3}, 0.0323));
  FoldWaitsForAnotherStage(&longer.findings);
  EXPECT_EQ(longer.findings[1].global.size(), 1u);

  Job link("ssrr", "rrss");
  link.findings[0].local.push_back(Straggler(0, FindingCategory::kCommunication, 0.05));
  link.findings[1].global.push_back(Waiting({2, 3}, 0.0323));
  FoldWaitsForAnotherStage(&link.findings);
  EXPECT_EQ(link.findings[1].global.size(), 1u);

  // Two data-parallel roles (ranks 2 and 3 run other ops): no stage passes data to the other.
  WorkerTable table;
  for (int r : {0, 1}) table.Add(Rank(r, ""));
  for (int r : {2, 3}) {
    WorkerPattern w = Rank(r, "");
    w.functions[0].name = "aten::conv2d";
    table.Add(w);
  }
  std::vector<WorkerGroup> groups = GroupWorkers(table);
  ASSERT_EQ(groups.size(), 2u);
  std::vector<GroupFindings> findings = {{&groups[0], {Straggler(0, FindingCategory::kHost, 0.05)}, {}},
                                         {&groups[1], {}, {Waiting({2, 3}, 0.0323)}}};
  FoldWaitsForAnotherStage(&findings);
  EXPECT_EQ(findings[1].global.size(), 1u);
}

// A healthy pipeline: stage 1 waits in its receives for stage 0, which waits within its box (its
// time is its work, a straggler's among it). A note, not a network problem. Not where the other
// stage waits over its box too (a slow network holds every stage), has a finding of its own in
// communication (a link), or the wait is not in receives.
TEST(StageWaitsTest, AStageWaitingForABusierStageIsThePipelinesScheduleNotTheNetwork) {
  const Expectations e = DefaultExpectations();  // communication's box: at most 0.35 of a step
  auto after = [&](double other_wait, bool other_finding, std::string function,
                   FindingCategory other_category = FindingCategory::kCommunication) {
    Job job("ssrr", "rrss", other_wait);
    if (other_finding) job.findings[0].local.push_back(Straggler(0, other_category, 0.01));
    Finding wait = Waiting({2, 3}, 0.0323);
    wait.function = std::move(function);
    job.findings[1].global.push_back(wait);
    std::vector<std::string> notes;
    SeeWaitsForABusierStage(&job.findings, e, &notes);
    return std::make_pair(job.findings[1].global.size(), notes);
  };
  auto [left, notes] = after(0.27, false, "recv");
  EXPECT_EQ(left, 0u);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("the pipeline stage of ranks 2,3 waits β 0.92 of each step in its receives (32.3 ms per "
                          "iteration over its box) for the stage of ranks 0,1, which waits β 0.27, within its box"),
            std::string::npos)
      << notes[0];
  EXPECT_EQ(after(0.60, false, "recv").first, 1u);
  EXPECT_EQ(after(0.27, true, "recv").first, 1u);
  // A straggler of its own that costs less than the wait (a CPU quota that cost nothing measurable).
  EXPECT_EQ(after(0.27, true, "recv", FindingCategory::kCompute).first, 0u);
  EXPECT_EQ(after(0.27, false, "allreduce").first, 1u);
}

}  // namespace
}  // namespace eroica
