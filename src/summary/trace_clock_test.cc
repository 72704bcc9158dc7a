#include "summary/trace_clock.h"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/temp_dir.h"
#include "trace/reader.h"

namespace eroica {
namespace {

// One ProfilerStep#3 at `ts_us`, drawn on the CPU and (as GPU traces do) on the device, 5 µs
// earlier there: taken for an anchor, it would move the offset by +5 µs.
Trace StepAt(int64_t ts_us) {
  TempDir dir;
  std::string json = fmt::format(R"({{"traceEvents":[
    {{"name":"ProfilerStep#3","ph":"X","cat":"user_annotation","ts":{},"dur":10,"pid":1,"tid":1}},
    {{"name":"ProfilerStep#3","ph":"X","cat":"gpu_user_annotation","ts":{},"dur":10,"pid":0,"tid":7}}]}})",
                                 ts_us, ts_us - 5);
  StatusOr<Trace> trace = ReadTrace(dir.Write("rank-0.json", json));
  EXPECT_TRUE(trace.ok()) << trace.status().message();
  return std::move(*trace);
}

TEST(TraceClockTest, StepAnchorsWinOverEveryOtherClue) {
  Trace absolute = StepAt(1'700'000'000'000'000);  // epoch µs: Kineto's clock
  nlohmann::json anchors = {{"step_start_unix_ns", {{"3", 1'700'000'000'000'250'000}}}, {"profiler_start_unix_ns", 1}};
  EXPECT_EQ(UnixClockOffset(absolute, &anchors), 250'000);  // the CPU range, not the device's
  EXPECT_EQ(UnixClockOffset(absolute, nullptr), 0);
  Trace relative = StepAt(2000);
  nlohmann::json start_only = {{"profiler_start_unix_ns", 1'000'000}};
  EXPECT_EQ(UnixClockOffset(relative, &start_only), 1'000'000);
  EXPECT_EQ(UnixClockOffset(relative, &anchors), 1'700'000'000'000'250'000 - 2'000'000);
  EXPECT_FALSE(UnixClockOffset(relative, nullptr).has_value());
}

}  // namespace
}  // namespace eroica
