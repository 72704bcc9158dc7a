#include "summary/summarize_files.h"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include "base/temp_dir.h"

namespace eroica {
namespace {

TEST(PlanReadersTest, ThreadsCountEveryThreadAndMemoryBoundsTheReaders) {
  // One file, two threads: the spare thread inflates beside the reader.
  ReaderPlan one = PlanReaders(1, 2, 0);
  EXPECT_EQ(one.readers, 1);
  EXPECT_TRUE(one.inflate_on_helper_thread);
  EXPECT_EQ(one.max_event_bytes, 0u);
  // As many readers as threads: none left for a helper.
  ReaderPlan busy = PlanReaders(8, 2, 0);
  EXPECT_EQ(busy.readers, 2);
  EXPECT_FALSE(busy.inflate_on_helper_thread);
  EXPECT_FALSE(PlanReaders(1, 1, 0).inflate_on_helper_thread);
  // A budget that fits one reader's share runs one, which then may use the second thread.
  ReaderPlan tight = PlanReaders(8, 2, size_t{150} << 20);
  EXPECT_EQ(tight.readers, 1);
  EXPECT_TRUE(tight.inflate_on_helper_thread);
  EXPECT_GT(tight.max_event_bytes, size_t{40} << 20);
  EXPECT_LT(tight.max_event_bytes, size_t{150} << 20);
  // A large one keeps every reader and splits the budget among them.
  ReaderPlan roomy = PlanReaders(8, 4, size_t{4} << 30);
  EXPECT_EQ(roomy.readers, 4);
  EXPECT_LT(roomy.max_event_bytes, size_t{1} << 30);
}

// A trace whose events do not fit the budget is an error naming the limit; the others are read.
TEST(SummarizeFilesTest, ATraceOverTheMemoryBudgetIsAnErrorNotAPartialPattern) {
  TempDir dir;
  auto trace = [&](const std::string& name, int steps) {
    std::string text = "{\"traceEvents\": [";
    for (int s = 0; s < steps; ++s) {
      int64_t t = s * 1000;
      text += fmt::format(R"({{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{}", "pid": 1, "tid": 1, )"
                          R"("ts": {}, "dur": 900}},)",
                          s, t);
      for (int k = 0; k < 40; ++k) {
        text += fmt::format(
            R"({{"ph": "X", "cat": "cpu_op", "name": "aten::op{}", "pid": 1, "tid": 1, "ts": {}, "dur": 10}},)", k,
            t + 20 * k + 1);
      }
    }
    text.back() = ']';
    return dir.Write(name, text + "}");
  };
  // 33 MB: one reader, whose share leaves about 700 KB for events (17,000 of them) after its fixed part.
  std::string small = trace("rank0.json", 5), large = trace("rank1.json", 800);  // 205 and 32,800 events (3.3 MB)
  FileSummaries limited = SummarizeFiles({small, large}, 2, {}, nullptr, size_t{33} << 20);
  ASSERT_EQ(limited.patterns.size(), 1u);
  ASSERT_EQ(limited.errors.size(), 1u);
  EXPECT_NE(limited.errors[0].find("rank1.json"), std::string::npos) << limited.errors[0];
  EXPECT_NE(limited.errors[0].find("MB of memory allowed"), std::string::npos) << limited.errors[0];
  FileSummaries free = SummarizeFiles({small, large}, 2);
  EXPECT_EQ(free.patterns.size(), 2u);
  EXPECT_TRUE(free.errors.empty());
}

// A torch 1.13 CPU trace is a bare event array that names no host; the rank's meta file beside it
// does, and ranks on one host share its processors (localize/cpu_contention.h).
TEST(SummarizeFilesTest, TheHostOfABareCpuTraceComesFromTheRanksMetaFile) {
  TempDir dir;
  std::string events = "[";
  for (int s = 0; s < 3; ++s) {
    events += fmt::format(
        R"({{"name": "ProfilerStep#{}", "ph": "X", "ts": {}, "dur": 900, "tid": 1, "pid": "CPU functions"}},)", s,
        s * 1000);
    events +=
        fmt::format(R"({{"name": "aten::mm", "ph": "X", "ts": {}, "dur": 500, "tid": 1, "pid": "CPU functions"}},)",
                    s * 1000 + 100);
  }
  events.back() = ']';
  std::string named = dir.Write("rank-1.json", events);
  dir.Write("rank-1.meta.json", R"({"rank": 1, "world_size": 2, "pid": 4530, "host": "node-7"})");
  std::string unnamed = dir.Write("rank-2.json", events);
  dir.Write("rank-2.meta.json", fmt::format(R"({{"rank": 2, "host": "{}"}})", std::string(300, 'x')));
  // A planted meta's escape sequence and newline: reports name the node on one line.
  std::string escaped = dir.Write("rank-3.json", events);
  dir.Write("rank-3.meta.json", R"({"rank": 3, "host": "node\u001b[31m\nred"})");
  FileSummaries out = SummarizeFiles({named, unnamed, escaped}, 1);
  ASSERT_EQ(out.patterns.size(), 3u);
  EXPECT_EQ(out.patterns[0].host, "node-7");
  EXPECT_EQ(out.patterns[1].host, "");  // longer than any host name: not one
  EXPECT_EQ(out.patterns[2].host, "node [31m red");
}

// A window the job's exit cut short: iteration 200 ended in it (the meta lists it), then the step
// opened at its boundary ran the loop's end and the process group's teardown until the exit
// stopped the profiler. That step is no iteration; a trace whose steps the meta does not list at
// all (another trace's meta) keeps them.
TEST(SummarizeFilesTest, AStepTheJobsExitCutShortIsNoIteration) {
  TempDir dir;
  const std::string events =
      R"([{"name": "ProfilerStep#200", "ph": "X", "ts": 0, "dur": 900, "tid": 1, "pid": "CPU functions"},)"
      R"({"name": "aten::mm", "ph": "X", "ts": 100, "dur": 500, "tid": 1, "pid": "CPU functions"},)"
      R"({"name": "ProfilerStep#201", "ph": "X", "ts": 900, "dur": 3000, "tid": 1, "pid": "CPU functions"},)"
      R"({"name": "aten::select", "ph": "X", "ts": 3800, "dur": 10, "tid": 1, "pid": "CPU functions"}])";
  std::string cut = dir.Write("rank-0.json", events);
  dir.Write("rank-0.meta.json", R"({"rank": 0, "iteration_ids": [200], "stop_reason": "exit"})");
  std::string other = dir.Write("rank-1.json", events);
  dir.Write("rank-1.meta.json", R"({"rank": 1, "iteration_ids": [7, 8]})");
  FileSummaries out = SummarizeFiles({cut, other}, 1);
  ASSERT_EQ(out.patterns.size(), 2u);
  EXPECT_EQ(out.patterns[0].step_ids, std::vector<int64_t>{200});
  EXPECT_EQ(out.patterns[0].window_ns, 900000);
  EXPECT_EQ(out.patterns[1].step_ids, (std::vector<int64_t>{200, 201}));
}

// A window the job's exit cut before any of its iterations ended holds the loop's end and the
// teardown; its rank's meta says it missed the window (python/eroica/capture.py): left out with one
// line naming the file, the other ranks summarized.
TEST(SummarizeFilesTest, ARankThatMissedTheWindowIsLeftOutWithOneLine) {
  TempDir dir;
  const std::string events =
      R"([{"name": "ProfilerStep#171", "ph": "X", "ts": 0, "dur": 27698, "tid": 1, "pid": "CPU functions"},)"
      R"({"name": "aten::empty", "ph": "X", "ts": 1, "dur": 2, "tid": 1, "pid": "CPU functions"}])";
  std::string cut = dir.Write("rank-0.json", events);
  dir.Write("rank-0.meta.json",
            R"json({"rank": 0, "iteration_ids": [], "stop_reason": "exit", "missed": "the job ended before an )json"
            R"json(iteration of the window did (at its first, 171)"})json");
  std::string took_part = dir.Write("rank-1.json", events);
  dir.Write("rank-1.meta.json", R"({"rank": 1, "iteration_ids": [171]})");
  // An older package's meta says only that the exit stopped it before an iteration ended.
  std::string older = dir.Write("rank-2.json", events);
  dir.Write("rank-2.meta.json", R"({"rank": 2, "iteration_ids": [], "stop_reason": "exit"})");
  FileSummaries out = SummarizeFiles({cut, took_part, older}, 1);
  ASSERT_EQ(out.patterns.size(), 1u);
  EXPECT_EQ(out.patterns[0].rank, 1);
  ASSERT_EQ(out.errors.size(), 2u);
  EXPECT_EQ(out.errors[1],
            older + ": its rank missed the window (the job ended before an iteration of the window did): left out");
  EXPECT_EQ(out.errors[0], cut +
                               ": its rank missed the window (the job ended before an iteration of the window did "
                               "(at its first, 171)): left out");
  // A planted meta's words stay one bounded line.
  dir.Write("rank-1.meta.json", fmt::format(R"({{"rank": 1, "missed": "a\nb\u001b[31m{}"}})", std::string(500, 'x')));
  FileSummaries planted = SummarizeFiles({took_part}, 1);
  ASSERT_EQ(planted.errors.size(), 1u);
  EXPECT_EQ(planted.errors[0].find('\n'), std::string::npos);
  EXPECT_EQ(planted.errors[0].find('\x1b'), std::string::npos);
  EXPECT_LT(planted.errors[0].size(), took_part.size() + 300);
}

}  // namespace
}  // namespace eroica
