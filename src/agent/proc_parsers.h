// Parsers for the /proc text formats the collectors read. Pure functions over text, so the
// tests feed them strings; each returns false on text it cannot read.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace eroica::agent {

// Parses a leading decimal integer (optional '-'), skipping leading spaces.
bool ParseInt64(std::string_view text, int64_t* value);

// /proc/<pid>/stat and /proc/<pid>/task/<tid>/stat (man 5 proc). The command name sits in
// parentheses and may itself contain spaces and ')', so fields are counted from the last ')'.
struct ProcStat {
  std::string comm;
  int64_t utime_ticks = 0;       // field 14
  int64_t stime_ticks = 0;       // field 15
  int64_t num_threads = 0;       // field 20
  int64_t start_time_ticks = 0;  // field 22, since boot
  int64_t rss_pages = 0;         // field 24
};
bool ParseProcStat(std::string_view text, ProcStat* stat);

// /proc/<pid>/task/<tid>/schedstat: "<on-cpu ns> <run-queue wait ns> <timeslices>".
bool ParseSchedstat(std::string_view text, int64_t* on_cpu_ns);

// The "cpu" and "cpuN" lines of /proc/stat, in ticks. Busy = user + nice + system + irq +
// softirq + steal (guest time is already inside user); total adds idle and iowait.
struct CpuTimes {
  int core = -1;  // -1 for the aggregate "cpu" line
  int64_t busy_ticks = 0;
  int64_t total_ticks = 0;
};
bool ParseProcStatCpus(std::string_view text, std::vector<CpuTimes>* cpus);
// The "btime" line of /proc/stat: boot time, unix seconds; -1 when absent.
int64_t ParseBootTimeSeconds(std::string_view text);

// /proc/meminfo values in bytes; -1 when a line is missing.
struct MemInfo {
  int64_t total_bytes = -1;
  int64_t available_bytes = -1;
};
bool ParseMeminfo(std::string_view text, MemInfo* info);

}  // namespace eroica::agent
