// Samples real processes through the real /proc: a busy one and a sleeping one must read apart.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <numeric>

#include "agent/clock.h"
#include "agent/metrics_file.h"
#include "agent/process_collector.h"
#include "agent/sampler.h"
#include "agent/utilization.h"

namespace eroica::agent {
namespace {

pid_t Spawn(bool busy) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (busy) {
      volatile uint64_t spins = 0;
      for (;;) spins = spins + 1;
    }
    for (;;) ::pause();
  }
  return pid;
}

float Mean(const std::vector<float>& values) {
  if (values.empty()) return -1;
  return std::accumulate(values.begin(), values.end(), 0.0f) / values.size();
}

TEST(RealProcessTest, TellsABusyProcessFromASleepingOne) {
  pid_t busy = Spawn(true);
  pid_t sleeping = Spawn(false);
  ASSERT_GT(busy, 0);
  ASSERT_GT(sleeping, 0);
  ErrorLog log(true);
  SampleStore store{StoreOptions{}};
  ProcessCollectorOptions options;
  options.clock_ticks_per_s = ::sysconf(_SC_CLK_TCK);
  ProcessCollector collector(options, &log);
  collector.SetProcesses({{busy, 0}, {sleeping, 1}});
  Sampler sampler("test-sampler", 10'000'000, &store);
  sampler.Add(&collector);
  int64_t start_ns = RealtimeNs();
  sampler.Start();
  ::usleep(1'500'000);
  sampler.Stop();
  ::kill(busy, SIGKILL);
  ::kill(sleeping, SIGKILL);
  ::waitpid(busy, nullptr, 0);
  ::waitpid(sleeping, nullptr, 0);

  // 150 periods in 1.5 s: each one sampled or counted as skipped (on a loaded test machine the
  // sampler runs late, and skips what it missed rather than bunching samples: 88 taken once, under
  // a parallel test run beside real training); enough of them taken for the means below.
  EXPECT_GE(sampler.ticks() + sampler.missed_ticks(), 140u);
  EXPECT_GE(sampler.ticks(), 30u);
  MetricsFile file;
  file.series = store.Snapshot(start_ns, RealtimeNs());
  auto busy_utilization = UtilizationForProcess(file, busy);
  auto sleeping_utilization = UtilizationForProcess(file, sleeping);
  ASSERT_TRUE(busy_utilization.ok());
  ASSERT_TRUE(sleeping_utilization.ok());
  ASSERT_FALSE(busy_utilization->empty());
  ASSERT_FALSE(sleeping_utilization->empty());
  const UtilizationSeries& busy_cpu = (*busy_utilization)[0];
  float busy_mean = Mean(busy_cpu.utilization);
  float sleeping_mean = Mean((*sleeping_utilization)[0].utilization);
  // What the busy loop really got (a loaded test machine may give it far less than a core):
  // its CPU time over the sampled span, from the raw counter.
  const MetricsSeries* thread = file.Find("thread.cpu_ns", busy, busy);
  ASSERT_NE(thread, nullptr);
  double got = static_cast<double>(thread->values.back() - thread->values.front()) /
               static_cast<double>(thread->ts_unix_ns.back() - thread->ts_unix_ns.front());
  EXPECT_GT(busy_mean, 0.05f) << busy_cpu.label;
  EXPECT_NEAR(busy_mean, got, 0.1) << busy_cpu.label;  // per-interval mean vs overall
  EXPECT_LT(sleeping_mean, 0.02f) << (*sleeping_utilization)[0].label;
  EXPECT_GT(busy_mean, 5 * sleeping_mean);
}

}  // namespace
}  // namespace eroica::agent
