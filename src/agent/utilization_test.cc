#include "agent/utilization.h"

#include <gtest/gtest.h>

namespace eroica::agent {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kT0 = 1'718'000'000'000'000'000;

MetricsSeries Series(SeriesInfo info, std::vector<int64_t> values, int64_t step_ns = 10 * kMs) {
  MetricsSeries series;
  series.info = std::move(info);
  for (size_t i = 0; i < values.size(); ++i) {
    series.ts_unix_ns.push_back(kT0 + static_cast<int64_t>(i) * step_ns);
  }
  series.values = std::move(values);
  return series;
}

MetricsSeries SmUtil(const std::string& gpu, std::vector<int64_t> pct) {
  return Series({"gpu.sm_util_pct", SeriesKind::kGauge, "pct", -1, -1, gpu, "", 100}, std::move(pct));
}

const UtilizationSeries* Get(const std::vector<UtilizationSeries>& all, ResourceKind resource) {
  for (const UtilizationSeries& series : all) {
    if (series.resource == resource) return &series;
  }
  return nullptr;
}

TEST(UtilizationTest, UnknownProcessIsAnError) {
  MetricsFile file;
  file.series = {SmUtil("0", {1, 2})};
  EXPECT_FALSE(UtilizationForProcess(file, 77).ok());
}

TEST(UtilizationTest, CpuCapsThreadsAndSkipsCounterResets) {
  MetricsFile file;
  // 10 ms steps: thread 1 runs 5 ms, then 20 ms (capped to 1 core), then its counter resets.
  file.series = {
      Series({"thread.cpu_ns", SeriesKind::kCounter, "ns", 9, 1}, {0, 5 * kMs, 25 * kMs, 0}),
      Series({"thread.cpu_ns", SeriesKind::kCounter, "ns", 9, 2}, {0, 10 * kMs, 20 * kMs, 30 * kMs}),
  };
  auto result = UtilizationForProcess(file, 9);
  ASSERT_TRUE(result.ok());
  const UtilizationSeries* cpu = Get(*result, ResourceKind::kCpu);
  ASSERT_NE(cpu, nullptr);
  ASSERT_EQ(cpu->utilization.size(), 3u);
  EXPECT_FLOAT_EQ(cpu->utilization[0], (0.5f + 1.0f) / 2);
  EXPECT_FLOAT_EQ(cpu->utilization[1], (1.0f + 1.0f) / 2);
  EXPECT_FLOAT_EQ(cpu->utilization[2], (0.0f + 1.0f) / 2);  // thread 1's reset skipped
  EXPECT_EQ(cpu->ts_unix_ns[0], kT0 + 10 * kMs);
}

// A sampler preempted between its timestamp and its read books a busy thread's CPU time into
// the wrong interval (1.6 cores, then 0.4): carried over, it still reads one busy core, where
// capping each interval would read 0.7.
TEST(UtilizationTest, LateReadingsOfABusyThreadStillReadBusy) {
  MetricsFile file;
  file.series = {Series({"thread.cpu_ns", SeriesKind::kCounter, "ns", 9, 1},
                        {0, 16 * kMs, 20 * kMs, 36 * kMs, 40 * kMs, 45 * kMs})};
  auto result = UtilizationForProcess(file, 9);
  ASSERT_TRUE(result.ok());
  const UtilizationSeries* cpu = Get(*result, ResourceKind::kCpu);
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->utilization, (std::vector<float>{1.0f, 1.0f, 1.0f, 1.0f, 0.5f}));
}

TEST(UtilizationTest, CpuFallsBackToTheProcessTotal) {
  MetricsFile file;
  file.series = {Series({"proc.cpu_ns", SeriesKind::kCounter, "ns", 9}, {0, 5 * kMs, 35 * kMs})};
  auto result = UtilizationForProcess(file, 9);
  ASSERT_TRUE(result.ok());
  const UtilizationSeries* cpu = Get(*result, ResourceKind::kCpu);
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->utilization, (std::vector<float>{0.5f, 1.0f}));
}

TEST(UtilizationTest, GpuOfProcessRules) {
  MetricsFile file;
  file.series = {SmUtil("0", {10, 10}), SmUtil("1", {20, 20}), SmUtil("2", {30, 30})};
  // Explicit index wins.
  file.processes = {{100, 5, 2}, {101, 4, -1}, {102, 3, -1}};
  auto explicit_gpu = UtilizationForProcess(file, 100);
  ASSERT_TRUE(explicit_gpu.ok());
  EXPECT_FLOAT_EQ(Get(*explicit_gpu, ResourceKind::kGpuSm)->utilization[0], 0.3f);
  // Three ranks, three GPUs: by rank order (3 → GPU 0, 4 → GPU 1, 5 → GPU 2).
  file.processes = {{100, 5, -1}, {101, 4, -1}, {102, 3, -1}};
  auto by_rank = UtilizationForProcess(file, 101);
  ASSERT_TRUE(by_rank.ok());
  EXPECT_FLOAT_EQ(Get(*by_rank, ResourceKind::kGpuSm)->utilization[0], 0.2f);
  // Counts differ: no guess.
  file.processes = {{100, 5, -1}, {101, 4, -1}};
  auto unknown = UtilizationForProcess(file, 101);
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ(Get(*unknown, ResourceKind::kGpuSm), nullptr);
  // A single GPU is everyone's.
  file.series = {SmUtil("0", {50, 70})};
  auto single = UtilizationForProcess(file, 101);
  ASSERT_TRUE(single.ok());
  EXPECT_EQ(Get(*single, ResourceKind::kGpuSm)->utilization, (std::vector<float>{0.5f, 0.7f}));
}

TEST(UtilizationTest, PcieGaugesAndPeakNormalisation) {
  MetricsFile file;
  file.processes = {{100, 0, 0}};
  file.series = {
      Series({"gpu.pcie_tx_kbps", SeriesKind::kGauge, "KiB/s", -1, -1, "0", "", 1000}, {250, 500}),
      Series({"gpu.pcie_rx_kbps", SeriesKind::kGauge, "KiB/s", -1, -1, "0", "", 1000}, {750, 100}),
      Series({"gpu.nvlink_tx_kib", SeriesKind::kCounter, "KiB", -1, -1, "0"}, {0, 10, 40}),
  };
  auto result = UtilizationForProcess(file, 100);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(Get(*result, ResourceKind::kPcie)->utilization, (std::vector<float>{0.75f, 0.5f}));
  // No NVLink capacity: scaled by its own peak (3000 KiB/s).
  const UtilizationSeries* nvlink = Get(*result, ResourceKind::kNvlink);
  ASSERT_NE(nvlink, nullptr);
  EXPECT_FLOAT_EQ(nvlink->utilization[0], 1.0f / 3);
  EXPECT_FLOAT_EQ(nvlink->utilization[1], 1.0f);
  EXPECT_NE(nvlink->label.find("peak"), std::string::npos);
}

// Found by metrics_file_fuzzer: counter steps in a damaged file overflowed int64 (UB, caught by
// UBSan). A step that does not fit is a reset.
TEST(UtilizationTest, CounterStepsThatOverflowAreResets) {
  MetricsFile file;
  MetricsSeries thread =
      Series({"thread.cpu_ns", SeriesKind::kCounter, "ns", 9, 1}, {INT64_MIN + 5, INT64_MAX - 5, 0, 10 * kMs});
  thread.ts_unix_ns = {INT64_MIN + 1, INT64_MAX - 1, INT64_MAX, INT64_MIN};
  MetricsSeries process =
      Series({"proc.cpu_ns", SeriesKind::kCounter, "ns", 9, -1}, {INT64_MIN, INT64_MAX, INT64_MIN, INT64_MAX});
  file.series = {thread, process};
  auto result = UtilizationForProcess(file, 9);
  ASSERT_TRUE(result.ok());
  for (const UtilizationSeries& s : *result) {
    for (float u : s.utilization) EXPECT_TRUE(u >= 0 && u <= 1) << u;
  }
}

}  // namespace
}  // namespace eroica::agent
