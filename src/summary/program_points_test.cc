#include "summary/program_points.h"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "summary/function_name.h"
#include "summary/summary_test_util.h"

namespace eroica {
namespace {

const FunctionPattern* Find(const WorkerPattern& p, const std::string& name) {
  for (const FunctionPattern& f : p.functions) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

constexpr std::string_view kLoader = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";

// Three 1000 µs iterations of CPU training: the loader, 400 µs of Python, aten::mm (whose
// last child ends with it), then 100 µs of Python.
std::string ThreeIterations() {
  std::string events;
  for (int i = 0; i < 3; ++i) {
    int t = 1000 * i;
    events += fmt::format(R"({{"name":"ProfilerStep#{}","ph":"X","ts":{},"dur":1000,"tid":1,"pid":7}},)", i, t);
    events += fmt::format(R"({{"name":"{}","ph":"X","ts":{},"dur":100,"tid":1,"pid":7}},)", kLoader, t);
    events += fmt::format(R"({{"name":"aten::mm","ph":"X","ts":{},"dur":400,"tid":1,"pid":7}},)", t + 500);
    events += fmt::format(R"({{"name":"aten::empty","ph":"X","ts":{},"dur":100,"tid":1,"pid":7}},)", t + 800);
  }
  events.pop_back();
  return "[" + events + "]";
}

TEST(ProgramPointsTest, OneProgramPointEveryIterationIsOneFunctionWithOneCallPerIteration) {
  WorkerPattern p = SummarizeText(ThreeIterations());
  const FunctionPattern* loop = Find(p, fmt::format("(python between {} and aten::mm)", kLoader));
  ASSERT_NE(loop, nullptr);
  EXPECT_NEAR(loop->beta, 0.4, 1e-9);
  EXPECT_EQ(loop->category, Category::kHost);
  EXPECT_EQ(loop->host_kind, HostKind::kPython);
  EXPECT_DOUBLE_EQ(loop->calls_per_iter, 1.0);
  EXPECT_DOUBLE_EQ(loop->mean_duration_us, 400.0);
  // After aten::mm: the outer op, not aten::empty, which ends at the same instant. The last
  // step's tail has no op after it in the window, but it is the same code as the others' (the
  // only point that follows aten::mm): one point, reached every step.
  const FunctionPattern* tail = Find(p, fmt::format("(python between aten::mm and {})", kLoader));
  ASSERT_NE(tail, nullptr);
  EXPECT_NEAR(tail->beta, 300.0 / 3000, 1e-9);
  EXPECT_DOUBLE_EQ(tail->calls_per_iter, 1.0);
  EXPECT_EQ(Find(p, "(python after aten::mm)"), nullptr);
  for (const FunctionPattern& f : p.functions) {
    EXPECT_EQ(f.name.find("aten::empty and"), std::string::npos) << f.name;
  }
  EXPECT_NEAR(p.category_beta[static_cast<int>(Category::kHost)], 0.5, 1e-9);
}

// The window's first step opens with 50 µs of Python before its first op, its last ends with
// 200 µs after its last op; in between, that Python runs on from one step's last op into the next
// step's first. The cut gaps are the point that spans a step boundary from (to) the same op, even
// where that op is also followed by another point inside the step; a last step that ends on an
// op no step boundary follows keeps its cut name.
TEST(ProgramPointsTest, AGapCutByTheWindowIsThePointThatSpansAStepBoundaryFromTheSameOp) {
  auto steps = [](bool relu_inside, bool last_ends_on_sum) {
    std::string events;
    for (int i = 0; i < 3; ++i) {
      int t = 1000 * i;
      events += fmt::format(R"({{"name":"ProfilerStep#{}","ph":"X","ts":{},"dur":1000,"tid":1,"pid":7}},)", i, t);
      events += fmt::format(R"({{"name":"aten::mm","ph":"X","ts":{},"dur":300,"tid":1,"pid":7}},)", t + 50);
      if (relu_inside) {
        events += fmt::format(R"({{"name":"aten::relu","ph":"X","ts":{},"dur":100,"tid":1,"pid":7}},)", t + 400);
        events += fmt::format(R"({{"name":"aten::add","ph":"X","ts":{},"dur":100,"tid":1,"pid":7}},)", t + 550);
      }
      const char* last = last_ends_on_sum && i == 2 ? "aten::sum" : "aten::relu";
      events += fmt::format(R"({{"name":"{}","ph":"X","ts":{},"dur":100,"tid":1,"pid":7}},)", last, t + 700);
    }
    events.pop_back();
    return "[" + events + "]";
  };
  for (bool relu_inside : {false, true}) {
    WorkerPattern p = SummarizeText(steps(relu_inside, false));
    const FunctionPattern* boundary = Find(p, "(python between aten::relu and aten::mm)");
    ASSERT_NE(boundary, nullptr);
    EXPECT_NEAR(boundary->beta, (250.0 * 2 + 200 + 50) / 3000, 1e-9);  // both cut ends joined
    EXPECT_DOUBLE_EQ(boundary->calls_per_iter, 4.0 / 3);
    EXPECT_EQ(Find(p, "(python after aten::relu)"), nullptr);
    EXPECT_EQ(Find(p, "(python before aten::mm)"), nullptr);
  }
  WorkerPattern kept = SummarizeText(steps(false, true));
  const FunctionPattern* cut = Find(kept, "(python after aten::sum)");
  ASSERT_NE(cut, nullptr);
  EXPECT_NEAR(cut->beta, 200.0 / 3000, 1e-9);
  EXPECT_EQ(Find(kept, "(python before aten::mm)"), nullptr);
}

// Whole-microsecond times round a parent's end and its last child's apart: in step 1 the child
// ends with its parent, in step 2 a microsecond after it. The parent names the point after both
// in every step; an op that starts where another ends is no child of it.
TEST(ProgramPointsTest, TheOuterOpNamesThePointAfterItThoughItsChildEndsAMicrosecondLater) {
  std::string events;
  for (int i = 0; i < 3; ++i) {
    int t = 1000 * i;
    events += fmt::format(R"({{"name":"ProfilerStep#{}","ph":"X","ts":{},"dur":1000,"tid":1,"pid":7}},)", i, t);
    events += fmt::format(R"({{"name":"aten::mm","ph":"X","ts":{},"dur":300,"tid":1,"pid":7}},)", t + 50);
    events += fmt::format(R"({{"name":"aten::detach","ph":"X","ts":{},"dur":2,"tid":1,"pid":7}},)", t + 500);
    events += fmt::format(R"({{"name":"detach","ph":"X","ts":{},"dur":{},"tid":1,"pid":7}},)", t + 501, i == 1 ? 2 : 1);
    if (i == 2) {  // a last op that starts where aten::detach ends: after it, not inside it
      events += fmt::format(R"({{"name":"aten::add","ph":"X","ts":{},"dur":1,"tid":1,"pid":7}},)", t + 502);
    }
  }
  events.pop_back();
  WorkerPattern p = SummarizeText("[" + events + "]");
  const FunctionPattern* tail = Find(p, "(python between aten::detach and aten::mm)");
  ASSERT_NE(tail, nullptr);
  // Steps 0 and 1 into the next (the child ends at 502, then 503), and the window's first 50 µs.
  EXPECT_NEAR(tail->beta, (548.0 + 547 + 50) / 3000, 1e-9);
  for (const FunctionPattern& f : p.functions) EXPECT_EQ(f.name.find("between detach"), std::string::npos) << f.name;
  EXPECT_NE(Find(p, "(python after aten::add)"), nullptr);
}

// The same 40% of Python, once spread over ten program points and once at one: only the hot
// loop owns a large β at one point; the host category is the same for both.
TEST(ProgramPointsTest, PythonSpreadOverManyPointsIsSmallAtEach) {
  std::string spread, hot;
  for (int k = 0; k < 10; ++k) {
    spread += fmt::format(R"({{"name":"aten::op{}","ph":"X","ts":{},"dur":60,"tid":1,"pid":7}},)", k, 100 * k);
    hot += fmt::format(R"({{"name":"aten::op{}","ph":"X","ts":{},"dur":60,"tid":1,"pid":7}},)", k, 400 + 60 * k);
  }
  std::string step = R"({"name":"ProfilerStep#1","ph":"X","ts":0,"dur":1000,"tid":1,"pid":7})";
  WorkerPattern a = SummarizeText("[" + spread + step + "]");
  WorkerPattern b = SummarizeText("[" + hot + step + "]");
  auto largest_python = [](const WorkerPattern& p) {
    double best = 0;
    for (const FunctionPattern& f : p.functions) {
      if (f.host_kind == HostKind::kPython) best = std::max(best, f.beta);
    }
    return best;
  };
  EXPECT_NEAR(a.category_beta[static_cast<int>(Category::kHost)], 0.4, 1e-9);
  EXPECT_NEAR(b.category_beta[static_cast<int>(Category::kHost)], 0.4, 1e-9);
  EXPECT_NEAR(largest_python(a), 0.04, 1e-9);
  EXPECT_NEAR(largest_python(b), 0.4, 1e-9);
  EXPECT_NE(Find(b, "(python before aten::op0)"), nullptr);
}

// Another thread of the training process (here gloo's) covers part of the time but marks no
// program point: the gap is named by the step thread's ops.
TEST(ProgramPointsTest, OnlyTheStepThreadsOpsMarkProgramPoints) {
  WorkerPattern p = SummarizeText(R"([
    {"name":"ProfilerStep#1","ph":"X","ts":0,"dur":1000,"tid":1,"pid":7},
    {"name":"aten::add","ph":"X","ts":0,"dur":100,"tid":1,"pid":7},
    {"name":"gloo:all_reduce","ph":"X","ts":20,"dur":60,"tid":2,"pid":7},
    {"name":"aten::mul","ph":"X","ts":300,"dur":700,"tid":1,"pid":7}])");
  const FunctionPattern* gap = Find(p, "(python between aten::add and aten::mul)");
  ASSERT_NE(gap, nullptr);
  EXPECT_NEAR(gap->beta, 0.2, 1e-9);
}

// CPU training: the step thread waits while gloo's thread runs the all-reduce (50-200 µs); the
// 100 µs until its next op are it coming back (queued for a CPU on a busy node), named after the
// collective, not after the op before the wait. Where the step thread ran the collective itself
// (it returned from a blocking call it recorded), it was running at its end: Python.
// GPU training never waits so: a device collective's end wakes no thread.
TEST(ProgramPointsTest, TheGapAfterACollectiveTheThreadWaitedOnIsItsResumption) {
  const char* waited = R"({{"traceEvents": [
    {{"name":"ProfilerStep#1","ph":"X","ts":0,"dur":1000,"tid":1,"pid":7}},
    {{"name":"aten::add","ph":"X","ts":0,"dur":50,"tid":1,"pid":7}},
    {{"name":"gloo:all_reduce","ph":"X","ts":50,"dur":150,"tid":{},"pid":7}},
    {{"name":"aten::mul","ph":"X","ts":300,"dur":700,"tid":1,"pid":7}}{}]}})";
  WorkerPattern cpu = SummarizeText(fmt::format(fmt::runtime(waited), 2, ""));
  const FunctionPattern* resumed = Find(cpu, "(resuming after allreduce, before aten::mul)");
  ASSERT_NE(resumed, nullptr);
  EXPECT_NEAR(resumed->beta, 0.1, 1e-9);
  EXPECT_EQ(resumed->category, Category::kHost);
  EXPECT_TRUE(IsResumePoint(resumed->name));
  EXPECT_EQ(Find(cpu, "(python between aten::add and aten::mul)"), nullptr);

  WorkerPattern returned = SummarizeText(fmt::format(fmt::runtime(waited), 1, ""));
  EXPECT_NE(Find(returned, "(python between allreduce and aten::mul)"), nullptr);
  for (const FunctionPattern& f : returned.functions) EXPECT_FALSE(IsResumePoint(f.name)) << f.name;

  WorkerPattern gpu = SummarizeText(fmt::format(
      fmt::runtime(waited), 2,
      R"json(,{"name":"void gemm<1>(int)","ph":"X","cat":"kernel","ts":900,"dur":50,"tid":7,"pid":0})json"));
  for (const FunctionPattern& f : gpu.functions) EXPECT_FALSE(IsResumePoint(f.name)) << f.name;
}

// gloo recorded step 1's all-reduce past step 2's start: it is painted up to there (the step had
// moved on). The gap that opens step 2 follows it on the path, but the thread marked that step
// itself, so it was running: Python, not a resumption.
TEST(ProgramPointsTest, AGapThatOpensAStepIsNoResumption) {
  WorkerPattern p = SummarizeText(R"([
    {"name":"ProfilerStep#1","ph":"X","ts":0,"dur":1000,"tid":1,"pid":7},
    {"name":"ProfilerStep#2","ph":"X","ts":1000,"dur":1000,"tid":1,"pid":7},
    {"name":"aten::add","ph":"X","ts":0,"dur":400,"tid":1,"pid":7},
    {"name":"gloo:all_reduce","ph":"X","ts":400,"dur":900,"tid":2,"pid":7},
    {"name":"aten::mul","ph":"X","ts":1100,"dur":900,"tid":1,"pid":7}])");
  const FunctionPattern* gap = Find(p, "(python between aten::add and aten::mul)");
  ASSERT_NE(gap, nullptr);
  EXPECT_NEAR(gap->beta, 0.05, 1e-9);
  for (const FunctionPattern& f : p.functions) EXPECT_FALSE(IsResumePoint(f.name)) << f.name;
}

TEST(ProgramPointsTest, WithoutOpsOnTheHostTheTimeStaysUnattributed) {
  WorkerPattern p = SummarizeText(R"json({"traceEvents": [
    {"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":7,"tid":1,"ts":0,"dur":1000},
    {"ph":"X","cat":"kernel","name":"void gemm<1>(int)","pid":0,"tid":7,"ts":100,"dur":100}]})json");
  EXPECT_NEAR(BetaByName(p)["(python, unattributed)"], 0.9, 1e-9);
}

}  // namespace
}  // namespace eroica
