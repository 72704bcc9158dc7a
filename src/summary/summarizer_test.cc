#include "summary/summarizer.h"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "base/file_util.h"
#include "base/temp_dir.h"
#include "summary/pattern_file.h"
#include "summary/summary_test_util.h"
#include "trace/reader.h"

namespace eroica {
namespace {

// Window [0, 1000] µs: the step ends at 900 on the CPU, its last kernel at 1000.
constexpr std::string_view kGpuTrace = R"json({"traceEvents": [
 {"ph":"X","cat":"user_annotation","name":"ProfilerStep#5","pid":10,"tid":1,"ts":0,"dur":900},
 {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":10,"tid":1,"ts":10,"dur":5,"args":{"correlation":1}},
 {"ph":"X","cat":"cuda_runtime","name":"cudaMemcpyAsync","pid":10,"tid":1,"ts":20,"dur":5,"args":{"correlation":2}},
 {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":10,"tid":1,"ts":30,"dur":5,"args":{"correlation":3}},
 {"ph":"X","cat":"kernel","name":"void gemm<1>(int)","pid":0,"tid":7,"ts":100,"dur":200,"args":{"correlation":1}},
 {"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Pinned -> Device)","pid":0,"tid":8,"ts":250,"dur":150,"args":{"correlation":2,"bytes":4096}},
 {"ph":"X","cat":"kernel","name":"ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)","pid":0,"tid":20,"ts":350,"dur":250,"args":{"correlation":3}},
 {"ph":"X","cat":"user_annotation","name":"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__","pid":10,"tid":1,"ts":600,"dur":200},
 {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":10,"tid":1,"ts":850,"dur":5,"args":{"correlation":4}},
 {"ph":"X","cat":"kernel","name":"void gemm<2>(float)","pid":0,"tid":7,"ts":950,"dur":50,"args":{"correlation":4}},
 {"ph":"X","cat":"kernel","name":"void late<2>(float)","pid":0,"tid":7,"ts":1200,"dur":50,"args":{"correlation":99}}
], "distributedInfo": {"rank": 2, "world_size": 4}})json";

TEST(SummarizeTest, GpuCriticalPathExactBetas) {
  WorkerPattern p = SummarizeText(kGpuTrace);
  EXPECT_EQ(p.rank, 2);
  EXPECT_TRUE(p.has_device);
  EXPECT_EQ(p.window_ns, 1000000);
  EXPECT_EQ(p.step_ids, std::vector<int64_t>{5});
  std::map<std::string, double> beta = BetaByName(p);
  EXPECT_NEAR(beta["gemm"], 0.25, 1e-6);
  EXPECT_NEAR(beta["Memcpy HtoD "], 0.10, 1e-6);  // KernelName stops at '('
  EXPECT_NEAR(beta["allreduce"], 0.20, 1e-6);
  EXPECT_NEAR(beta["enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"], 0.20, 1e-6);
  // Time nothing covers is Python, named by the training thread's ops around it.
  EXPECT_NEAR(beta["(python before cudaLaunchKernel)"], 0.01, 1e-6);
  EXPECT_NEAR(beta["(python between cudaLaunchKernel and cudaMemcpyAsync)"], 0.005, 1e-6);
  EXPECT_NEAR(beta["(python between cudaMemcpyAsync and cudaLaunchKernel)"], 0.005, 1e-6);
  EXPECT_NEAR(beta["(python between cudaLaunchKernel and enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__)"],
              0.065, 1e-6);
  EXPECT_NEAR(beta["(python between enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__ and cudaLaunchKernel)"],
              0.05, 1e-6);
  EXPECT_NEAR(beta["(python after cudaLaunchKernel)"], 0.095, 1e-6);
  EXPECT_EQ(beta.count("(python, unattributed)"), 0u);
  EXPECT_NEAR(beta["cudaLaunchKernel"], 0.015, 1e-6);
  EXPECT_NEAR(beta["cudaMemcpyAsync"], 0.005, 1e-6);
  EXPECT_EQ(beta.count("late"), 0u);  // outside the window
  EXPECT_NEAR(p.category_beta[static_cast<int>(Category::kCompute)], 0.25, 1e-6);
  EXPECT_NEAR(p.category_beta[static_cast<int>(Category::kHost)], 0.25, 1e-6);
  double total = 0;
  for (const FunctionPattern& f : p.functions) total += f.beta;
  EXPECT_NEAR(total, 1.0, 1e-9);
}

// CPU-only build: bare list, no cat, string pid. Window [0, 2000] µs, two iterations.
constexpr std::string_view kCpuTrace = R"json([
 {"name":"ProfilerStep#1","ph":"X","ts":0,"dur":1000,"tid":1,"pid":"CPU functions","args":{}},
 {"name":"ProfilerStep#2","ph":"X","ts":1000,"dur":1000,"tid":1,"pid":"CPU functions","args":{}},
 {"name":"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__","ph":"X","ts":0,"dur":300,"tid":1,"pid":"CPU functions"},
 {"name":"aten::stack","ph":"X","ts":100,"dur":50,"tid":1,"pid":"CPU functions"},
 {"name":"aten::addmm","ph":"X","ts":300,"dur":300,"tid":1,"pid":"CPU functions"},
 {"name":"aten::mm","ph":"X","ts":350,"dur":100,"tid":1,"pid":"CPU functions"},
 {"name":"gloo:all_reduce","ph":"X","ts":500,"dur":400,"tid":3,"pid":"CPU functions"},
 {"name":"Optimizer.step#SGD.step","ph":"X","ts":900,"dur":100,"tid":1,"pid":"CPU functions"},
 {"name":"aten::add_","ph":"X","ts":920,"dur":20,"tid":1,"pid":"CPU functions"},
 {"name":"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__","ph":"X","ts":1000,"dur":100,"tid":1,"pid":"CPU functions"}
])json";

TEST(SummarizeTest, CpuTrainingExactBetas) {
  WorkerPattern p = SummarizeText(kCpuTrace, "worker3.pt.trace.json");
  EXPECT_EQ(p.rank, 3);
  EXPECT_FALSE(p.has_device);
  EXPECT_EQ(p.iterations(), 2);
  EXPECT_DOUBLE_EQ(p.iteration_s, 1e-3);
  std::map<std::string, double> beta = BetaByName(p);
  EXPECT_NEAR(beta["enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"], 0.20, 1e-9);
  EXPECT_NEAR(beta["aten::addmm"], 0.10, 1e-9);
  EXPECT_NEAR(beta["aten::mm"], 0.05, 1e-9);
  EXPECT_NEAR(beta["allreduce"], 0.15, 1e-9);
  EXPECT_NEAR(beta["aten::add_"], 0.01, 1e-9);
  EXPECT_NEAR(beta["Optimizer.step#SGD.step"], 0.04, 1e-9);
  EXPECT_NEAR(beta["(python after enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__)"], 0.45, 1e-9);
  EXPECT_NEAR(beta["aten::stack"], 0.0, 1e-9);  // the data loader owns its children
  EXPECT_DOUBLE_EQ(p.dataloader_ops_per_iter, 0.5);
  EXPECT_NEAR(p.category_beta[static_cast<int>(Category::kCommunication)], 0.15, 1e-9);
}

// The loader's items, as its ops count them: the calls of its most frequent op. Each of 4 items a
// step runs aten::lift_fresh twice and aten::to once; this rank's dataset also reads a shared
// counter per item (aten::select, aten::item): 4 more ops a step, no more items.
TEST(SummarizeTest, LoaderItemsAreItsMostFrequentOpsCalls) {
  std::string events;
  for (int step = 0; step < 2; ++step) {
    int64_t base = step * 1000;
    events += fmt::format(R"({{"name":"ProfilerStep#{}","ph":"X","ts":{},"dur":1000,"tid":1,"pid":"CPU functions"}},)",
                          step + 1, base);
    events += fmt::format(
        R"({{"name":"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__","ph":"X","ts":{},"dur":400,"tid":1,"pid":"CPU functions"}},)",
        base);
    for (int item = 0; item < 4; ++item) {
      int64_t at = base + 10 + item * 90;
      for (const char* op : {"aten::lift_fresh", "aten::lift_fresh", "aten::to", "aten::select", "aten::item"}) {
        events += fmt::format(R"({{"name":"{}","ph":"X","ts":{},"dur":5,"tid":1,"pid":"CPU functions"}},)", op, at);
        at += 10;
      }
    }
    events +=
        fmt::format(R"({{"name":"aten::mm","ph":"X","ts":{},"dur":300,"tid":1,"pid":"CPU functions"}},)", base + 500);
  }
  events.pop_back();
  WorkerPattern p = SummarizeText("[" + events + "]", "worker1.pt.trace.json");
  EXPECT_DOUBLE_EQ(p.dataloader_ops_per_iter, 8);  // lift_fresh: 2 an item, 4 items
}

// CPU training: gloo's thread recorded the end of step 1's all-reduce 600 µs into step 2 (it was
// descheduled; the step had moved on, so the collective was done). Painted to its step's end,
// step 2's 400 µs of Python before its first op is Python, not waiting; the call's duration is
// the same. The training thread's own collective op, which it records itself, is not cut.
TEST(SummarizeTest, ACollectiveRecordedPastItsStepEndsWithTheStep) {
  const char* trace = R"([
    {{"name":"ProfilerStep#1","ph":"X","ts":0,"dur":1000,"tid":1,"pid":7}},
    {{"name":"ProfilerStep#2","ph":"X","ts":1000,"dur":1000,"tid":1,"pid":7}},
    {{"name":"aten::mm","ph":"X","ts":0,"dur":500,"tid":1,"pid":7}},
    {{"name":"gloo:all_reduce","ph":"X","ts":500,"dur":1100,"tid":{},"pid":7}},
    {{"name":"aten::add","ph":"X","ts":1400,"dur":600,"tid":1,"pid":7}}])";
  WorkerPattern late = SummarizeText(fmt::format(fmt::runtime(trace), 2));
  std::map<std::string, double> beta = BetaByName(late);
  EXPECT_NEAR(beta["allreduce"], 0.25, 1e-9);
  EXPECT_NEAR(late.category_beta[static_cast<int>(Category::kHost)], 0.2, 1e-9);
  ASSERT_EQ(late.collectives.size(), 1u);
  EXPECT_FLOAT_EQ(late.collectives[0].duration_us, 500);
  // Recorded by the training thread itself: it was in the call until then.
  WorkerPattern own = SummarizeText(fmt::format(fmt::runtime(trace), 1));
  EXPECT_NEAR(BetaByName(own)["allreduce"], 0.25 + 0.2, 1e-9);
}

// CPU training: the profiler stopped before gloo's thread recorded the last step's all-reduce, so
// only the training thread's launch (c10d::allreduce_) is there, and its 490 µs wait for the
// result until its next op would read as Python. It is the collective's.
TEST(SummarizeTest, ALastCollectiveWhoseBackendRangeWasNeverRecordedLastsUntilTheThreadResumes) {
  const char* trace = R"([
    {{"name":"ProfilerStep#1","ph":"X","ts":0,"dur":1000,"tid":1,"pid":7}},
    {{"name":"ProfilerStep#2","ph":"X","ts":1000,"dur":1000,"tid":1,"pid":7}},
    {{"name":"aten::mm","ph":"X","ts":0,"dur":400,"tid":1,"pid":7}},
    {{"name":"c10d::allreduce_","ph":"X","ts":400,"dur":10,"tid":1,"pid":7}},
    {{"name":"gloo:all_reduce","ph":"X","ts":410,"dur":300,"tid":{},"pid":7}},
    {{"name":"aten::add","ph":"X","ts":710,"dur":290,"tid":1,"pid":7}},
    {{"name":"aten::mm","ph":"X","ts":1000,"dur":400,"tid":1,"pid":7}},
    {{"name":"c10d::allreduce_","ph":"X","ts":1400,"dur":10,"tid":1,"pid":7}},
    {{"name":"aten::add","ph":"X","ts":1900,"dur":100,"tid":1,"pid":7}}])";
  auto communication = [](const WorkerPattern& p) {
    return p.category_beta[static_cast<int>(Category::kCommunication)];
  };
  auto host = [](const WorkerPattern& p) { return p.category_beta[static_cast<int>(Category::kHost)]; };
  WorkerPattern cut = SummarizeText(fmt::format(fmt::runtime(trace), 3));
  EXPECT_NEAR(communication(cut), (10 + 300 + 500) / 2000.0, 1e-9);
  EXPECT_NEAR(host(cut), 0.0, 1e-9);
  // A backend that records no ranges of its own (here gloo's on the training thread): the launch
  // is all there is, and the gap after it is not known to be a wait.
  WorkerPattern no_backend = SummarizeText(fmt::format(fmt::runtime(trace), 1));
  EXPECT_NEAR(host(no_backend), 490 / 2000.0, 1e-9);
}

// torch.distributed.nn.functional's all_to_all_single, as an unseen mixture-of-experts job
// recorded it on CPU (torch 1.13): the training thread runs the autograd function (forward
// `_AlltoAllSingle`, backward `_AlltoAllSingleBackward` around another `_AlltoAllSingle`) and
// waits inside it while gloo's thread records the collective. The wait is the collective's in both
// directions, not the backward node's compute.
TEST(SummarizeTest, ADistributedAutogradFunctionsWaitIsItsCollectives) {
  constexpr std::string_view trace = R"json([
    {"name":"ProfilerStep#1","ph":"X","ts":0,"dur":1000,"tid":1,"pid":7},
    {"name":"ProfilerStep#2","ph":"X","ts":1000,"dur":1000,"tid":1,"pid":7},
    {"name":"aten::mm","ph":"X","ts":0,"dur":200,"tid":1,"pid":7},
    {"name":"_AlltoAllSingle","ph":"X","ts":200,"dur":300,"tid":1,"pid":7},
    {"name":"aten::empty","ph":"X","ts":205,"dur":5,"tid":1,"pid":7},
    {"name":"gloo:all_to_all","ph":"X","ts":220,"dur":270,"tid":2,"pid":7},
    {"name":"aten::mm","ph":"X","ts":500,"dur":500,"tid":1,"pid":7},
    {"name":"autograd::engine::evaluate_function: _AlltoAllSingleBackward","ph":"X","ts":1000,"dur":400,"tid":1,"pid":7},
    {"name":"_AlltoAllSingleBackward","ph":"X","ts":1001,"dur":398,"tid":1,"pid":7},
    {"name":"_AlltoAllSingle","ph":"X","ts":1010,"dur":385,"tid":1,"pid":7},
    {"name":"gloo:all_to_all","ph":"X","ts":1020,"dur":370,"tid":3,"pid":7},
    {"name":"aten::mm","ph":"X","ts":1400,"dur":600,"tid":1,"pid":7}
  ])json";
  WorkerPattern p = SummarizeText(trace);
  std::map<std::string, double> beta = BetaByName(p);
  EXPECT_NEAR(beta["alltoall"], (270 + 370) / 2000.0, 1e-9);
  EXPECT_NEAR(beta["_AlltoAllSingleBackward"], (9 + 4) / 2000.0, 1e-9);  // around the call: host
  EXPECT_NEAR(p.category_beta[static_cast<int>(Category::kCompute)], (200 + 5 + 500 + 600) / 2000.0, 1e-9);
  ASSERT_EQ(p.collectives.size(), 2u);
  EXPECT_FLOAT_EQ(p.collectives[1].duration_us, 370);
  // Each call's iteration: the step it began in.
  EXPECT_EQ(p.collectives[0].iteration, 0);
  EXPECT_EQ(p.collectives[1].iteration, 1);
}

TEST(SummarizeTest, NoStepMarkersCoverTheWholeWindowWithAWarning) {
  WorkerPattern p = SummarizeText(R"([{"name":"aten::mm","ph":"X","ts":10,"dur":30,"tid":1,"pid":1},
                                      {"name":"aten::add","ph":"X","ts":60,"dur":50,"tid":1,"pid":1}])");
  EXPECT_EQ(p.window_ns, 100000);
  EXPECT_EQ(p.iterations(), 0);
  ASSERT_FALSE(p.warnings.empty());
  EXPECT_NE(p.warnings[0].find("no ProfilerStep"), std::string::npos);
  EXPECT_NEAR(BetaByName(p)["(python between aten::mm and aten::add)"], 0.2, 1e-9);
}

// Every real trace: Σβ = 1 per worker and the pattern file stays small.
TEST(SummarizeTest, EveryRealTraceSumsToOneAndFitsInTenKilobytes) {
  std::filesystem::path root = std::filesystem::path(EROICA_SHARED_DIR) / "traces";
  if (!std::filesystem::exists(root)) GTEST_SKIP() << "no " << root;
  TempDir dir;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || name.find(".json") == std::string::npos) continue;
    StatusOr<Trace> trace = ReadTrace(entry.path().string());
    ASSERT_TRUE(trace.ok());
    StatusOr<Summary> summary = Summarize(*trace);
    ASSERT_TRUE(summary.ok()) << summary.status().message();
    double total = 0;
    for (const FunctionPattern& f : summary->pattern.functions) total += f.beta;
    EXPECT_NEAR(total, 1.0, 1e-4) << name;
    double category_total = 0;
    for (double b : summary->pattern.category_beta) category_total += b;
    EXPECT_NEAR(category_total, 1.0, 1e-4) << name;
    std::string out = dir.path() + "/p.pattern";
    ASSERT_TRUE(WritePatternFile(out, {summary->pattern}).ok());
    EXPECT_LE(std::filesystem::file_size(out), 10u * 1024) << name;
    // Painted in many small slices through the slice index (large traces' path), the same
    // critical path and the same pattern, byte for byte.
    SummarizeOptions sliced_options;
    sliced_options.spans_per_slice = 500;
    sliced_options.one_slice_events = 0;
    StatusOr<Summary> sliced = Summarize(*trace, sliced_options);
    ASSERT_TRUE(sliced.ok()) << name;
    EXPECT_EQ(sliced->critical_path.ToSpans(), summary->critical_path.ToSpans()) << name;
    std::string sliced_out = dir.path() + "/sliced.pattern";
    ASSERT_TRUE(WritePatternFile(sliced_out, {sliced->pattern}).ok());
    EXPECT_EQ(ReadSmallFile(sliced_out, 1 << 20).value(), ReadSmallFile(out, 1 << 20).value()) << name;
  }
}

}  // namespace
}  // namespace eroica

namespace eroica {
namespace {

TEST(SummarizeTest, PipelineStageFromProcessGroupsIsTheRole) {
  WorkerPattern p = SummarizeText(R"json({"traceEvents": [
    {"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":10}],
    "distributedInfo": {"rank": 5, "world_size": 8, "pg_config": [
      {"pg_name": "0", "pg_desc": "default_pg", "ranks": [0,1,2,3,4,5,6,7]},
      {"pg_name": "3", "pg_desc": "pp_group", "ranks": [1,3,5,7]}]}})json");
  EXPECT_EQ(p.group, "pipeline stage 2");
  WorkerPattern plain = SummarizeText(kCpuTrace);
  EXPECT_EQ(plain.group, "");
}

}  // namespace
}  // namespace eroica
