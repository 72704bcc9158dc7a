#include "agent/process_collector.h"

#include <gtest/gtest.h>

#include "agent/metrics_file.h"
#include "agent/test_util.h"
#include "agent/utilization.h"
#include "base/temp_dir.h"

namespace eroica::agent {
namespace {

using testing::FindSeries;
using testing::StatLine;
using testing::WriteInPlace;

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kT0 = 1'718'000'000'000'000'000;

class ProcessCollectorTest : public ::testing::Test {
 protected:
  void WriteProcess(int64_t utime, int64_t stime, int64_t rss_pages) {
    WriteInPlace(root_.path() + "/proc/100/stat", StatLine(100, "python", utime, stime, 5, rss_pages));
  }
  void WriteThread(int64_t tid, const std::string& comm, int64_t utime, int64_t stime) {
    WriteInPlace(root_.path() + "/proc/100/task/" + std::to_string(tid) + "/stat", StatLine(tid, comm, utime, stime));
  }
  ProcessCollectorOptions Options() {
    ProcessCollectorOptions options;
    options.root = root_.path();
    options.clock_ticks_per_s = 100;
    options.page_size_bytes = 4096;
    options.thread_rescan_every_n = 1;
    options.process_every_n = 1;
    return options;
  }

  TempDir root_;
  ErrorLog log_{/*quiet=*/true};
  SampleStore store_{StoreOptions{}};
};

TEST_F(ProcessCollectorTest, ProcessAndThreadCpuExactly) {
  WriteProcess(100, 50, 1000);
  WriteThread(100, "python", 60, 40);
  WriteThread(101, "pt_autograd_0", 0, 0);
  WriteThread(102, "idle", 7, 3);
  ProcessCollector collector(Options(), &log_);
  collector.SetProcesses({{100, 3}});
  testing::Tick(&store_, {&collector}, kT0);
  // One second later: the main thread used half a core, the autograd thread a whole one.
  WriteProcess(200, 100, 1500);
  WriteThread(100, "python", 90, 60);
  WriteThread(101, "pt_autograd_0", 80, 20);
  testing::Tick(&store_, {&collector}, kT0 + kSecond);
  EXPECT_EQ(collector.tracked_threads(), 3u);

  std::vector<MetricsSeries> all = store_.Snapshot(kT0, kT0 + kSecond);
  const MetricsSeries* process = FindSeries(all, "proc.cpu_ns", 100);
  ASSERT_NE(process, nullptr);
  EXPECT_EQ(process->values, (std::vector<int64_t>{1'500'000'000, 3'000'000'000}));
  const MetricsSeries* rss = FindSeries(all, "proc.rss_bytes", 100);
  ASSERT_NE(rss, nullptr);
  EXPECT_EQ(rss->values, (std::vector<int64_t>{1000 * 4096, 1500 * 4096}));
  const MetricsSeries* autograd = FindSeries(all, "thread.cpu_ns", 100, 101);
  ASSERT_NE(autograd, nullptr);
  EXPECT_EQ(autograd->info.label, "pt_autograd_0");
  EXPECT_EQ(autograd->values, (std::vector<int64_t>{0, 1'000'000'000}));

  MetricsFile file;
  file.series = all;
  file.processes = {{100, 3, -1}};
  auto utilization = UtilizationForProcess(file, 100);
  ASSERT_TRUE(utilization.ok()) << utilization.status().message();
  ASSERT_EQ(utilization->size(), 1u);
  const UtilizationSeries& cpu = (*utilization)[0];
  EXPECT_EQ(cpu.resource, ResourceKind::kCpu);
  ASSERT_EQ(cpu.utilization.size(), 1u);
  // Threads 100 (0.5) and 101 (1.0) are active, 102 did nothing: (0.5 + 1.0) / 2.
  EXPECT_FLOAT_EQ(cpu.utilization[0], 0.75f);
  EXPECT_EQ(cpu.ts_unix_ns[0], kT0 + kSecond);
  auto only_main = UtilizationForProcess(file, 100, {100});
  ASSERT_TRUE(only_main.ok());
  EXPECT_FLOAT_EQ((*only_main)[0].utilization[0], 0.5f);
}

TEST_F(ProcessCollectorTest, PrefersSchedstatWhenTheKernelFillsIt) {
  WriteProcess(10, 0, 1);
  WriteThread(100, "python", 10, 0);
  WriteInPlace(root_.path() + "/proc/100/task/100/schedstat", "123456789 0 4\n");
  ProcessCollector collector(Options(), &log_);
  collector.SetProcesses({{100, 0}});
  testing::Tick(&store_, {&collector}, kT0);
  WriteInPlace(root_.path() + "/proc/100/task/100/schedstat", "223456789 0 9\n");
  testing::Tick(&store_, {&collector}, kT0 + kSecond);
  std::vector<MetricsSeries> all = store_.Snapshot(kT0, kT0 + kSecond);
  const MetricsSeries* thread = FindSeries(all, "thread.cpu_ns", 100, 100);
  ASSERT_NE(thread, nullptr);
  EXPECT_EQ(thread->values, (std::vector<int64_t>{123456789, 223456789}));
}

TEST_F(ProcessCollectorTest, ThreadsAndProcessesComeAndGo) {
  WriteProcess(10, 0, 1);
  WriteThread(100, "python", 10, 0);
  WriteThread(101, "worker", 0, 0);
  ProcessCollector collector(Options(), &log_);
  collector.SetProcesses({{100, 0}, {999, 1}});  // 999 does not exist
  testing::Tick(&store_, {&collector}, kT0);
  EXPECT_EQ(collector.tracked_threads(), 2u);
  std::filesystem::remove_all(root_.path() + "/proc/100/task/101");
  testing::Tick(&store_, {&collector}, kT0 + kSecond);
  EXPECT_EQ(collector.tracked_threads(), 1u);
  std::filesystem::remove_all(root_.path() + "/proc/100");
  testing::Tick(&store_, {&collector}, kT0 + 2 * kSecond);
  EXPECT_EQ(collector.tracked_threads(), 0u);
  // Their history stays until it ages out; then the released series are freed.
  std::vector<MetricsSeries> first = store_.Snapshot(kT0, kT0);
  EXPECT_NE(FindSeries(first, "thread.cpu_ns", 100, 101), nullptr);
  store_.CollectGarbage(kT0 + 1000 * kSecond);
  for (const MetricsSeries& series : store_.Snapshot(0, INT64_MAX)) {
    ADD_FAILURE() << "still held: " << series.info.name << " " << series.info.tid;
  }
  EXPECT_EQ(store_.Stats().series, 0u);
}

}  // namespace
}  // namespace eroica::agent
