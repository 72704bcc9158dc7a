#include "agent/utilization.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <set>

namespace eroica::agent {
namespace {

using Points = std::map<int64_t, double>;  // ts → value

constexpr double kActiveThreadShare = 0.05;

// a - b, or -1 when it does not fit (values in a damaged file can be anything): callers skip
// negative steps as resets.
int64_t StepOrReset(int64_t a, int64_t b) {
  int64_t d = 0;
  return __builtin_sub_overflow(a, b, &d) ? -1 : d;
}

// Per-interval rates (units per second) of a counter; a drop (reset) skips its interval.
Points CounterRates(const MetricsSeries& series) {
  Points rates;
  for (size_t i = 1; i < series.ts_unix_ns.size(); ++i) {
    int64_t dt_ns = StepOrReset(series.ts_unix_ns[i], series.ts_unix_ns[i - 1]);
    int64_t dv = StepOrReset(series.values[i], series.values[i - 1]);
    if (dt_ns <= 0 || dv < 0) continue;
    rates[series.ts_unix_ns[i]] = static_cast<double>(dv) * 1e9 / static_cast<double>(dt_ns);
  }
  return rates;
}

// Per-interval CPU ns per second of one thread's cpu_ns counter, at most one core. A reading
// taken late (the sampler preempted between its timestamp and the read, as happens on a busy
// node) books CPU time into the wrong interval: more than a core in one, less in the next. The
// surplus over one core is carried into the following intervals rather than dropped, so a busy
// thread reads busy however the sampler is scheduled; a reset drops it.
Points ThreadCpuRates(const MetricsSeries& series) {
  Points rates;
  double carry_ns = 0;
  for (size_t i = 1; i < series.ts_unix_ns.size(); ++i) {
    int64_t dt_ns = StepOrReset(series.ts_unix_ns[i], series.ts_unix_ns[i - 1]);
    int64_t dv = StepOrReset(series.values[i], series.values[i - 1]);
    if (dt_ns <= 0 || dv < 0) {
      carry_ns = 0;
      continue;
    }
    double cpu_ns = static_cast<double>(dv) + carry_ns;
    double used_ns = std::min(cpu_ns, static_cast<double>(dt_ns));
    carry_ns = cpu_ns - used_ns;
    rates[series.ts_unix_ns[i]] = used_ns * 1e9 / static_cast<double>(dt_ns);
  }
  return rates;
}

// CPU ns per ns of a cpu_ns counter over its whole span (resets skipped).
double BusyShare(const MetricsSeries& series) {
  double busy_ns = 0;
  for (size_t i = 1; i < series.values.size(); ++i) {
    busy_ns += static_cast<double>(std::max<int64_t>(StepOrReset(series.values[i], series.values[i - 1]), 0));
  }
  size_t n = series.ts_unix_ns.size();
  int64_t span_ns = n > 1 ? StepOrReset(series.ts_unix_ns[n - 1], series.ts_unix_ns[0]) : 0;
  return span_ns > 0 ? busy_ns / static_cast<double>(span_ns) : 0.0;
}

Points Readings(const MetricsSeries& series) {
  Points points;
  if (series.info.kind == SeriesKind::kCounter) return CounterRates(series);
  for (size_t i = 0; i < series.ts_unix_ns.size(); ++i) {
    points[series.ts_unix_ns[i]] = static_cast<double>(series.values[i]);
  }
  return points;
}

// Pointwise max of two series over the union of their timestamps.
Points MaxOf(const Points& a, const Points& b) {
  Points result = a;
  for (const auto& [ts, value] : b) {
    auto [it, inserted] = result.emplace(ts, value);
    if (!inserted) it->second = std::max(it->second, value);
  }
  return result;
}

double Peak(const Points& points) {
  double peak = 0;
  for (const auto& [ts, value] : points) peak = std::max(peak, value);
  return peak;
}

UtilizationSeries ToSeries(ResourceKind resource, std::string label, const Points& points, double capacity) {
  UtilizationSeries series{resource, std::move(label), {}, {}};
  for (const auto& [ts, value] : points) {
    double share = capacity > 0 ? value / capacity : 0.0;
    series.ts_unix_ns.push_back(ts);
    series.utilization.push_back(static_cast<float>(std::clamp(share, 0.0, 1.0)));
  }
  return series;
}

std::optional<UtilizationSeries> CpuUtilization(const MetricsFile& file, int64_t pid,
                                                const std::vector<int64_t>& tids) {
  std::set<int64_t> wanted(tids.begin(), tids.end());
  Points sum;
  size_t threads = 0, active = 0;
  for (const MetricsSeries& series : file.series) {
    const SeriesInfo& info = series.info;
    if (info.name != "thread.cpu_ns" || info.pid != pid) continue;
    if (!wanted.empty() && wanted.count(info.tid) == 0) continue;
    ++threads;
    for (const auto& [ts, ns_per_s] : ThreadCpuRates(series)) sum[ts] += ns_per_s / 1e9;
    if (BusyShare(series) >= kActiveThreadShare) ++active;
  }
  if (threads > 0) {
    std::string label = fmt::format("cpu: pid {}, {} active of {} threads", pid, active, threads);
    return ToSeries(ResourceKind::kCpu, std::move(label), sum, std::max<size_t>(active, 1));
  }
  const MetricsSeries* process = file.Find("proc.cpu_ns", pid);
  if (process == nullptr) return std::nullopt;
  return ToSeries(ResourceKind::kCpu, fmt::format("cpu: pid {} (process total, one core)", pid), CounterRates(*process),
                  1e9);
}

std::optional<UtilizationSeries> NetworkUtilization(const MetricsFile& file) {
  struct Link {
    Points per_direction;
    int64_t capacity = 0;
  };
  std::map<std::string, Link> links;
  for (const MetricsSeries& series : file.series) {
    const std::string& name = series.info.name;
    bool net = name == "net.rx_bytes" || name == "net.tx_bytes";
    bool rdma = name == "rdma.rcv_bytes" || name == "rdma.xmit_bytes";
    if ((!net && !rdma) || series.info.instance == "lo") continue;
    Link& link = links[(rdma ? "rdma:" : "") + series.info.instance];
    link.per_direction = MaxOf(link.per_direction, CounterRates(series));
    link.capacity = std::max(link.capacity, series.info.capacity);
  }
  if (links.empty()) return std::nullopt;
  double busiest = 0;
  for (const auto& [name, link] : links) busiest = std::max(busiest, Peak(link.per_direction));
  Points result;
  std::vector<std::string> parts;
  for (const auto& [name, link] : links) {
    double capacity = link.capacity > 0 ? static_cast<double>(link.capacity) : busiest;
    Points shares;
    for (const auto& [ts, rate] : link.per_direction) {
      shares[ts] = capacity > 0 ? rate / capacity : 0.0;
    }
    result = MaxOf(result, shares);
    parts.push_back(link.capacity > 0 ? fmt::format("{} ({:.3g} GB/s)", name, capacity / 1e9)
                                      : fmt::format("{} (peak-normalised)", name));
  }
  return ToSeries(ResourceKind::kNetwork, fmt::format("network: max of {}", fmt::join(parts, ", ")), result, 1.0);
}

// The GPU index of `pid` as explained in utilization.h, or -1.
int64_t GpuOfProcess(const MetricsFile& file, int64_t pid) {
  std::set<int64_t> gpus;
  for (const MetricsSeries& series : file.series) {
    if (series.info.name.rfind("gpu.", 0) != 0) continue;
    int64_t index = -1;
    auto [ptr, error] =
        std::from_chars(series.info.instance.data(), series.info.instance.data() + series.info.instance.size(), index);
    if (error == std::errc() && index >= 0) gpus.insert(index);
  }
  if (gpus.empty()) return -1;
  std::vector<std::pair<int64_t, int64_t>> ranks;  // (rank, pid)
  for (const MetricsProcess& process : file.processes) {
    if (process.pid == pid && process.gpu_index >= 0) return process.gpu_index;
    if (process.rank >= 0) ranks.emplace_back(process.rank, process.pid);
  }
  if (gpus.size() == 1) return *gpus.begin();
  if (ranks.size() != gpus.size()) return -1;
  std::sort(ranks.begin(), ranks.end());
  auto gpu = gpus.begin();
  for (const auto& [rank, rank_pid] : ranks) {
    if (rank_pid == pid) return *gpu;
    ++gpu;
  }
  return -1;
}

// max(a, b) of two same-kind GPU series normalised by their capacity (or peak).
std::optional<UtilizationSeries> GpuLinkUtilization(const MetricsFile& file, ResourceKind resource,
                                                    const std::string& gpu, std::initializer_list<const char*> names) {
  Points rates;
  int64_t capacity = 0;
  std::vector<std::string> used;
  for (const char* name : names) {
    const MetricsSeries* series = file.Find(name, -1, -1, gpu);
    if (series == nullptr) continue;
    rates = MaxOf(rates, Readings(*series));
    capacity = std::max(capacity, series->info.capacity);
    used.push_back(name);
  }
  if (used.empty()) return std::nullopt;
  double scale = capacity > 0 ? static_cast<double>(capacity) : Peak(rates);
  std::string label = fmt::format("{}: GPU {}, max of {}{}", ResourceName(resource), gpu, fmt::join(used, ", "),
                                  capacity > 0 ? "" : " (peak-normalised)");
  return ToSeries(resource, std::move(label), rates, scale);
}

}  // namespace

StatusOr<std::vector<UtilizationSeries>> UtilizationForProcess(const MetricsFile& file, int64_t pid,
                                                               const std::vector<int64_t>& tids) {
  bool known = std::any_of(file.processes.begin(), file.processes.end(),
                           [&](const MetricsProcess& process) { return process.pid == pid; }) ||
               std::any_of(file.series.begin(), file.series.end(),
                           [&](const MetricsSeries& series) { return series.info.pid == pid; });
  if (!known) return ErrorStatus("the metrics file of {} knows no process {}", file.host, pid);
  std::vector<UtilizationSeries> result;
  if (auto cpu = CpuUtilization(file, pid, tids)) result.push_back(std::move(*cpu));
  if (auto network = NetworkUtilization(file)) result.push_back(std::move(*network));
  int64_t gpu_index = GpuOfProcess(file, pid);
  if (gpu_index >= 0) {
    std::string gpu = std::to_string(gpu_index);
    if (const MetricsSeries* sm = file.Find("gpu.sm_util_pct", -1, -1, gpu)) {
      result.push_back(ToSeries(ResourceKind::kGpuSm, fmt::format("gpu_sm: GPU {}", gpu), Readings(*sm), 100.0));
    }
    for (auto link :
         {GpuLinkUtilization(file, ResourceKind::kPcie, gpu,
                             {"gpu.pcie_tx_bytes", "gpu.pcie_rx_bytes", "gpu.pcie_tx_kbps", "gpu.pcie_rx_kbps"}),
          GpuLinkUtilization(file, ResourceKind::kNvlink, gpu, {"gpu.nvlink_tx_kib", "gpu.nvlink_rx_kib"})}) {
      if (link) result.push_back(std::move(*link));
    }
  }
  return result;
}

}  // namespace eroica::agent
