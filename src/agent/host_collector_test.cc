#include "agent/host_collector.h"

#include <gtest/gtest.h>

#include "agent/test_util.h"
#include "base/temp_dir.h"

namespace eroica::agent {
namespace {

using testing::FindSeries;
using testing::WriteInPlace;

constexpr int64_t kT0 = 1'718'000'000'000'000'000;

TEST(HostCollectorTest, PerCoreBusyTimeAndMemory) {
  TempDir root;
  WriteInPlace(root.path() + "/proc/stat",
               "cpu  30 0 10 100 0 0 0 0 0 0\ncpu0 20 0 5 50 0 0 0 0 0 0\n"
               "cpu1 10 0 5 50 0 0 0 0 0 0\nintr 1\n");
  WriteInPlace(root.path() + "/proc/meminfo", "MemTotal: 1000 kB\nMemAvailable: 250 kB\n");
  ErrorLog log(true);
  SampleStore store{StoreOptions{}};
  HostCollector collector(root.path(), 100, &log);
  testing::Tick(&store, {&collector}, kT0);
  std::vector<MetricsSeries> all = store.Snapshot(kT0, kT0);
  const MetricsSeries* core0 = FindSeries(all, "core.busy_ns", -1, -1, "cpu0");
  ASSERT_NE(core0, nullptr);
  EXPECT_EQ(core0->values[0], 25 * 10'000'000);
  EXPECT_EQ(core0->info.capacity, 1'000'000'000);
  const MetricsSeries* total = FindSeries(all, "host.cpu_busy_ns", -1, -1, "cpu");
  ASSERT_NE(total, nullptr);
  EXPECT_EQ(total->values[0], 40 * 10'000'000);
  EXPECT_EQ(total->info.capacity, 2'000'000'000);
  const MetricsSeries* available = FindSeries(all, "mem.available_bytes");
  ASSERT_NE(available, nullptr);
  EXPECT_EQ(available->values[0], 250 * 1024);
}

TEST(HostCollectorTest, MissingFilesAreLoggedOnceNotFatal) {
  TempDir root;
  ErrorLog log(true);
  SampleStore store{StoreOptions{}};
  HostCollector collector(root.path(), 100, &log);
  for (int i = 0; i < 5; ++i) testing::Tick(&store, {&collector}, kT0 + i);
  EXPECT_EQ(log.count("host-stat"), 5u);
  EXPECT_EQ(store.Stats().series, 0u);
}

}  // namespace
}  // namespace eroica::agent
