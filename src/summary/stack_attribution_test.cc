#include "summary/stack_attribution.h"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "summary/summary_test_util.h"

namespace eroica {
namespace {

constexpr std::string_view kLoader = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";
constexpr std::string_view kWorkerLoader = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__";
constexpr std::string_view kGap =
    "(python between enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__ and aten::mm)";
constexpr int64_t kStepZeroUnixNs = 1'700'000'000'000'000'000;

// Three 1000 µs iterations of CPU training (relative clock, as CPU-only torch writes it): the
// loader [0, 100) µs, Python [100, 500), aten::mm [500, 900), Python [900, 1000).
std::string ThreeIterations() {
  std::string events;
  for (int i = 0; i < 3; ++i) {
    int t = 1000 * i;
    events += fmt::format(R"({{"name":"ProfilerStep#{}","ph":"X","ts":{},"dur":1000,"tid":1,"pid":7}},)", i, t);
    events += fmt::format(R"({{"name":"{}","ph":"X","ts":{},"dur":100,"tid":1,"pid":7}},)", kLoader, t);
    events += fmt::format(R"({{"name":"aten::mm","ph":"X","ts":{},"dur":400,"tid":1,"pid":7}},)", t + 500);
  }
  events.pop_back();
  return "[" + events + "]";
}

// A sample every 100 µs, each in the middle of the 100 µs whose code it shows. The innermost
// frames are library code (the standard library, torch in site-packages), the job's own below.
std::string SamplesJson(int64_t anchor_shift_ns) {
  std::string samples;
  for (int i = 0; i < 3; ++i) {
    for (int k = 1; k <= 10; ++k) {
      int64_t unix_ns = kStepZeroUnixNs + anchor_shift_ns + (1000 * i + 100 * k - 50) * 1000;
      int stack = k == 1 ? 0 : k <= 5 ? 1 : k <= 9 ? 2 : 3;
      samples += fmt::format("[{},{}],", unix_ns, stack);
    }
  }
  samples.pop_back();
  int64_t step_zero = kStepZeroUnixNs + anchor_shift_ns;
  std::string steps = fmt::format(R"("0":{},"1":{},"2":{})", step_zero, step_zero + 1'000'000, step_zero + 2'000'000);
  return fmt::format(R"({{"schema":"eroica.stack_samples/v2","rank":0,"hz":10000,
    "profiler_start_unix_ns":{},"step_start_unix_ns":{{{}}},
    "library_prefixes":["/usr/lib/python3.11/"],
    "frames":[["/job/train.py",80,"<module>"],["/job/data.py",12,"load"],["/job/train.py",57,"hot_loop"],
              ["/usr/lib/python3.11/random.py",300,"random"],["/job/train.py",60,"forward"],
              ["/x/site-packages/torch/nn/module.py",1190,"_call_impl"],["/job/train.py",70,"log"],
              ["<frozen importlib._bootstrap>",1,"_find"]],
    "stacks":[[1,0],[3,2,0],[5,4,0],[7,6,0]],
    "samples":[{}],"dropped":0}})",
                     kStepZeroUnixNs - 123'456'789 + anchor_shift_ns, steps, samples);
}

Summary SummarizeWithSamples(int64_t anchor_shift_ns) {
  TempDir dir;
  StatusOr<Trace> trace = ReadTrace(dir.Write("rank-0.json", ThreeIterations()));
  EXPECT_TRUE(trace.ok());
  StatusOr<StackSamples> samples = ParseStackSamples(SamplesJson(anchor_shift_ns), *trace, "rank-0.stacks.json");
  EXPECT_TRUE(samples.ok()) << samples.status().message();
  SummarizeOptions options;
  options.stack_samples = std::move(*samples);
  StatusOr<Summary> summary = Summarize(*trace, options);
  EXPECT_TRUE(summary.ok());
  return std::move(*summary);
}

const FunctionPattern* Find(const WorkerPattern& p, std::string_view name) {
  for (const FunctionPattern& f : p.functions) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

TEST(StackAttributionTest, SamplesInAProgramPointsGapsNameItsUserFrame) {
  Summary summary = SummarizeWithSamples(0);
  const FunctionPattern* gap = Find(summary.pattern, kGap);
  ASSERT_NE(gap, nullptr);
  ASSERT_EQ(gap->hot_frames.size(), 1u);
  // The innermost frame (random.py, under a library prefix) is skipped for the job's own.
  EXPECT_EQ(gap->hot_frames[0].location, "/job/train.py:57(hot_loop)");
  EXPECT_FLOAT_EQ(gap->hot_frames[0].share, 1.0F);
  const FunctionPattern* loader = nullptr;
  for (const FunctionPattern& f : summary.pattern.functions) {
    if (f.category == Category::kDataloader) loader = &f;
  }
  ASSERT_NE(loader, nullptr);
  ASSERT_FALSE(loader->hot_frames.empty());
  EXPECT_EQ(loader->hot_frames[0].location, "/job/data.py:12(load)");
  // Compute is not attributed; torch in site-packages and <frozen ...> are never a location.
  const FunctionPattern* mm = Find(summary.pattern, "aten::mm");
  ASSERT_NE(mm, nullptr);
  EXPECT_TRUE(mm->hot_frames.empty());
  for (const FunctionPattern& f : summary.pattern.functions) {
    for (const HotFrame& h : f.hot_frames) {
      EXPECT_EQ(h.location.find("site-packages"), std::string::npos) << f.name;
      EXPECT_EQ(h.location.find("frozen"), std::string::npos) << f.name;
    }
  }
}

// A sample may keep the sampler's own wait for a CPU since the sample before as a third number.
TEST(StackAttributionTest, SamplesMayKeepTheSamplersWaitForACpu) {
  TempDir dir;
  StatusOr<Trace> trace = ReadTrace(dir.Write("rank-0.json", ThreeIterations()));
  ASSERT_TRUE(trace.ok());
  auto with_samples = [](const std::string& samples) {
    std::string text = SamplesJson(0);
    size_t begin = text.find(R"("samples":[)") + 11;
    return text.substr(0, begin) + samples + text.substr(text.find("]]", begin) + 2);
  };
  std::string at = std::to_string(kStepZeroUnixNs + 50'000);
  StatusOr<StackSamples> three = ParseStackSamples(with_samples("[" + at + ",1,7000]]"), *trace, "s.json");
  ASSERT_TRUE(three.ok()) << three.status().message();
  ASSERT_EQ(three->samples.size(), 1u);
  EXPECT_EQ(three->samples[0].sampler_queued_ns, 7000);
  StatusOr<StackSamples> two = ParseStackSamples(with_samples("[" + at + ",1]]"), *trace, "s.json");
  ASSERT_TRUE(two.ok()) << two.status().message();
  EXPECT_EQ(two->samples[0].sampler_queued_ns, -1);  // not said: unknown
  std::string v1 = with_samples("[" + at + ",1]]");
  v1.replace(v1.find("stack_samples/v2"), 16, "stack_samples/v1");
  ASSERT_TRUE(ParseStackSamples(v1, *trace, "s.json").ok());  // a sampler before v2
  std::string v9 = v1;
  v9.replace(v9.find("stack_samples/v1"), 16, "stack_samples/v9");
  StatusOr<StackSamples> unknown = ParseStackSamples(v9, *trace, "s.json");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message(), "s.json: not an eroica.stack_samples/v1 or v2 file");
  std::string slow = with_samples("[" + at + ",1,7000]]");
  slow.replace(slow.find(R"("hz":10000)"), 10, R"("hz":1e-300)");
  StatusOr<StackSamples> no_rate = ParseStackSamples(slow, *trace, "s.json");
  ASSERT_TRUE(no_rate.ok()) << no_rate.status().message();
  EXPECT_EQ(no_rate->samples.size(), 1u);
  EXPECT_EQ(no_rate->hz, 0.0);  // no sampler's rate (its period would not fit the clock): unknown
  StatusOr<StackSamples> four = ParseStackSamples(with_samples("[" + at + ",1,7000,3]]"), *trace, "s.json");
  ASSERT_TRUE(four.ok()) << four.status().message();  // a later sampler's fourth number is skipped
  EXPECT_EQ(four->samples[0].sampler_queued_ns, 7000);
  for (const std::string& bad : {"[" + at + ",1,-5]]", "[" + at + "]]", "[" + at + ",1,\"x\"]]"}) {
    StatusOr<StackSamples> damaged = ParseStackSamples(with_samples(bad), *trace, "s.json");
    ASSERT_FALSE(damaged.ok()) << bad;
    EXPECT_NE(damaged.status().message().find("s.json: damaged stack samples"), std::string::npos)
        << damaged.status().message();
  }
}

TEST(StackAttributionTest, SamplesAreMovedOntoTheTracesClockByTheStepAnchors) {
  // The same samples taken 400 µs later by the host clock, with anchors that say so: the
  // profiler-start anchor is 123 ms off, so only the step anchors can place them right.
  Summary shifted = SummarizeWithSamples(400'000);
  const FunctionPattern* gap = Find(shifted.pattern, kGap);
  ASSERT_NE(gap, nullptr);
  ASSERT_FALSE(gap->hot_frames.empty());
  EXPECT_EQ(gap->hot_frames[0].location, "/job/train.py:57(hot_loop)");
  EXPECT_FLOAT_EQ(gap->hot_frames[0].share, 1.0F);
}

// Where the workers' CPU went over the whole window, not only while the training thread waited for
// them: their samples in the job's code, each one period; samples in the standard library (a
// worker waiting for indices) and outside the window count for nothing.
TEST(StackAttributionTest, TheLoaderWorkersHottestFramesOverTheWindow) {
  StackSamples samples;
  samples.hz = 1e6;  // 1 µs period
  samples.library_prefixes = {"/usr/lib/python3.11/"};
  for (int w = 0; w < 2; ++w) {
    StackSamples worker;
    worker.hz = 1e6;
    worker.library_prefixes = samples.library_prefixes;
    worker.frames = {{"/job/data.py", 30, "tokenize"},
                     {"/job/data.py", 12, "__getitem__"},
                     {"/usr/lib/python3.11/multiprocessing/queues.py", 113, "get"}};
    worker.stacks = {{0, 1}, {1}, {2}};
    // Six samples in the tokenizer, two at the item's other line, four waiting; one before the
    // window and one after it, in the tokenizer.
    for (int i = 0; i < 6; ++i) worker.samples.push_back({1000 + 10 * i, 0});
    for (int i = 0; i < 2; ++i) worker.samples.push_back({2000 + 10 * i, 1});
    for (int i = 0; i < 4; ++i) worker.samples.push_back({3000 + 10 * i, 2});
    worker.samples.insert(worker.samples.begin(), {500, 0});
    worker.samples.push_back({9000, 0});
    samples.loader_workers.push_back(std::move(worker));
  }
  std::vector<HotFrame> hot = HottestLoaderWorkerFrames(samples, 900, 5000);
  ASSERT_EQ(hot.size(), 2u);
  EXPECT_EQ(hot[0].location, "/job/data.py:30(tokenize)");
  EXPECT_FLOAT_EQ(hot[0].share, 0.75F);
  EXPECT_EQ(hot[1].location, "/job/data.py:12(__getitem__)");
  EXPECT_FLOAT_EQ(hot[1].share, 0.25F);
  EXPECT_TRUE(HottestLoaderWorkerFrames(StackSamples{}, 0, 5000).empty());  // no workers
  // A short window: one sample in the job's code names its line (a sample is what the worker
  // ran then, no neighbour's time in it).
  StackSamples one = samples;
  one.loader_workers.resize(1);
  one.loader_workers[0].samples = {{1000, 0}, {1010, 2}, {1020, 2}};
  hot = HottestLoaderWorkerFrames(one, 900, 5000);
  ASSERT_EQ(hot.size(), 1u);
  EXPECT_EQ(hot[0].location, "/job/data.py:30(tokenize)");
}

// A metrics thread beside the training loop: its samples in the job's code, weighed by how much of
// its sampled time it ran on a CPU. An idle thread asleep at a line of its own code (a heartbeat's
// sleep) is sampled as often but ran hardly any of it, so the busy thread's line comes first.
TEST(StackAttributionTest, TheOtherThreadsHottestFramesWeighedByTheirTimeOnACpu) {
  StackSamples samples;
  samples.hz = 1e6;  // 1 µs period
  samples.library_prefixes = {"/usr/lib/python3.11/"};
  auto thread = [&](const char* function, int line, int64_t cpu_ns) {
    StackSamples t;
    t.hz = 1e6;
    t.library_prefixes = samples.library_prefixes;
    t.frames = {{"/job/train.py", line, function}, {"/usr/lib/python3.11/threading.py", 320, "wait"}};
    t.stacks = {{0}, {1}};
    for (int i = 0; i < 10; ++i) t.samples.push_back({1000 + 100 * i, 0});  // 10 periods in its code
    t.samples.push_back({500, 0});                                          // before the window
    t.cpu_ns = cpu_ns;
    return t;
  };
  samples.other_threads.push_back(thread("heartbeat", 40, 500));  // ran 0.05 of its 10 sampled µs
  samples.other_threads.push_back(thread("metrics", 25, 9000));   // ran 0.9 of them
  std::vector<HotFrame> hot = HottestOtherThreadFrames(samples, 900, 5000);
  ASSERT_EQ(hot.size(), 1u);  // the heartbeat's 0.05 of the weighed time is below a hot frame's share
  EXPECT_EQ(hot[0].location, "/job/train.py:25(metrics)");
  EXPECT_NEAR(hot[0].share, 0.9 / 0.95, 1e-3);
  // Without CPU readings each sample counts a whole period, as a loader worker's does.
  for (StackSamples& t : samples.other_threads) t.cpu_ns = -1;
  hot = HottestOtherThreadFrames(samples, 900, 5000);
  ASSERT_EQ(hot.size(), 2u);
  EXPECT_FLOAT_EQ(hot[0].share, 0.5F);
  // A thread waiting in the standard library all along names nothing.
  samples.other_threads.resize(1);
  for (StackSample& s : samples.other_threads[0].samples) s.stack = 1;
  EXPECT_TRUE(HottestOtherThreadFrames(samples, 900, 5000).empty());
  EXPECT_TRUE(HottestOtherThreadFrames(StackSamples{}, 0, 5000).empty());
}

TEST(StackAttributionTest, TheTrainingThreadsLinesCountWhereverOnTheStack) {
  StackSamples samples;
  samples.hz = 1e8;  // 10 ns period
  samples.library_prefixes = {"/usr/lib/python3/dist-packages/torch/"};
  samples.frames = {
      {"/job/train.py", 90, "<module>"}, {"/job/train.py", 60, "main"},  // the training step's line
      {"/job/train.py", 75, "main"},                                     // an evaluation's call
      {"/job/model.py", 20, "forward"},  {"/usr/lib/python3/dist-packages/torch/nn/modules/conv.py", 313, "forward"},
      {"/job/train.py", 86, "run_eval"}, {"/job/rec.py", 5, "walk"}};
  // Innermost first: training's forward, the evaluation's forward (the same model line under the
  // evaluation's two lines), and a recursion that repeats a line on one stack.
  samples.stacks = {{4, 3, 1, 0}, {4, 3, 5, 2, 0}, {6, 6, 1, 0}};
  // Every 10 ns: 4 samples of training, 4 of the evaluation; one late sample after a 40 ns gap
  // (a call that kept the GIL) stands for all of it; one outside the window.
  for (int i = 0; i < 4; ++i) samples.samples.push_back({1000 + 10 * i, 0});
  for (int i = 0; i < 4; ++i) samples.samples.push_back({1040 + 10 * i, 1});
  samples.samples.push_back({1110, 2});
  samples.samples.push_back({5000, 0});
  TrainingLines sampled = TrainingThreadLines(samples, 1000, 2000);
  std::vector<CodeFrame>& lines = sampled.lines;
  // Time: training 10 (the first sample: one period) + 3 x 10, the evaluation 4 x 10, the late
  // one 40: 120 ns in all, 12 sampling periods.
  EXPECT_FLOAT_EQ(sampled.periods, 12.0F);
  auto find = [&](std::string_view location) {
    auto it = std::find_if(lines.begin(), lines.end(), [&](const CodeFrame& l) { return l.location == location; });
    return it == lines.end() ? nullptr : &*it;
  };
  ASSERT_NE(find("/job/train.py:90(<module>)"), nullptr);
  EXPECT_FLOAT_EQ(find("/job/train.py:90(<module>)")->share, 1.0F);
  EXPECT_EQ(find("/job/train.py:90(<module>)")->depth, 0u);
  EXPECT_NEAR(find("/job/model.py:20(forward)")->share, 2.0 / 3, 1e-6);  // in training and in the evaluation
  EXPECT_EQ(find("/job/model.py:20(forward)")->depth, 2u);               // its fewest frames outside
  EXPECT_NEAR(find("/job/train.py:75(main)")->share, 1.0 / 3, 1e-6);
  EXPECT_NEAR(find("/job/train.py:86(run_eval)")->share, 1.0 / 3, 1e-6);
  EXPECT_EQ(find("/job/train.py:86(run_eval)")->depth, 2u);
  EXPECT_NEAR(find("/job/rec.py:5(walk)")->share, 1.0 / 3, 1e-6);  // counted once on its stack
  EXPECT_EQ(find("/usr/lib/python3/dist-packages/torch/nn/modules/conv.py:313(forward)"), nullptr);
  EXPECT_EQ(lines.front().location, "/job/train.py:90(<module>)");  // most time first
  // At most `max_lines`, the most sampled kept.
  lines = TrainingThreadLines(samples, 1000, 2000, {}, 1).lines;
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].location, "/job/train.py:90(<module>)");
  EXPECT_TRUE(TrainingThreadLines(StackSamples{}, 0, 5000).lines.empty());
  EXPECT_EQ(TrainingThreadLines(StackSamples{}, 0, 5000).periods, 0.0F);
  // The late sample's sampler was itself queued for 30 of its 40 ns: it stands for 10, so the
  // recursion's line holds 10 of 90.
  samples.samples[8].sampler_queued_ns = 30;
  sampled = TrainingThreadLines(samples, 1000, 2000);
  EXPECT_FLOAT_EQ(sampled.periods, 9.0F);
  ASSERT_NE(find("/job/rec.py:5(walk)"), nullptr);
  EXPECT_NEAR(find("/job/rec.py:5(walk)")->share, 10.0 / 90, 1e-6);
}

// A sample taken while the thread was blocked in a collective counts toward the window and toward
// no line: waiting for a late peer at a broadcast's line is not the line's work.
TEST(StackAttributionTest, SamplesInACollectiveCountForNoLine) {
  StackSamples samples;
  samples.hz = 1e8;  // 10 ns period
  samples.frames = {{"/job/train.py", 60, "main"}, {"/job/train.py", 44, "next_batch"}};
  samples.stacks = {{0}, {1, 0}};
  for (int i = 0; i < 4; ++i) samples.samples.push_back({1000 + 10 * i, 0});
  for (int i = 0; i < 4; ++i) samples.samples.push_back({1040 + 10 * i, 1});  // at the broadcast
  auto share = [](const TrainingLines& sampled, std::string_view location) {
    for (const CodeFrame& l : sampled.lines) {
      if (l.location == location) return static_cast<double>(l.share);
    }
    return 0.0;
  };
  TrainingLines all = TrainingThreadLines(samples, 1000, 2000);
  EXPECT_NEAR(share(all, "/job/train.py:44(next_batch)"), 0.5, 1e-6);
  // Three of its four samples in the broadcast's wait, [1045, 1075): one left, and the window's
  // time unchanged.
  TrainingLines waited = TrainingThreadLines(samples, 1000, 2000, {{1005, 1008}, {1045, 1075}});
  EXPECT_FLOAT_EQ(waited.periods, all.periods);
  EXPECT_NEAR(share(waited, "/job/train.py:44(next_batch)"), 1.0 / 8, 1e-6);
  EXPECT_NEAR(share(waited, "/job/train.py:60(main)"), 5.0 / 8, 1e-6);
}

TEST(StackAttributionTest, OneLateSampleStandsForTheWholeCallThatDelayedIt) {
  // gc.collect() holds the GIL for the whole gap: the one sample after it covers it all.
  FunctionTable table;
  uint32_t gap = table.Intern(Category::kHost, HostKind::kPython, "(python between a and b)");
  uint32_t op = table.Intern(Category::kCompute, HostKind::kNone, "aten::mm");
  SpanList path = {{0, 1000, op}, {1000, 91'000, gap}, {91'000, 92'000, op}};
  StackSamples samples;
  samples.hz = 1e6;  // 1 µs period
  samples.frames = {{"/job/train.py", 57, "step"}, {"/job/train.py", 58, "step"}};
  samples.stacks = {{0}, {1}};
  samples.samples = {{999, 1}, {91'000, 0}};
  auto hot = AttributeStackSamples(samples, CriticalPath::FromSpans(path), table);
  ASSERT_EQ(hot.count(gap), 1u);
  ASSERT_EQ(hot[gap].size(), 1u);
  EXPECT_EQ(hot[gap][0].location, "/job/train.py:57(step)");
  EXPECT_EQ(hot.count(op), 0u);
}

// On busy cores the sampler waits for a CPU after its sleep while the training thread runs on: a
// late sample then stands only for the part of its delay that was not that wait.
TEST(StackAttributionTest, TheSamplersOwnWaitForACpuIsNoOnesCode) {
  FunctionTable table;
  uint32_t loop = table.Intern(Category::kHost, HostKind::kPython, "(python between a and b)");
  uint32_t after = table.Intern(Category::kHost, HostKind::kPython, "(python between b and c)");
  uint32_t op = table.Intern(Category::kCompute, HostKind::kNone, "aten::mm");
  CriticalPath path = CriticalPath::FromSpans({{0, 50'000, loop}, {50'000, 80'000, after}, {80'000, 100'000, op}});
  StackSamples samples;
  samples.hz = 1e5;  // 10 µs period
  samples.frames = {{"/job/train.py", 10, "loop"}, {"/job/train.py", 20, "forward"}};
  samples.stacks = {{0}, {1}};
  // Three on-time samples in the loop; the fourth 55 µs late, in the op, 50 µs of it queued for
  // a CPU: no sample was taken in `after`, which only the late one can stand for.
  samples.samples = {{5'000, 0, 0}, {15'000, 0, 0}, {25'000, 0, 0}, {90'000, 1, 50'000}};
  auto hot = AttributeStackSamples(samples, path, table);
  ASSERT_EQ(hot[loop].size(), 1u);
  EXPECT_EQ(hot[loop][0].location, "/job/train.py:10(loop)");
  EXPECT_FLOAT_EQ(hot[loop][0].share, 1.0F);  // the late sample was taken after the loop
  EXPECT_EQ(hot.count(after), 0u);            // all of it in the sampler's wait
  // Without the sampler's wait, the late sample took the whole of `after` (3 periods) for the
  // forward's line.
  for (StackSample& sample : samples.samples) sample.sampler_queued_ns = -1;
  hot = AttributeStackSamples(samples, path, table);
  EXPECT_FLOAT_EQ(hot[loop][0].share, 1.0F);
  ASSERT_EQ(hot[after].size(), 1u);
  EXPECT_EQ(hot[after][0].location, "/job/train.py:20(forward)");
}

// Samples on time stand for the time around them, not since the one before: a loop that ends
// just before a sample is not taken for the code the sample shows.
TEST(StackAttributionTest, OnTimeSamplesStandForTheTimeAroundThem) {
  FunctionTable table;
  uint32_t loop = table.Intern(Category::kHost, HostKind::kPython, "(python between a and b)");
  uint32_t after = table.Intern(Category::kHost, HostKind::kPython, "(python between b and c)");
  SpanList path = {{0, 30'000, loop}, {30'000, 60'000, after}};
  StackSamples samples;
  samples.hz = 1e5;  // 10 µs period: the samples below are on time
  samples.frames = {{"/job/train.py", 10, "loop"}, {"/job/train.py", 20, "forward"}};
  samples.stacks = {{0}, {1}};
  samples.samples = {{5'000, 0}, {15'000, 0}, {25'000, 0}, {35'000, 1}, {45'000, 1}, {55'000, 1}};
  auto hot = AttributeStackSamples(samples, CriticalPath::FromSpans(path), table);
  ASSERT_EQ(hot[loop].size(), 1u);
  EXPECT_EQ(hot[loop][0].location, "/job/train.py:10(loop)");  // not half the loop to forward
  EXPECT_FLOAT_EQ(hot[loop][0].share, 1.0F);
  ASSERT_EQ(hot[after].size(), 1u);
  EXPECT_EQ(hot[after][0].location, "/job/train.py:20(forward)");
}

// A loop shorter than the sampling period is sampled once or never; the samples around it name
// the line after it. A function with fewer than kMinHotFramePeriods of a line's time names none.
TEST(StackAttributionTest, ALineNeedsThreeSamplesTime) {
  FunctionTable table;
  uint32_t gap = table.Intern(Category::kHost, HostKind::kPython, "(python between a and b)");
  uint32_t op = table.Intern(Category::kCompute, HostKind::kNone, "aten::mm");
  // Five 100 µs steps: the point [0, point_us) of each, then the forward's op; a sample every
  // 10 µs (the period), on time, 9 µs into each, showing the forward's line.
  auto steps = [&](int64_t point_ns, StackSamples* samples) {
    samples->hz = 1e5;
    samples->frames = {{"/job/train.py", 10, "loop"}, {"/job/train.py", 20, "forward"}};
    samples->stacks = {{0}, {1}};
    SpanList path;
    for (int64_t t = 0; t < 500'000; t += 100'000) {
      path.push_back({t, t + point_ns, gap});
      path.push_back({t + point_ns, t + 100'000, op});
      for (int64_t k = 0; k < 10; ++k) samples->samples.push_back({t + 10'000 * k + 9'000, 1U});
    }
    return CriticalPath::FromSpans(path);
  };
  // A 5 µs loop, never sampled: 2.1 periods of the point's time at the forward's line.
  StackSamples short_loop;
  CriticalPath short_path = steps(5'000, &short_loop);
  EXPECT_EQ(AttributeStackSamples(short_loop, short_path, table).count(gap), 0u);
  // A 15 µs loop sampled once a step: 5 periods at its line, 2.4 at the forward's, which is left out.
  StackSamples long_loop;
  CriticalPath long_path = steps(15'000, &long_loop);
  for (size_t k = 0; k < long_loop.samples.size(); k += 10) long_loop.samples[k].stack = 0;
  auto hot = AttributeStackSamples(long_loop, long_path, table);
  ASSERT_EQ(hot.count(gap), 1u);
  ASSERT_EQ(hot[gap].size(), 1u);
  EXPECT_EQ(hot[gap][0].location, "/job/train.py:10(loop)");
}

// With worker processes the training thread only waits in the loader's __next__ (its samples
// name the loop's next() line); the loader's time goes to what the workers ran meanwhile, and
// an idle worker (in library code only) names nothing.
TEST(StackAttributionTest, TheLoadersTimeGoesToItsWorkerProcessesUserFrames) {
  FunctionTable table;
  uint32_t loader = table.Intern(Category::kDataloader, HostKind::kNone, std::string(kWorkerLoader));
  uint32_t gap = table.Intern(Category::kHost, HostKind::kPython, "(python between a and b)");
  SpanList path = {{0, 80'000, loader}, {80'000, 130'000, gap}};
  StackSamples samples;
  samples.hz = 1e5;  // 10 µs period
  samples.frames = {{"/job/train.py", 40, "train"}, {"/job/train.py", 44, "train"}};
  samples.stacks = {{0}, {1}};
  for (int64_t t = 10'000; t <= 130'000; t += 10'000) samples.samples.push_back({t, t <= 80'000 ? 0U : 1U});
  auto worker = [](const char* file, int line, const char* function) {
    StackSamples w;
    w.hz = 1e5;
    w.library_prefixes = {"/usr/lib/python3/dist-packages/torch/"};
    w.frames = {{file, line, function},
                {"/usr/lib/python3/dist-packages/torch/utils/data/_utils/worker.py", 300, "_worker_loop"}};
    w.stacks = {{0, 1}};
    for (int64_t t = 10'000; t <= 100'000; t += 10'000) w.samples.push_back({t, 0});
    return w;
  };
  StackSamples without_workers = samples;
  samples.loader_workers.push_back(worker("/job/data.py", 21, "__getitem__"));
  samples.loader_workers.push_back(
      worker("/usr/lib/python3/dist-packages/torch/utils/data/_utils/worker.py", 290, "_worker_loop"));  // idle
  auto hot = AttributeStackSamples(samples, CriticalPath::FromSpans(path), table);
  ASSERT_EQ(hot.count(loader), 1u);
  EXPECT_EQ(hot[loader][0].location, "/job/data.py:21(__getitem__)");
  EXPECT_FLOAT_EQ(hot[loader][0].share, 0.5F);  // one of the two workers was busy
  ASSERT_EQ(hot.count(gap), 1u);                // the host's time stays the training thread's
  EXPECT_EQ(hot[gap][0].location, "/job/train.py:44(train)");
  // Without the workers' samples the loader's time is the training loop's line.
  auto alone = AttributeStackSamples(without_workers, CriticalPath::FromSpans(path), table);
  ASSERT_EQ(alone.count(loader), 1u);
  EXPECT_EQ(alone[loader][0].location, "/job/train.py:40(train)");
  // Only idle workers: the training thread's frames again.
  StackSamples idle = without_workers;
  idle.loader_workers.push_back(
      worker("/usr/lib/python3/dist-packages/torch/utils/data/_utils/worker.py", 290, "_worker_loop"));
  auto idle_hot = AttributeStackSamples(idle, CriticalPath::FromSpans(path), table);
  ASSERT_EQ(idle_hot.count(loader), 1u);
  EXPECT_EQ(idle_hot[loader][0].location, "/job/train.py:40(train)");
}

// A sample taken after a span ended shows the code after it: a Python loop that kept the GIL
// from the sampler until the forward's first line. Where samples were taken inside a function's
// spans, only they name its line.
TEST(StackAttributionTest, OnlySamplesTakenInAPointsSpansNameItsLine) {
  FunctionTable table;
  uint32_t loop = table.Intern(Category::kHost, HostKind::kPython, "(python between a and b)");
  uint32_t op = table.Intern(Category::kCompute, HostKind::kNone, "aten::mm");
  StackSamples samples;
  samples.hz = 1e5;  // 10 µs period
  samples.frames = {{"/job/train.py", 10, "loop"}, {"/job/train.py", 20, "forward"}};
  samples.stacks = {{0}, {1}};
  // Three 100 µs steps: the loop [0, 40) µs, then the forward's op. One on-time sample in the
  // loop, then none until 5 µs into the forward, which stands for the loop's last 30 µs.
  SpanList path;
  for (int64_t t = 0; t < 300'000; t += 100'000) {
    path.push_back({t, t + 40'000, loop});
    path.push_back({t + 40'000, t + 100'000, op});
    samples.samples.push_back({t + 5'000, 0U});
    samples.samples.push_back({t + 45'000, 1U});
  }
  auto hot = AttributeStackSamples(samples, CriticalPath::FromSpans(path), table);
  ASSERT_EQ(hot.count(loop), 1u);
  ASSERT_EQ(hot[loop].size(), 1u);
  EXPECT_EQ(hot[loop][0].location, "/job/train.py:10(loop)");
  EXPECT_FLOAT_EQ(hot[loop][0].share, 1.0F);  // was 0.25, the forward's line 0.75
  // One step: the one sample in the loop (one period of its time) names it.
  samples.samples.resize(2);
  path.resize(2);
  hot = AttributeStackSamples(samples, CriticalPath::FromSpans(path), table);
  ASSERT_EQ(hot.count(loop), 1u);
  EXPECT_EQ(hot[loop][0].location, "/job/train.py:10(loop)");
}

// Workers that prefetch make their batches while the training thread computes; it may then wait
// for the hand-over alone (in library code), the workers idle. The loader's time is still their
// code's: their hottest frames over the window name it. Where the training thread ran the job's
// own code in the loader (a sampler of its own), that code names it.
TEST(StackAttributionTest, AWaitForPrefetchingWorkersIsTheirCodesTime) {
  FunctionTable table;
  uint32_t loader = table.Intern(Category::kDataloader, HostKind::kNone, std::string(kWorkerLoader));
  uint32_t op = table.Intern(Category::kCompute, HostKind::kNone, "aten::mm");
  // Three 100 µs steps: the loader [0, 40) µs, then the op; a training sample every 10 µs.
  auto training = [&](const SampledFrame& waiting_in) {
    StackSamples samples;
    samples.hz = 1e5;
    samples.library_prefixes = {"/usr/lib/python3.11/"};
    samples.frames = {waiting_in, {"/job/train.py", 40, "train"}, {"/job/train.py", 44, "train"}};
    samples.stacks = {{0, 1}, {2}};
    for (int64_t t = 5'000; t < 300'000; t += 10'000) samples.samples.push_back({t, t % 100'000 < 40'000 ? 0U : 1U});
    StackSamples worker;
    worker.hz = 1e5;
    worker.library_prefixes = {"/usr/lib/python3.11/"};
    worker.frames = {{"/job/data.py", 21, "decode"}, {"/usr/lib/python3.11/selectors.py", 415, "select"}};
    worker.stacks = {{0}, {1}};
    // Busy while the training thread computes, idle while it waits.
    for (int64_t t = 5'000; t < 300'000; t += 10'000) worker.samples.push_back({t, t % 100'000 < 40'000 ? 1U : 0U});
    samples.loader_workers.push_back(worker);
    return samples;
  };
  SpanList spans;
  for (int64_t t = 0; t < 300'000; t += 100'000) {
    spans.push_back({t, t + 40'000, loader});
    spans.push_back({t + 40'000, t + 100'000, op});
  }
  CriticalPath path = CriticalPath::FromSpans(spans);
  auto hot =
      AttributeStackSamples(training({"/usr/lib/python3.11/multiprocessing/connection.py", 378, "_recv"}), path, table);
  ASSERT_EQ(hot.count(loader), 1u);
  EXPECT_EQ(hot[loader][0].location, "/job/data.py:21(decode)");
  EXPECT_FLOAT_EQ(hot[loader][0].share, 1.0F);
  auto own = AttributeStackSamples(training({"/job/sampler.py", 9, "__iter__"}), path, table);
  ASSERT_EQ(own.count(loader), 1u);
  EXPECT_EQ(own[loader][0].location, "/job/sampler.py:9(__iter__)");
}

TEST(StackAttributionTest, LoaderWorkersAreReadFromTheFileOnTheTrainingThreadsClock) {
  TempDir dir;
  StatusOr<Trace> trace = ReadTrace(dir.Write("rank-0.json", ThreeIterations()));
  ASSERT_TRUE(trace.ok());
  std::string text = SamplesJson(0);
  std::string worker = fmt::format(
      R"({{"pid":9,"role":"dataloader worker","hz":10000,"library_prefixes":[],"frames":[["/job/data.py",21,"__getitem__"]],
          "stacks":[[0]],"samples":[[{},0],[{},0]]}})",
      kStepZeroUnixNs, kStepZeroUnixNs + 50'000);
  text.insert(text.rfind('}'), fmt::format(R"(,"loader_workers":[{}])", worker));
  StatusOr<StackSamples> samples = ParseStackSamples(text, *trace, "rank-0.stacks.json");
  ASSERT_TRUE(samples.ok()) << samples.status().message();
  ASSERT_EQ(samples->loader_workers.size(), 1u);
  ASSERT_EQ(samples->loader_workers[0].samples.size(), 2u);
  // The training thread's anchors place the worker's samples: step 0 opens at trace time 0.
  EXPECT_EQ(samples->loader_workers[0].samples[1].ts_ns - samples->loader_workers[0].samples[0].ts_ns, 50'000);
  EXPECT_EQ(samples->loader_workers[0].samples[1].ts_ns, samples->samples[0].ts_ns);
  // A damaged worker names the file and the worker.
  std::string bad = SamplesJson(0);
  bad.insert(bad.rfind('}'), R"(,"loader_workers":[{"frames":[],"stacks":[[3]],"samples":[]}])");
  StatusOr<StackSamples> damaged = ParseStackSamples(bad, *trace, "rank-0.stacks.json");
  ASSERT_FALSE(damaged.ok());
  EXPECT_NE(damaged.status().message().find("rank-0.stacks.json (a loader worker)"), std::string::npos)
      << damaged.status().message();
}

TEST(StackAttributionTest, OtherThreadsAreReadFromTheFileWithTheirCpuTime) {
  TempDir dir;
  StatusOr<Trace> trace = ReadTrace(dir.Write("rank-0.json", ThreeIterations()));
  ASSERT_TRUE(trace.ok());
  auto with_threads = [](const std::string& threads) {
    std::string text = SamplesJson(0);
    text.insert(text.rfind('}'), R"(,"other_threads":[)" + threads + "]");
    return text;
  };
  std::string thread = fmt::format(
      R"({{"name":"metrics","native_id":77,"cpu_ns":40000,"hz":10000,"library_prefixes":[],
          "frames":[["/job/train.py",140,"metrics_thread"]],"stacks":[[0]],"samples":[[{},0],[{},0]]}})",
      kStepZeroUnixNs, kStepZeroUnixNs + 50'000);
  std::string unread = thread;
  unread.erase(unread.find(R"("cpu_ns":40000,)"), 15);
  StatusOr<StackSamples> samples = ParseStackSamples(with_threads(thread + "," + unread), *trace, "rank-0.stacks.json");
  ASSERT_TRUE(samples.ok()) << samples.status().message();
  ASSERT_EQ(samples->other_threads.size(), 2u);
  EXPECT_EQ(samples->other_threads[0].cpu_ns, 40'000);
  EXPECT_EQ(samples->other_threads[1].cpu_ns, -1);                                   // not read
  EXPECT_EQ(samples->other_threads[0].samples[1].ts_ns, samples->samples[0].ts_ns);  // the training thread's clock
  // At most eight are read, as the sampler keeps.
  std::string many = thread;
  for (int i = 0; i < 10; ++i) many += "," + thread;
  StatusOr<StackSamples> bounded = ParseStackSamples(with_threads(many), *trace, "rank-0.stacks.json");
  ASSERT_TRUE(bounded.ok());
  EXPECT_EQ(bounded->other_threads.size(), 8u);
  // A damaged one names the file and the thread.
  StatusOr<StackSamples> damaged = ParseStackSamples(with_threads("7"), *trace, "rank-0.stacks.json");
  ASSERT_FALSE(damaged.ok());
  EXPECT_NE(damaged.status().message().find("rank-0.stacks.json: damaged stack samples: an entry of other_threads"),
            std::string::npos)
      << damaged.status().message();
}

// The training process's CPU reading, its loader workers' summed in (a worker without samples
// still ran in the window); a reading without a core count, or with absurd figures, is none.
TEST(StackAttributionTest, CpuReadingsOfTheProcessAndItsLoaderWorkersAreRead) {
  TempDir dir;
  StatusOr<Trace> trace = ReadTrace(dir.Write("rank-0.json", ThreeIterations()));
  ASSERT_TRUE(trace.ok());
  auto with = [](std::string text, const std::string& fields) {
    text.insert(text.rfind('}'), fields);
    return text;
  };
  const std::string worker_cpu =
      R"({"frames":[],"stacks":[],"samples":[],"cpu":{"cpus":2,"process_cpu":0.25,"run_delay":0.5}})";
  std::string text = with(
      SamplesJson(0),
      R"(,"cpu":{"cpus":2,"host_busy":0.97,"process_cpu":0.5,"run_delay":0.75,"throttled":0.25,"main_cpu":0.3,"main_run_delay":0.4})"
      R"(,"loader_workers":[)" +
          worker_cpu + "," + worker_cpu + "]");
  StatusOr<StackSamples> samples = ParseStackSamples(text, *trace, "rank-0.stacks.json");
  ASSERT_TRUE(samples.ok()) << samples.status().message();
  ASSERT_TRUE(samples->cpu.has_value());
  EXPECT_FLOAT_EQ(samples->cpu->cpus, 2);
  EXPECT_FLOAT_EQ(samples->cpu->host_busy, 0.97f);
  EXPECT_FLOAT_EQ(samples->cpu->run_delay, 0.75f);
  EXPECT_FLOAT_EQ(samples->cpu->loader_cpu, 0.5f);
  EXPECT_FLOAT_EQ(samples->cpu->loader_run_delay, 1.0f);
  EXPECT_FLOAT_EQ(samples->cpu->throttled, 0.25f);
  EXPECT_FLOAT_EQ(samples->cpu->main_cpu, 0.3f);
  EXPECT_FLOAT_EQ(samples->cpu->main_run_delay, 0.4f);
  EXPECT_TRUE(samples->loader_workers.empty());  // no samples: nothing to attribute
  EXPECT_LT(samples->cpu->loader_asleep, 0.0f);  // nor to tell sleep from waiting for indices

  for (const char* bad : {R"(,"cpu":{"host_busy":0.9})", R"(,"cpu":[1,2])", R"(,"cpu":{"cpus":1e300})"}) {
    StatusOr<StackSamples> none = ParseStackSamples(with(SamplesJson(0), bad), *trace, "rank-0.stacks.json");
    ASSERT_TRUE(none.ok()) << bad;
    EXPECT_FALSE(none->cpu.has_value()) << bad;
  }
  StatusOr<StackSamples> odd = ParseStackSamples(
      with(SamplesJson(0), R"(,"cpu":{"cpus":2,"host_busy":7,"run_delay":-3,"process_cpu":"x"})"), *trace, "r");
  ASSERT_TRUE(odd.ok() && odd->cpu.has_value());
  EXPECT_FLOAT_EQ(odd->cpu->host_busy, 1.0f);
  EXPECT_FLOAT_EQ(odd->cpu->run_delay, 0.0f);
  EXPECT_FLOAT_EQ(odd->cpu->process_cpu, 0.0f);
  EXPECT_LT(odd->cpu->throttled, 0.0f);  // not read: unknown, never "not throttled"
  EXPECT_LT(odd->cpu->main_cpu, 0.0f);
}

// A worker's batch-making thread, read on its own, is the loader's figure (its watcher thread
// queues too); what that thread's samples spent making batches beyond its time on a CPU and
// queued, it slept.
TEST(StackAttributionTest, LoaderWorkersAreReadByTheThreadThatMakesBatches) {
  TempDir dir;
  StatusOr<Trace> trace = ReadTrace(dir.Write("rank-0.json", ThreeIterations()));
  ASSERT_TRUE(trace.ok());
  std::string worker = fmt::format(
      R"({{"hz":100,"library_prefixes":[],"frames":[["/job/data.py",21,"__getitem__"],["/t/_utils/fetch.py",58,"fetch"],)"
      R"(["/t/_utils/worker.py",302,"_worker_loop"]],"stacks":[[0,1,2]],"samples":[[{},0],[{},0],[{},0]],)"
      R"("cpu":{{"cpus":2,"process_cpu":0.2,"run_delay":0.9,"main_cpu":0.1,"main_run_delay":0.3}}}})",
      kStepZeroUnixNs, kStepZeroUnixNs + 10'000'000, kStepZeroUnixNs + 20'000'000);
  auto with_workers = [](const std::string& first, const std::string& second) {
    std::string text = SamplesJson(0);
    text.insert(text.rfind('}'), R"(,"cpu":{"cpus":2,"host_busy":0.9,"process_cpu":0.5,"run_delay":0.75})"
                                 R"(,"loader_workers":[)" +
                                     first + "," + second + "]");
    return text;
  };
  StatusOr<StackSamples> samples = ParseStackSamples(with_workers(worker, worker), *trace, "rank-0.stacks.json");
  ASSERT_TRUE(samples.ok()) << samples.status().message();
  ASSERT_TRUE(samples->cpu.has_value());
  EXPECT_FLOAT_EQ(samples->cpu->loader_cpu, 0.2f);
  EXPECT_FLOAT_EQ(samples->cpu->loader_run_delay, 0.6f);
  EXPECT_FLOAT_EQ(samples->cpu->loader_asleep, 1.2f);  // each fetched all along: 1 - 0.1 - 0.3
  EXPECT_FLOAT_EQ(samples->cpu->loader_making, 2.0f);
  // A worker read but not sampled leaves both unknown: the sum would be short of it.
  std::string unsampled =
      R"({"frames":[],"stacks":[],"samples":[],"cpu":{"cpus":2,"process_cpu":0.2,"run_delay":0.9}})";
  StatusOr<StackSamples> short_one = ParseStackSamples(with_workers(worker, unsampled), *trace, "rank-0.stacks.json");
  ASSERT_TRUE(short_one.ok() && short_one->cpu.has_value());
  EXPECT_FLOAT_EQ(short_one->cpu->loader_run_delay, 1.2f);
  EXPECT_LT(short_one->cpu->loader_asleep, 0.0f);
  EXPECT_LT(short_one->cpu->loader_making, 0.0f);
}

TEST(StackAttributionTest, NoAnchorForARelativeClockIsAnError) {
  TempDir dir;
  StatusOr<Trace> trace = ReadTrace(dir.Write("rank-0.json", ThreeIterations()));
  ASSERT_TRUE(trace.ok());
  std::string bare =
      R"({"schema":"eroica.stack_samples/v1","library_prefixes":[],"frames":[],"stacks":[],"samples":[]})";
  StatusOr<StackSamples> samples = ParseStackSamples(bare, *trace, "rank-0.stacks.json");
  ASSERT_FALSE(samples.ok());
  EXPECT_NE(samples.status().message().find("anchors"), std::string::npos);
  EXPECT_FALSE(ParseStackSamples("{\"schema\":\"other\"}", *trace, "x").ok());
}

}  // namespace
}  // namespace eroica
