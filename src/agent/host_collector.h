// Host-wide CPU and memory:
//   host.cpu_busy_ns  counter  all cores, from the "cpu" line of /proc/stat (capacity: cores × 1e9)
//   core.busy_ns      counter  per core ("cpu3"), from the "cpuN" lines (capacity 1e9)
//   mem.total_bytes, mem.available_bytes  gauges from /proc/meminfo
// /proc/stat is costly on large hosts (it lists every interrupt), so the agent runs this
// collector at a lower rate than the per-process one (--host-rate-hz).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "agent/collector.h"
#include "agent/error_log.h"
#include "agent/proc_file.h"
#include "agent/proc_parsers.h"

namespace eroica::agent {

class HostCollector : public Collector {
 public:
  HostCollector(const std::string& root, int64_t clock_ticks_per_s, ErrorLog* log);

  std::string_view name() const override { return "host"; }
  void Sample(int64_t now_ns) override;
  void Emit(MetricSink& sink) override;

 private:
  int64_t TicksToNs(int64_t ticks) const { return ticks * (1'000'000'000 / clock_ticks_per_s_); }

  int64_t clock_ticks_per_s_;
  ErrorLog* log_;
  ProcFile stat_;
  ProcFile meminfo_;
  int64_t last_now_ns_ = 0;
  bool cpus_ok_ = false;
  bool mem_ok_ = false;
  std::vector<CpuTimes> cpus_;
  MemInfo mem_;
  std::map<int, SeriesId> core_ids_;  // core -1 is the aggregate
  SeriesId mem_total_id_ = kNoSeries;
  SeriesId mem_available_id_ = kNoSeries;
};

}  // namespace eroica::agent
