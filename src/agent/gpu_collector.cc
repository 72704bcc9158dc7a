#include "agent/gpu_collector.h"

#include <fmt/format.h>

namespace eroica::agent {
namespace {

struct SeriesSpec {
  const char* name;
  SeriesKind kind;
  const char* unit;
};

constexpr SeriesSpec kGaugeSpecs[GpuCollector::kGaugeCount] = {
    {"gpu.sm_util_pct", SeriesKind::kGauge, "pct"},       {"gpu.mem_util_pct", SeriesKind::kGauge, "pct"},
    {"gpu.sm_clock_mhz", SeriesKind::kGauge, "MHz"},      {"gpu.mem_clock_mhz", SeriesKind::kGauge, "MHz"},
    {"gpu.power_mw", SeriesKind::kGauge, "mW"},           {"gpu.temperature_c", SeriesKind::kGauge, "C"},
    {"gpu.throttle_reasons", SeriesKind::kGauge, "mask"}, {"gpu.pcie_tx_kbps", SeriesKind::kGauge, "KiB/s"},
    {"gpu.pcie_rx_kbps", SeriesKind::kGauge, "KiB/s"},
};

constexpr SeriesSpec kCounterSpecs[GpuCollector::kCounterCount] = {
    {"gpu.pcie_tx_bytes", SeriesKind::kCounter, "bytes"},
    {"gpu.pcie_rx_bytes", SeriesKind::kCounter, "bytes"},
    {"gpu.nvlink_tx_kib", SeriesKind::kCounter, "KiB"},
    {"gpu.nvlink_rx_kib", SeriesKind::kCounter, "KiB"},
};

constexpr unsigned kCounterFields[GpuCollector::kCounterCount] = {
    kNvmlFiPcieCountTxBytes, kNvmlFiPcieCountRxBytes, kNvmlFiNvlinkThroughputDataTx, kNvmlFiNvlinkThroughputDataRx};

// A field's value as an unsigned 64-bit number, and whether NVML keeps it in 32 bits.
uint64_t FieldRaw(const NvmlFieldValue& field, bool* is_32_bit) {
  *is_32_bit = false;
  switch (field.value_type) {
    case kNvmlValueDouble:
      return static_cast<uint64_t>(field.value.d);
    case kNvmlValueUnsignedInt:
      *is_32_bit = true;
      return field.value.ui;
    case kNvmlValueSignedInt:
      *is_32_bit = true;
      return static_cast<uint32_t>(field.value.si);
    case kNvmlValueUnsignedLong:
      return field.value.ul;
    case kNvmlValueSignedLongLong:
      return static_cast<uint64_t>(field.value.sll);
    default:
      return field.value.ull;
  }
}

NvmlFieldValue Field(unsigned id, unsigned scope) {
  NvmlFieldValue field{};
  field.field_id = id;
  field.scope_id = scope;
  return field;
}

}  // namespace

int64_t PcieBytesPerSecond(unsigned generation, unsigned width) {
  // Per lane and direction: 2.5/5 GT/s with 8b/10b, then 8/16/32/64 GT/s with 128b/130b.
  static constexpr int64_t kLaneBytesPerSecond[] = {
      0, 250'000'000, 500'000'000, 984'615'384, 1'969'230'769, 3'938'461'538, 7'876'923'076};
  if (generation == 0 || generation > 6) return 0;
  return kLaneBytesPerSecond[generation] * static_cast<int64_t>(width);
}

std::unique_ptr<GpuCollector> GpuCollector::Create(NvmlApi api, int samples_per_second, ErrorLog* log) {
  NvmlReturn code = api.init ? api.init() : kNvmlErrorNotSupported;
  if (code != kNvmlSuccess) {
    log->Info(fmt::format("no GPU monitoring: nvmlInit failed: {}", NvmlErrorText(api, code)));
    return nullptr;
  }
  unsigned count = 0;
  code = api.device_get_count(&count);
  if (code != kNvmlSuccess || count == 0) {
    log->Info(code != kNvmlSuccess ? "no GPU monitoring: " + NvmlErrorText(api, code)
                                   : std::string("no GPU monitoring: NVML lists no GPU"));
    if (api.shutdown) api.shutdown();
    return nullptr;
  }
  std::unique_ptr<GpuCollector> collector(new GpuCollector(std::move(api), samples_per_second, log));
  for (unsigned index = 0; index < count && index < 64; ++index) {
    Device device;
    device.index = index;
    if (collector->api_.device_get_handle_by_index(index, &device.handle) != kNvmlSuccess) {
      log->Report(fmt::format("gpu{}-handle", index), fmt::format("GPU {}: no NVML handle; skipping it", index));
      continue;
    }
    collector->Probe(&device);
    collector->devices_.push_back(std::move(device));
  }
  log->Info(fmt::format("monitoring {} GPU(s) through NVML", collector->devices_.size()));
  return collector;
}

GpuCollector::GpuCollector(NvmlApi api, int samples_per_second, ErrorLog* log)
    : api_(std::move(api)), samples_per_second_(samples_per_second < 1 ? 1 : samples_per_second), log_(log) {}

GpuCollector::~GpuCollector() {
  if (api_.shutdown) api_.shutdown();
}

void GpuCollector::Probe(Device* device) {
  device->gauge_supported.fill(true);
  device->gauge_supported[kPcieTxKbps] = device->gauge_supported[kPcieRxKbps] = false;
  device->gauge_ids.fill(kNoSeries);
  device->counter_supported.fill(false);
  device->counter_ids.fill(kNoSeries);
  char model[96] = {0};
  if (api_.device_get_name && api_.device_get_name(device->handle, model, sizeof(model) - 1) == kNvmlSuccess) {
    device->model = model;
  }
  device->gauge_capacity[kSmUtil] = device->gauge_capacity[kMemUtil] = 100;
  unsigned max_mhz = 0;
  if (api_.device_get_max_clock_info &&
      api_.device_get_max_clock_info(device->handle, kNvmlClockSm, &max_mhz) == kNvmlSuccess) {
    device->gauge_capacity[kSmClock] = max_mhz;
  }
  if (api_.device_get_max_clock_info &&
      api_.device_get_max_clock_info(device->handle, kNvmlClockMem, &max_mhz) == kNvmlSuccess) {
    device->gauge_capacity[kMemClock] = max_mhz;
  }
  ProbeLinks(device);
}

void GpuCollector::ProbeLinks(Device* device) {
  unsigned generation = 0, width = 0;
  if (api_.device_get_max_pcie_link_generation && api_.device_get_max_pcie_link_width &&
      api_.device_get_max_pcie_link_generation(device->handle, &generation) == kNvmlSuccess &&
      api_.device_get_max_pcie_link_width(device->handle, &width) == kNvmlSuccess) {
    int64_t bytes_per_s = PcieBytesPerSecond(generation, width);
    device->counter_capacity[kPcieTx] = device->counter_capacity[kPcieRx] = bytes_per_s;
    device->gauge_capacity[kPcieTxKbps] = device->gauge_capacity[kPcieRxKbps] = bytes_per_s / 1024;
  }
  if (!api_.device_get_field_values) {
    device->gauge_supported[kPcieTxKbps] = device->gauge_supported[kPcieRxKbps] =
        static_cast<bool>(api_.device_get_pcie_throughput);
    return;
  }
  NvmlFieldValue fields[] = {Field(kNvmlFiPcieCountTxBytes, 0),
                             Field(kNvmlFiPcieCountRxBytes, 0),
                             Field(kNvmlFiNvlinkThroughputDataTx, kNvmlScopeAllLinks),
                             Field(kNvmlFiNvlinkThroughputDataRx, kNvmlScopeAllLinks),
                             Field(kNvmlFiNvlinkSpeedMbpsCommon, 0),
                             Field(kNvmlFiNvlinkLinkCount, 0)};
  bool called = api_.device_get_field_values(device->handle, 6, fields) == kNvmlSuccess;
  for (int c = 0; c < kCounterCount; ++c) {
    device->counter_supported[c] = called && fields[c].nvml_return == kNvmlSuccess;
  }
  bool is_32_bit = false;
  if (called && fields[4].nvml_return == kNvmlSuccess && fields[5].nvml_return == kNvmlSuccess) {
    int64_t link_mbps = static_cast<int64_t>(FieldRaw(fields[4], &is_32_bit));
    int64_t links = static_cast<int64_t>(FieldRaw(fields[5], &is_32_bit));
    int64_t kib_per_s = links * link_mbps * 1'000'000 / 1024;
    device->counter_capacity[kNvlinkTx] = device->counter_capacity[kNvlinkRx] = kib_per_s;
  }
  if (!device->counter_supported[kPcieTx] && api_.device_get_pcie_throughput) {
    device->gauge_supported[kPcieTxKbps] = device->gauge_supported[kPcieRxKbps] = true;
  }
}

bool GpuCollector::Check(Device* device, Gauge gauge, NvmlReturn code) {
  if (code == kNvmlSuccess) return true;
  if (code == kNvmlErrorNotSupported) {
    device->gauge_supported[gauge] = false;
    return false;
  }
  log_->Report(
      fmt::format("gpu{}-{}-{}", device->index, static_cast<int>(gauge), code),
      fmt::format("GPU {}: reading {} failed: {}", device->index, kGaugeSpecs[gauge].name, NvmlErrorText(api_, code)));
  return false;
}

void GpuCollector::Sample(int64_t now_ns) {
  last_now_ns_ = now_ns;
  bool once_a_second = --samples_until_second_ <= 0;
  if (once_a_second) samples_until_second_ = samples_per_second_;
  for (Device& device : devices_) SampleDevice(&device, once_a_second);
  if (once_a_second) RefreshProcesses();
}

void GpuCollector::ReadUnsigned(Device* device, Gauge gauge, bool available,
                                const std::function<NvmlReturn(unsigned*)>& read) {
  unsigned value = 0;
  if (available && device->gauge_supported[gauge] && Check(device, gauge, read(&value))) {
    device->gauges[gauge] = value;
  }
}

void GpuCollector::SampleDevice(Device* device, bool once_a_second) {
  for (int g = 0; g < kGaugeCount; ++g) {
    if (g != kPcieTxKbps && g != kPcieRxKbps) device->gauges[g].reset();
  }
  NvmlDevice handle = device->handle;
  NvmlUtilization utilization{};
  if (api_.device_get_utilization_rates && device->gauge_supported[kSmUtil] &&
      Check(device, kSmUtil, api_.device_get_utilization_rates(handle, &utilization))) {
    device->gauges[kSmUtil] = utilization.gpu;
    device->gauges[kMemUtil] = utilization.memory;
  }
  const NvmlApi& api = api_;
  bool clocks = static_cast<bool>(api.device_get_clock_info);
  ReadUnsigned(device, kSmClock, clocks,
               [&](unsigned* mhz) { return api.device_get_clock_info(handle, kNvmlClockSm, mhz); });
  ReadUnsigned(device, kMemClock, clocks,
               [&](unsigned* mhz) { return api.device_get_clock_info(handle, kNvmlClockMem, mhz); });
  ReadUnsigned(device, kPower, static_cast<bool>(api.device_get_power_usage),
               [&](unsigned* mw) { return api.device_get_power_usage(handle, mw); });
  ReadUnsigned(device, kTemperature, static_cast<bool>(api.device_get_temperature),
               [&](unsigned* c) { return api.device_get_temperature(handle, kNvmlTemperatureGpu, c); });
  unsigned long long reasons = 0;
  if (api.device_get_throttle_reasons && device->gauge_supported[kThrottle] &&
      Check(device, kThrottle, api.device_get_throttle_reasons(handle, &reasons))) {
    device->gauges[kThrottle] = static_cast<int64_t>(reasons);
  }
  ReadFields(device);
  if (once_a_second) ReadPcieThroughput(device);
}

void GpuCollector::ReadFields(Device* device) {
  NvmlFieldValue fields[kCounterCount];
  int wanted[kCounterCount];
  int count = 0;
  for (int c = 0; c < kCounterCount; ++c) {
    device->counters[c].reset();
    if (!device->counter_supported[c]) continue;
    bool nvlink = c == kNvlinkTx || c == kNvlinkRx;
    fields[count] = Field(kCounterFields[c], nvlink ? kNvmlScopeAllLinks : 0);
    wanted[count++] = c;
  }
  if (count == 0 || api_.device_get_field_values(device->handle, count, fields) != kNvmlSuccess) {
    return;
  }
  for (int i = 0; i < count; ++i) {
    if (fields[i].nvml_return != kNvmlSuccess) continue;
    int c = wanted[i];
    bool is_32_bit = false;
    uint64_t raw = FieldRaw(fields[i], &is_32_bit);
    std::optional<uint64_t>& last = device->last_raw[c];
    if (!last) {
      device->counter_total[c] = static_cast<int64_t>(raw);
    } else {
      uint64_t delta = is_32_bit ? static_cast<uint32_t>(raw - *last) : raw - *last;
      device->counter_total[c] += static_cast<int64_t>(delta);
    }
    last = raw;
    device->counters[c] = device->counter_total[c];
  }
}

void GpuCollector::ReadPcieThroughput(Device* device) {
  for (Gauge gauge : {kPcieTxKbps, kPcieRxKbps}) {
    device->gauges[gauge].reset();
    if (!device->gauge_supported[gauge]) continue;
    unsigned kbps = 0;
    int counter = gauge == kPcieTxKbps ? kNvmlPcieUtilTxBytes : kNvmlPcieUtilRxBytes;
    if (Check(device, gauge, api_.device_get_pcie_throughput(device->handle, counter, &kbps))) {
      device->gauges[gauge] = kbps;
    }
  }
}

void GpuCollector::RefreshProcesses() {
  if (!api_.device_get_compute_running_processes) return;
  std::map<int64_t, int> gpu_of_process;
  std::vector<NvmlProcessInfoV1> infos(256);
  for (const Device& device : devices_) {
    unsigned count = static_cast<unsigned>(infos.size());
    if (api_.device_get_compute_running_processes(device.handle, &count, infos.data()) != kNvmlSuccess) {
      continue;
    }
    for (unsigned i = 0; i < count && i < infos.size(); ++i) {
      gpu_of_process.emplace(infos[i].pid, static_cast<int>(device.index));
    }
  }
  std::lock_guard<std::mutex> lock(processes_mu_);
  gpu_of_process_ = std::move(gpu_of_process);
}

std::map<int64_t, int> GpuCollector::GpuOfProcess() const {
  std::lock_guard<std::mutex> lock(processes_mu_);
  return gpu_of_process_;
}

void GpuCollector::Emit(MetricSink& sink) {
  for (Device& device : devices_) {
    std::string instance = std::to_string(device.index);
    for (int g = 0; g < kGaugeCount; ++g) {
      if (!device.gauges[g]) continue;
      if (device.gauge_ids[g] == kNoSeries) {
        device.gauge_ids[g] = sink.Register({kGaugeSpecs[g].name, kGaugeSpecs[g].kind, kGaugeSpecs[g].unit, -1, -1,
                                             instance, device.model, device.gauge_capacity[g]});
      }
      sink.Record(device.gauge_ids[g], last_now_ns_, *device.gauges[g]);
      if (g == kPcieTxKbps || g == kPcieRxKbps) device.gauges[g].reset();  // once per read
    }
    for (int c = 0; c < kCounterCount; ++c) {
      if (!device.counters[c]) continue;
      if (device.counter_ids[c] == kNoSeries) {
        device.counter_ids[c] = sink.Register({kCounterSpecs[c].name, kCounterSpecs[c].kind, kCounterSpecs[c].unit, -1,
                                               -1, instance, device.model, device.counter_capacity[c]});
      }
      sink.Record(device.counter_ids[c], last_now_ns_, *device.counters[c]);
    }
  }
}

}  // namespace eroica::agent
