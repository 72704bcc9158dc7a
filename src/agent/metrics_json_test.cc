#include "agent/metrics_json.h"

#include <gtest/gtest.h>

namespace eroica::agent {
namespace {

constexpr int64_t kT0 = 1'718'000'000'000'000'000;

MetricsSeries Series(SeriesInfo info, std::vector<int64_t> values) {
  MetricsSeries s;
  s.info = std::move(info);
  for (size_t i = 0; i < values.size(); ++i) s.ts_unix_ns.push_back(kT0 + static_cast<int64_t>(i) * 100'000'000);
  s.values = std::move(values);
  return s;
}

TEST(MetricsJsonTest, SummarizesEachSeries) {
  MetricsFile file;
  file.host = "gpu-node";
  file.num_cpus = 16;
  file.processes = {{4242, 1, 0}};
  file.series = {
      Series({"gpu.sm_util_pct", SeriesKind::kGauge, "pct", -1, -1, "0", "NVIDIA H200", 100}, {10, 90, 50}),
      Series({"proc.cpu_ns", SeriesKind::kCounter, "ns", 4242, -1, "", "", 0}, {0, 50'000'000, 100'000'000}),
      Series({"net.rx_bytes", SeriesKind::kCounter, "bytes", -1, -1, "eth0", "", 0}, {500, 10}),  // a reset
      Series({"gpu.sm_clock_mhz", SeriesKind::kGauge, "MHz", -1, -1, "0", "", 1980}, {}),
  };
  nlohmann::json j = MetricsFileToJson(file);
  EXPECT_EQ(j["host"], "gpu-node");
  ASSERT_EQ(j["processes"].size(), 1u);
  EXPECT_EQ(j["processes"][0]["rank"], 1);
  EXPECT_EQ(j["processes"][0]["gpu_index"], 0);
  ASSERT_EQ(j["series"].size(), 4u);
  const nlohmann::json& sm = j["series"][0];
  EXPECT_EQ(sm["name"], "gpu.sm_util_pct");
  EXPECT_EQ(sm["kind"], "gauge");
  EXPECT_EQ(sm["instance"], "0");
  EXPECT_EQ(sm["label"], "NVIDIA H200");
  EXPECT_EQ(sm["samples"], 3);
  EXPECT_EQ(sm["min"], 10);
  EXPECT_EQ(sm["max"], 90);
  EXPECT_DOUBLE_EQ(sm["mean"].get<double>(), 50.0);
  EXPECT_EQ(sm["last_unix_ns"].get<int64_t>() - sm["first_unix_ns"].get<int64_t>(), 200'000'000);
  EXPECT_FALSE(sm.contains("rate_per_s"));  // a gauge has no rate
  // 100 ms of CPU in 200 ms: half a core.
  EXPECT_DOUBLE_EQ(j["series"][1]["rate_per_s"].get<double>(), 5e8);
  EXPECT_EQ(j["series"][1]["pid"], 4242);
  EXPECT_FALSE(j["series"][2].contains("rate_per_s"));  // reset counter: no rate invented
  EXPECT_EQ(j["series"][3]["samples"], 0);
  EXPECT_FALSE(j["series"][3].contains("min"));
}

}  // namespace
}  // namespace eroica::agent
