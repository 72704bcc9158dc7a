#include "localize/groups.h"

#include <gtest/gtest.h>

#include <string>

namespace eroica {
namespace {

// A data-parallel worker of a small model: ten ops, a loader, Python, and two all-reduces per
// iteration. `op_beta` is each op's share of the critical path: what a fault changes.
WorkerPattern Worker(int rank, double op_beta, double dataloader_beta = 0.02, double gc_beta = 0) {
  WorkerPattern w;
  w.rank = rank;
  w.world_size = 4;
  w.iteration_s = 0.1;
  w.step_ids = {1, 2, 3, 4, 5};
  auto add = [&](std::string name, Category c, double beta) {
    FunctionPattern f;
    f.name = std::move(name);
    f.category = c;
    f.beta = beta;
    f.calls_per_iter = 3;
    w.functions.push_back(f);
  };
  for (int op = 0; op < 10; ++op) add("aten::op" + std::to_string(op), Category::kCompute, op_beta);
  add("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", Category::kDataloader, dataloader_beta);
  if (gc_beta > 0) add("(python gc)", Category::kHost, gc_beta);
  add("allreduce", Category::kCommunication, 0.3);
  for (int call = 0; call < 10; ++call) w.collectives.push_back({"allreduce", 1000});
  return w;
}

std::vector<WorkerGroup> Groups(const std::vector<WorkerPattern>& workers, WorkerTable* table) {
  for (const WorkerPattern& w : workers) table->Add(w);
  return GroupWorkers(*table);
}

// A fault changes how long a rank's ops own the critical path, not which ops it runs: the slow
// rank must stay with the peers it is to be compared with.
TEST(GroupsTest, AFaultyRankStaysWithItsPeers) {
  struct Case {
    const char* fault;
    WorkerPattern worker;
  } cases[] = {
      {"throttled: a few ops own the path, the rest almost nothing", Worker(1, 0.002)},
      {"starving: the loader owns the path", Worker(1, 0.001, 0.6)},
      {"GC storm: collection owns the path", Worker(1, 0.003, 0.02, 0.5)},
  };
  for (const Case& c : cases) {
    std::vector<WorkerPattern> workers = {Worker(0, 0.04), c.worker, Worker(2, 0.04), Worker(3, 0.04)};
    WorkerTable table;
    std::vector<WorkerGroup> groups = Groups(workers, &table);
    ASSERT_EQ(groups.size(), 1u) << c.fault;
    EXPECT_EQ(groups[0].size(), 4u) << c.fault;
  }
}

// Collectives are compared per iteration: a rank whose window kept 1 step (its capture cut it to
// its first steps, or its time limit closed a straggler's window first) issued a fifth of its
// peers' collectives in it, as many per step.
TEST(GroupsTest, ARankWithFewerStepsInItsWindowStaysWithItsPeers) {
  std::vector<WorkerPattern> workers = {Worker(0, 0.04), Worker(1, 0.04), Worker(2, 0.04), Worker(3, 0.04)};
  workers[0].step_ids = {1};
  workers[0].collectives.resize(2);
  WorkerTable table;
  std::vector<WorkerGroup> groups = Groups(workers, &table);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].size(), 4u);
}

TEST(GroupsTest, DifferentCollectivesOrDeclaredRolesAreDifferentRoles) {
  std::vector<WorkerPattern> workers = {Worker(0, 0.04), Worker(1, 0.04), Worker(2, 0.04), Worker(3, 0.04)};
  // Rank 3 is a pipeline stage that sends activations instead of reducing gradients.
  workers[3].collectives.assign(10, {"send", 1000});
  WorkerTable by_collectives;
  std::vector<WorkerGroup> groups = Groups(workers, &by_collectives);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].size(), 3u);

  workers[3] = Worker(3, 0.04);
  workers[2].group = "pp1";
  workers[3].group = "pp1";
  WorkerTable by_declared;
  groups = Groups(workers, &by_declared);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].size(), 2u);
  EXPECT_EQ(groups[1].size(), 2u);
}

TEST(GroupsTest, DisjointOperationsAreDifferentRoles) {
  std::vector<WorkerPattern> workers = {Worker(0, 0.04), Worker(1, 0.04), Worker(2, 0.04)};
  for (FunctionPattern& f : workers[2].functions) {
    if (f.category == Category::kCompute) f.name += "_embedding_server";
  }
  WorkerTable table;
  std::vector<WorkerGroup> groups = Groups(workers, &table);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[1].row(0).rank, 2);
}

// A 2-stage pipeline, 2 data-parallel replicas (an unseen 4-rank job: ranks 0 and 1 hold stage 0,
// 2 and 3 stage 1, 2 micro-batches a step): per step each stage all-reduces its gradients 8 times;
// stage 0 sends its activations and labels (4 sends) and then receives their gradients (2
// receives), stage 1 the reverse. By name the stages issue each other's calls (they overlap by
// 0.67): the order of their sends and receives tells the stages apart.
TEST(GroupsTest, PipelineStagesThatSendAndReceiveInOppositeOrderAreDifferentRoles) {
  auto stage = [](int rank, std::string_view order) {
    WorkerPattern w = Worker(rank, 0.04);
    w.collectives.assign(8, {"allreduce", 1000});
    for (char c : order) w.collectives.push_back({c == 's' ? "send" : "recv", 1500});
    return w;
  };
  std::vector<WorkerPattern> workers = {stage(0, "ssssrr"), stage(1, "ssssrr"), stage(2, "rrrrss"), stage(3, "rrrrss")};
  WorkerTable table;
  std::vector<WorkerGroup> groups = Groups(workers, &table);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].size(), 2u);
  EXPECT_EQ(groups[0].row(0).rank, 0);
  EXPECT_EQ(groups[0].row(1).rank, 1);
  EXPECT_EQ(groups[1].row(0).rank, 2);
  // As many sends as receives on every rank (activations forward, gradients back, one each per
  // micro-batch): the order still tells the first stage from the last.
  workers = {stage(0, "srsr"), stage(1, "srsr"), stage(2, "rsrs"), stage(3, "rsrs")};
  WorkerTable balanced;
  EXPECT_EQ(Groups(workers, &balanced).size(), 2u);
  // A rank whose window closed after fewer calls, in the same order, stays with its peer.
  workers = {stage(0, "ssssrr"), stage(1, "ssss"), stage(2, "rrrrss"), stage(3, "rrrrss")};
  WorkerTable short_window;
  EXPECT_EQ(Groups(workers, &short_window).size(), 2u);
}

// 3 stages of 2 replicas (an unseen 6-rank job, 4 micro-batches a step, each stage all-reducing
// its gradients once a step): the middle stage receives and sends in the last stage's order, but
// twice as often between its all-reduces (it passes data both ways). Its 2.9x compute calls had
// read as more work than the last stage's: a healthy run named ranks 4 and 5 `local imbalance`.
TEST(GroupsTest, AnInnerPipelineStageIsNotTheLastStage) {
  auto stage = [](int rank, std::string_view step, int steps) {
    WorkerPattern w = Worker(rank, 0.04);
    w.collectives.clear();
    for (int i = 0; i < steps; ++i) {
      for (char c : step) w.collectives.push_back({c == 's' ? "send" : c == 'r' ? "recv" : "allreduce", 1000});
    }
    return w;
  };
  const std::string first = "ssssrrrrA", middle = "rsrsrsrsrsrsrsrsA", last = "rsrsrsrsA";
  // The middle stage's window holds fewer steps: the summarizer keeps a window's first 64 calls.
  std::vector<WorkerPattern> workers = {stage(0, first, 5),  stage(1, first, 5), stage(2, middle, 3),
                                        stage(3, middle, 3), stage(4, last, 5),  stage(5, last, 5)};
  WorkerTable table;
  std::vector<WorkerGroup> groups = Groups(workers, &table);
  ASSERT_EQ(groups.size(), 3u);
  for (const WorkerGroup& g : groups) {
    ASSERT_EQ(g.size(), 2u);
    EXPECT_EQ(g.row(0).rank + 1, g.row(1).rank);
  }
  // A replica whose all-reduce began a call later on the backend's thread stays with its peer.
  workers = {stage(4, last, 5), stage(5, last, 5)};
  std::swap(workers[1].collectives[8], workers[1].collectives[7]);
  WorkerTable late;
  EXPECT_EQ(Groups(workers, &late).size(), 1u);
}

}  // namespace
}  // namespace eroica
