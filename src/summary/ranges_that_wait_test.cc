#include "summary/ranges_that_wait.h"

#include <gtest/gtest.h>

#include "summary/summary_test_util.h"

namespace eroica {
namespace {

double CategoryBeta(const WorkerPattern& p, Category category) { return p.category_beta[static_cast<int>(category)]; }

// A tensor-parallel job's hand-written autograd Functions, as torch 1.13 records them on CPU: the
// backward node CopyToTPBackward (inside the engine's range) all-reduces the input's gradient and
// the forward ReduceFromTP the partial sums, each waiting while gloo's thread runs the collective
// (the shape of a real rank-2 trace: a 27.9 ms node over a 27.7 ms gloo:all_reduce; autograd
// makes the forward's output a view of its input after the wait).
constexpr std::string_view kTensorParallelStep = R"json([
  {"name":"ProfilerStep#1","ph":"X","ts":0,"dur":1000,"tid":1,"pid":7},
  {"name":"aten::mm","ph":"X","ts":0,"dur":100,"tid":1,"pid":7},
  {"name":"ReduceFromTP","ph":"X","ts":100,"dur":200,"tid":1,"pid":7},
  {"name":"c10d::allreduce_","ph":"X","ts":101,"dur":4,"tid":1,"pid":7},
  {"name":"gloo:all_reduce","ph":"X","ts":110,"dur":170,"tid":3,"pid":7},
  {"name":"aten::view_as","ph":"X","ts":296,"dur":2,"tid":1,"pid":7},
  {"name":"aten::mm","ph":"X","ts":300,"dur":100,"tid":1,"pid":7},
  {"name":"autograd::engine::evaluate_function: CopyToTPBackward","ph":"X","ts":400,"dur":400,"tid":1,"pid":7},
  {"name":"CopyToTPBackward","ph":"X","ts":401,"dur":398,"tid":1,"pid":7},
  {"name":"aten::clone","ph":"X","ts":402,"dur":8,"tid":1,"pid":7},
  {"name":"c10d::allreduce_","ph":"X","ts":412,"dur":3,"tid":1,"pid":7},
  {"name":"gloo:all_reduce","ph":"X","ts":420,"dur":375,"tid":2,"pid":7},
  {"name":"aten::mm","ph":"X","ts":800,"dur":200,"tid":1,"pid":7}
])json";

TEST(RangesThatWaitTest, AUserFunctionsWaitForItsCollectiveIsTheCollectivesNotItsCompute) {
  WorkerPattern p = SummarizeText(kTensorParallelStep);
  std::map<std::string, double> beta = BetaByName(p);
  EXPECT_NEAR(beta["allreduce"], (4 + 170 + 3 + 375) / 1000.0, 1e-9);  // launches and gloo's ranges
  EXPECT_EQ(beta.count("CopyToTPBackward"), 0u);
  EXPECT_EQ(beta.count("ReduceFromTP"), 0u);
  // The op the node runs itself is still compute; the thread's return after gloo is a resume.
  EXPECT_NEAR(CategoryBeta(p, Category::kCompute), (100 + 2 + 100 + 8 + 200) / 1000.0, 1e-9);
  EXPECT_NEAR(beta["(resuming after allreduce, before aten::view_as)"], 16 / 1000.0, 1e-9);
  EXPECT_NEAR(beta["(resuming after allreduce, before aten::mm)"], 5 / 1000.0, 1e-9);
}

TEST(RangesThatWaitTest, TheBackendRecordingItsEndAfterWakingTheThreadStillCounts) {
  std::string trace(kTensorParallelStep);
  // gloo's thread records its range's end 30 us after the training thread had returned.
  trace.replace(trace.find(R"("dur":375)"), 9, R"("dur":410)");
  WorkerPattern p = SummarizeText(trace);
  EXPECT_EQ(BetaByName(p).count("CopyToTPBackward"), 0u);
}

// On a busy node the thread may come back long after a short collective: the forward is then
// mostly its return, but it recorded nothing of its own after the wait but autograd's view.
TEST(RangesThatWaitTest, AForwardWhoseThreadCameBackLateIsStillTheCollectivesWait) {
  std::string trace(kTensorParallelStep);
  trace.replace(trace.find(R"("dur":170)"), 9, R"("dur":20 )");  // gloo's range 110-130
  EXPECT_EQ(BetaByName(SummarizeText(trace)).count("ReduceFromTP"), 0u);
}

// DDP's gradient hook launches a bucket's all-reduce from the AccumulateGrad node and returns
// (the launch is asynchronous): the node did not wait and stays compute; so does a node that
// launched a collective and went on with ops of its own at once.
TEST(RangesThatWaitTest, ARangeThatDidNotWaitKeepsItsRole) {
  constexpr std::string_view trace = R"json([
    {"name":"ProfilerStep#1","ph":"X","ts":0,"dur":1000,"tid":1,"pid":7},
    {"name":"autograd::engine::evaluate_function: torch::autograd::AccumulateGrad","ph":"X","ts":0,"dur":60,"tid":1,"pid":7},
    {"name":"aten::add_","ph":"X","ts":2,"dur":50,"tid":1,"pid":7},
    {"name":"c10d::allreduce_","ph":"X","ts":54,"dur":4,"tid":1,"pid":7},
    {"name":"gloo:all_reduce","ph":"X","ts":59,"dur":500,"tid":2,"pid":7},
    {"name":"MulBackward0","ph":"X","ts":600,"dur":300,"tid":1,"pid":7},
    {"name":"c10d::allreduce_","ph":"X","ts":601,"dur":4,"tid":1,"pid":7},
    {"name":"gloo:all_reduce","ph":"X","ts":606,"dur":100,"tid":3,"pid":7},
    {"name":"aten::mul","ph":"X","ts":610,"dur":280,"tid":1,"pid":7}
  ])json";
  std::map<std::string, double> beta = BetaByName(SummarizeText(trace));
  // Its own time around aten::add_, its launch included (compute outranks communication).
  EXPECT_NEAR(beta["autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"], (2 + 8) / 1000.0, 1e-9);
  EXPECT_GT(beta["MulBackward0"], 0.0);
}

// A model's forward that begins by broadcasting its buffers (DDP's range, an annotation) waits for
// the broadcast and then runs the model: it keeps its name. A backward node that waited and then
// went on (a custom op all-reducing, then computing) is read as its ops and the wait.
TEST(RangesThatWaitTest, AnAnnotationThatWorksOnAfterTheWaitKeepsItsName) {
  constexpr std::string_view trace = R"json([
    {"name":"ProfilerStep#1","ph":"X","ts":0,"dur":1000,"tid":1,"pid":7},
    {"name":"DistributedDataParallel.forward","ph":"X","ts":0,"dur":500,"tid":1,"pid":7},
    {"name":"c10d::broadcast_","ph":"X","ts":1,"dur":4,"tid":1,"pid":7},
    {"name":"gloo:broadcast","ph":"X","ts":6,"dur":100,"tid":2,"pid":7},
    {"name":"aten::mm","ph":"X","ts":120,"dur":370,"tid":1,"pid":7},
    {"name":"SyncNormBackward","ph":"X","ts":500,"dur":400,"tid":1,"pid":7},
    {"name":"c10d::allreduce_","ph":"X","ts":501,"dur":4,"tid":1,"pid":7},
    {"name":"gloo:all_reduce","ph":"X","ts":506,"dur":200,"tid":3,"pid":7},
    {"name":"aten::mul","ph":"X","ts":710,"dur":180,"tid":1,"pid":7}
  ])json";
  std::map<std::string, double> beta = BetaByName(SummarizeText(trace));
  EXPECT_GT(beta["DistributedDataParallel.forward"], 0.0);
  EXPECT_EQ(beta.count("SyncNormBackward"), 0u);
}

// GPU training: the device runs the collective; a range around its launch is launch work.
TEST(RangesThatWaitTest, GpuTrainingIsLeftAlone) {
  constexpr std::string_view trace = R"json([
    {"name":"ProfilerStep#1","ph":"X","ts":0,"dur":1000,"tid":1,"pid":7,"cat":"user_annotation"},
    {"name":"ReduceFromTP","ph":"X","ts":100,"dur":200,"tid":1,"pid":7,"cat":"user_annotation"},
    {"name":"c10d::allreduce_","ph":"X","ts":101,"dur":4,"tid":1,"pid":7,"cat":"cpu_op"},
    {"name":"gloo:all_reduce","ph":"X","ts":110,"dur":170,"tid":3,"pid":7,"cat":"cpu_op"},
    {"name":"Kernel","ph":"X","ts":500,"dur":100,"tid":7,"pid":0,"cat":"kernel"}
  ])json";
  EXPECT_GT(BetaByName(SummarizeText(trace))["ReduceFromTP"], 0.0);
}

}  // namespace
}  // namespace eroica
