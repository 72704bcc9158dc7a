#include "agent/node_metrics_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

#include "agent/prometheus_text.h"

namespace eroica::agent {
namespace {

enum class LabelKind { kGpu, kDevice, kPort, kProcess, kNone };

// One exported figure: the agent series it comes from and how it is written.
struct ExportRow {
  std::string_view series;  // SeriesInfo::name
  std::string_view metric;
  std::string_view type;
  std::string_view help;
  // To the metric's base unit: value × multiply ÷ divide (a division rounds once, so 1500 mW
  // reads 1.5 W, not 1.5000000000000002).
  double multiply;
  double divide;
  LabelKind labels;
  bool skip_negative = false;  // the collector's "unknown"
};

constexpr ExportRow kRows[] = {
    {"gpu.sm_util_pct", "eroica_gpu_sm_utilization_percent", "gauge", "Time a kernel ran on the GPU (NVML).", 1, 1,
     LabelKind::kGpu},
    {"gpu.mem_util_pct", "eroica_gpu_memory_utilization_percent", "gauge", "Time device memory was read or written.", 1,
     1, LabelKind::kGpu},
    {"gpu.sm_clock_mhz", "eroica_gpu_sm_clock_mhz", "gauge", "SM clock.", 1, 1, LabelKind::kGpu},
    {"gpu.mem_clock_mhz", "eroica_gpu_memory_clock_mhz", "gauge", "Memory clock.", 1, 1, LabelKind::kGpu},
    {"gpu.power_mw", "eroica_gpu_power_watts", "gauge", "Power draw.", 1, 1e3, LabelKind::kGpu},
    {"gpu.temperature_c", "eroica_gpu_temperature_celsius", "gauge", "GPU temperature.", 1, 1, LabelKind::kGpu},
    {"gpu.throttle_reasons", "eroica_gpu_throttle_reasons", "gauge", "NVML clock throttle reasons bit mask (0: none).",
     1, 1, LabelKind::kGpu},
    {"gpu.pcie_tx_bytes", "eroica_gpu_pcie_tx_bytes_total", "counter", "Bytes the GPU sent over PCIe.", 1, 1,
     LabelKind::kGpu},
    {"gpu.pcie_rx_bytes", "eroica_gpu_pcie_rx_bytes_total", "counter", "Bytes the GPU received over PCIe.", 1, 1,
     LabelKind::kGpu},
    {"gpu.pcie_tx_kbps", "eroica_gpu_pcie_tx_bytes_per_second", "gauge",
     "PCIe send rate (drivers without PCIe byte counters).", 1024, 1, LabelKind::kGpu},
    {"gpu.pcie_rx_kbps", "eroica_gpu_pcie_rx_bytes_per_second", "gauge",
     "PCIe receive rate (drivers without PCIe byte counters).", 1024, 1, LabelKind::kGpu},
    {"gpu.nvlink_tx_kib", "eroica_gpu_nvlink_tx_bytes_total", "counter", "Bytes sent over all NVLinks.", 1024, 1,
     LabelKind::kGpu},
    {"gpu.nvlink_rx_kib", "eroica_gpu_nvlink_rx_bytes_total", "counter", "Bytes received over all NVLinks.", 1024, 1,
     LabelKind::kGpu},
    {"net.rx_bytes", "eroica_net_rx_bytes_total", "counter", "Bytes received by the interface.", 1, 1,
     LabelKind::kDevice},
    {"net.tx_bytes", "eroica_net_tx_bytes_total", "counter", "Bytes sent by the interface.", 1, 1, LabelKind::kDevice},
    {"net.rx_packets", "eroica_net_rx_packets_total", "counter", "Packets received by the interface.", 1, 1,
     LabelKind::kDevice},
    {"net.tx_packets", "eroica_net_tx_packets_total", "counter", "Packets sent by the interface.", 1, 1,
     LabelKind::kDevice},
    {"net.speed_mbps", "eroica_net_speed_mbps", "gauge", "Negotiated link speed (absent when unknown).", 1, 1,
     LabelKind::kDevice, true},
    {"rdma.rcv_bytes", "eroica_rdma_rx_bytes_total", "counter", "Bytes received by the RDMA port.", 1, 1,
     LabelKind::kPort},
    {"rdma.xmit_bytes", "eroica_rdma_tx_bytes_total", "counter", "Bytes sent by the RDMA port.", 1, 1,
     LabelKind::kPort},
    {"proc.cpu_ns", "eroica_process_cpu_seconds_total", "counter", "CPU time of a watched training process.", 1, 1e9,
     LabelKind::kProcess},
    {"proc.rss_bytes", "eroica_process_resident_memory_bytes", "gauge", "Resident memory of a watched process.", 1, 1,
     LabelKind::kProcess},
    {"host.cpu_busy_ns", "eroica_host_cpu_busy_seconds_total", "counter",
     "CPU time all cores spent busy (user, nice, system, irq, softirq, steal).", 1, 1e9, LabelKind::kNone},
    {"mem.total_bytes", "eroica_host_memory_total_bytes", "gauge", "Memory of the host.", 1, 1, LabelKind::kNone},
    {"mem.available_bytes", "eroica_host_memory_available_bytes", "gauge", "Memory available for new work.", 1, 1,
     LabelKind::kNone},
};

const ExportRow* RowFor(std::string_view series) {
  for (const ExportRow& row : kRows) {
    if (row.series == series) return &row;
  }
  return nullptr;
}

std::string Labels(const ExportRow& row, const SeriesInfo& info, const std::map<int64_t, int64_t>& rank_of_pid) {
  switch (row.labels) {
    case LabelKind::kGpu:
      return fmt::format("{{gpu=\"{}\"}}", EscapeLabelValue(info.instance));
    case LabelKind::kDevice:
      return fmt::format("{{device=\"{}\"}}", EscapeLabelValue(info.instance));
    case LabelKind::kPort:
      return fmt::format("{{port=\"{}\"}}", EscapeLabelValue(info.instance));
    case LabelKind::kProcess: {
      auto rank = rank_of_pid.find(info.pid);
      return fmt::format("{{pid=\"{}\",rank=\"{}\"}}", info.pid, rank == rank_of_pid.end() ? -1 : rank->second);
    }
    case LabelKind::kNone:
      return "";
  }
  return "";
}

}  // namespace

bool IsExportedSeries(const SeriesInfo& info) { return RowFor(info.name) != nullptr; }

void RenderNodeMetrics(const std::vector<LatestSample>& samples, const std::map<int64_t, int64_t>& rank_of_pid,
                       std::string* out) {
  // Page order: the table's, then instance or pid, so two scrapes of one state read the same.
  std::vector<const LatestSample*> sorted;
  for (const LatestSample& sample : samples) {
    if (RowFor(sample.info.name) != nullptr) sorted.push_back(&sample);
  }
  auto key = [](const LatestSample* s) {
    return std::make_tuple(RowFor(s->info.name) - kRows, s->info.pid, s->info.instance.size(), s->info.instance);
  };
  std::sort(sorted.begin(), sorted.end(),
            [&](const LatestSample* a, const LatestSample* b) { return key(a) < key(b); });
  const ExportRow* open = nullptr;
  for (const LatestSample* sample : sorted) {
    const ExportRow& row = *RowFor(sample->info.name);
    if (row.skip_negative && sample->value < 0) continue;
    if (open != &row) {
      fmt::format_to(std::back_inserter(*out), "# HELP {0} {1}\n# TYPE {0} {2}\n", row.metric, row.help, row.type);
      open = &row;
    }
    fmt::format_to(std::back_inserter(*out), "{}{} {}\n", row.metric, Labels(row, sample->info, rank_of_pid),
                   static_cast<double>(sample->value) * row.multiply / row.divide);
  }
}

std::vector<std::string> NodeMetricNames() {
  std::vector<std::string> names;
  for (const ExportRow& row : kRows) names.emplace_back(row.metric);
  return names;
}

}  // namespace eroica::agent
