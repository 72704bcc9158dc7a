#include "agent/proc_parsers.h"

#include <gtest/gtest.h>

#include "agent/test_util.h"

namespace eroica::agent {
namespace {

TEST(ProcParsersTest, ProcStatWithAwkwardCommandName) {
  ProcStat stat;
  ASSERT_TRUE(ParseProcStat(testing::StatLine(42, "py (worker) 3", 120, 30, 777, 2048), &stat));
  EXPECT_EQ(stat.comm, "py (worker) 3");
  EXPECT_EQ(stat.utime_ticks, 120);
  EXPECT_EQ(stat.stime_ticks, 30);
  EXPECT_EQ(stat.num_threads, 1);
  EXPECT_EQ(stat.start_time_ticks, 777);
  EXPECT_EQ(stat.rss_pages, 2048);
  EXPECT_FALSE(ParseProcStat("42 (cut", &stat));
  EXPECT_FALSE(ParseProcStat("42 (x) R 1 2", &stat));
  EXPECT_FALSE(ParseProcStat("", &stat));
}

TEST(ProcParsersTest, ProcStatCpuLinesAndBootTime) {
  std::string text =
      "cpu  100 5 50 1000 10 2 3 4 0 0\n"
      "cpu0 60 5 25 500 5 1 2 2 0 0\n"
      "cpu1 40 0 25 500 5 1 1 2 0 0\n"
      "intr 12345 0 1 2\n"
      "btime 1718000000\n";
  std::vector<CpuTimes> cpus;
  ASSERT_TRUE(ParseProcStatCpus(text, &cpus));
  ASSERT_EQ(cpus.size(), 3u);
  EXPECT_EQ(cpus[0].core, -1);
  EXPECT_EQ(cpus[0].busy_ticks, 100 + 5 + 50 + 2 + 3 + 4);
  EXPECT_EQ(cpus[0].total_ticks, 164 + 1000 + 10);
  EXPECT_EQ(cpus[2].core, 1);
  EXPECT_EQ(cpus[2].busy_ticks, 40 + 25 + 1 + 1 + 2);
  EXPECT_EQ(ParseBootTimeSeconds(text), 1718000000);
  EXPECT_EQ(ParseBootTimeSeconds("cpu 1 2 3 4\n"), -1);
  EXPECT_FALSE(ParseProcStatCpus("intr 1 2\n", &cpus));
}

TEST(ProcParsersTest, MeminfoAndSchedstat) {
  MemInfo info;
  ASSERT_TRUE(ParseMeminfo("MemTotal:       16384 kB\nMemFree: 1 kB\nMemAvailable:    8192 kB\n", &info));
  EXPECT_EQ(info.total_bytes, 16384 * 1024);
  EXPECT_EQ(info.available_bytes, 8192 * 1024);
  int64_t on_cpu_ns = 0;
  ASSERT_TRUE(ParseSchedstat("123456789 555 7\n", &on_cpu_ns));
  EXPECT_EQ(on_cpu_ns, 123456789);
  EXPECT_FALSE(ParseSchedstat("", &on_cpu_ns));
}

}  // namespace
}  // namespace eroica::agent
