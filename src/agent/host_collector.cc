#include "agent/host_collector.h"

#include <fmt/format.h>

namespace eroica::agent {

HostCollector::HostCollector(const std::string& root, int64_t clock_ticks_per_s, ErrorLog* log)
    : clock_ticks_per_s_(clock_ticks_per_s > 0 ? clock_ticks_per_s : 100),
      log_(log),
      stat_(root + "/proc/stat"),
      meminfo_(root + "/proc/meminfo") {}

void HostCollector::Sample(int64_t now_ns) {
  last_now_ns_ = now_ns;
  cpus_ok_ = stat_.Read() && ParseProcStatCpus(stat_.contents(), &cpus_);
  if (!cpus_ok_) log_->Report("host-stat", fmt::format("cannot read {}", stat_.path()));
  mem_ = MemInfo();
  mem_ok_ = meminfo_.Read() && ParseMeminfo(meminfo_.contents(), &mem_);
  if (!mem_ok_) log_->Report("host-meminfo", fmt::format("cannot read {}", meminfo_.path()));
}

void HostCollector::Emit(MetricSink& sink) {
  if (cpus_ok_) {
    int64_t cores = 0;
    for (const CpuTimes& cpu : cpus_) cores += cpu.core >= 0 ? 1 : 0;
    for (const CpuTimes& cpu : cpus_) {
      auto [it, inserted] = core_ids_.try_emplace(cpu.core, kNoSeries);
      if (it->second == kNoSeries) {
        it->second = cpu.core < 0 ? sink.Register({"host.cpu_busy_ns", SeriesKind::kCounter, "ns", -1, -1, "cpu", "",
                                                   cores * 1'000'000'000})
                                  : sink.Register({"core.busy_ns", SeriesKind::kCounter, "ns", -1, -1,
                                                   fmt::format("cpu{}", cpu.core), "", 1'000'000'000});
      }
      sink.Record(it->second, last_now_ns_, TicksToNs(cpu.busy_ticks));
    }
  }
  if (mem_ok_) {
    if (mem_total_id_ == kNoSeries) {
      mem_total_id_ = sink.Register({"mem.total_bytes", SeriesKind::kGauge, "bytes", -1, -1});
      mem_available_id_ = sink.Register({"mem.available_bytes", SeriesKind::kGauge, "bytes", -1, -1});
    }
    sink.Record(mem_total_id_, last_now_ns_, mem_.total_bytes);
    if (mem_.available_bytes >= 0) sink.Record(mem_available_id_, last_now_ns_, mem_.available_bytes);
  }
}

}  // namespace eroica::agent
