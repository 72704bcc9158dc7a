#include "summary/utilization_stats.h"

#include <gtest/gtest.h>

#include <cmath>

namespace eroica {
namespace {

TEST(UtilizationStatsTest, TimeWeightedMeanAndSpreadOverOwnedSpans) {
  FunctionTable table;
  uint32_t allreduce = table.Intern(Category::kCommunication, HostKind::kNone, "allreduce");
  uint32_t gemm = table.Intern(Category::kCompute, HostKind::kNone, "gemm");
  // allreduce owns [0,100) and [200,300); gemm owns [100,200).
  SpanList path = {{0, 100, allreduce}, {100, 200, gemm}, {200, 300, allreduce}};
  for (const Span& s : path) table[s.function].owned_ns += s.end_ns - s.start_ns;
  // NIC: 0.8 over (0,50], 0.4 over (50,100], 0.1 over (100,300].
  ResourceSamples nic{ResourceKind::kNetwork, {0, 50, 100, 300}, {0, 0.8f, 0.4f, 0.1f}};
  AddUtilization(CriticalPath::FromSpans(path), /*has_device=*/true, {nic}, &table);
  ASSERT_TRUE(table[allreduce].mu.has_value());
  // Owned 200 ns: 50 at 0.8, 50 at 0.4, 100 at 0.1 -> mean 0.35.
  EXPECT_NEAR(*table[allreduce].mu, 0.35, 1e-6);
  double var = (50 * 0.8 * 0.8 + 50 * 0.4 * 0.4 + 100 * 0.1 * 0.1) / 200 - 0.35 * 0.35;
  EXPECT_NEAR(*table[allreduce].sigma, std::sqrt(var), 1e-6);
  EXPECT_FALSE(table[gemm].mu.has_value());  // no GPU samples: absent, not invented
}

TEST(UtilizationStatsTest, TooLittleCoverageLeavesMuAbsent) {
  FunctionTable table;
  uint32_t f = table.Intern(Category::kHost, HostKind::kPython, "loop");
  SpanList path = {{0, 1000, f}};
  table[f].owned_ns = 1000;
  AddUtilization(CriticalPath::FromSpans(path), false, {{ResourceKind::kCpu, {900, 1000}, {0, 1.0f}}}, &table);
  EXPECT_FALSE(table[f].mu.has_value());
}

TEST(UtilizationStatsTest, ResourceByCategory) {
  std::vector<ResourceSamples> all = {{ResourceKind::kCpu, {1}, {0}}, {ResourceKind::kNvlink, {1}, {0}}};
  EXPECT_EQ(ResourceFor(Category::kCompute, false, all), ResourceKind::kCpu);
  EXPECT_EQ(ResourceFor(Category::kCompute, true, all), std::nullopt);
  EXPECT_EQ(ResourceFor(Category::kCommunication, true, all), ResourceKind::kNvlink);
  EXPECT_EQ(ResourceFor(Category::kDataloader, true, all), ResourceKind::kCpu);
}

}  // namespace
}  // namespace eroica
