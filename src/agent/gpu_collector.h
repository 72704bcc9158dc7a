// GPUs through NVML (see nvml_api.h), one instance per GPU index ("0", "1", ...):
//   gpu.sm_util_pct    gauge  % of NVML's last sample period (1/6 s to 1 s) a kernel ran
//   gpu.mem_util_pct   gauge  % of it device memory was busy
//   gpu.sm_clock_mhz, gpu.mem_clock_mhz  gauges (capacity: the maximum clock)
//   gpu.power_mw       gauge
//   gpu.temperature_c  gauge
//   gpu.throttle_reasons  gauge, NVML's clocks-event bit mask (0: none)
//   gpu.pcie_tx_bytes, gpu.pcie_rx_bytes  counters (NVML field counters, R535+), or where
//   gpu.pcie_tx_kbps,  gpu.pcie_rx_kbps   those are missing, gauges from
//                      nvmlDeviceGetPcieThroughput (blocks 20 ms, so read once a second);
//                      capacity: the PCIe generation × width the link can reach
//   gpu.nvlink_tx_kib, gpu.nvlink_rx_kib  counters, all links together (capacity: links ×
//                      common link speed)
// A reading a GPU does not support is dropped for good after its first NOT_SUPPORTED.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agent/collector.h"
#include "agent/error_log.h"
#include "agent/nvml_api.h"

namespace eroica::agent {

class GpuCollector : public Collector {
 public:
  // Initializes NVML and lists the GPUs; null (after one log line) when NVML fails or there
  // is no GPU. samples_per_second paces the once-a-second readings.
  static std::unique_ptr<GpuCollector> Create(NvmlApi api, int samples_per_second, ErrorLog* log);
  ~GpuCollector() override;

  std::string_view name() const override { return "gpu"; }
  void Sample(int64_t now_ns) override;
  void Emit(MetricSink& sink) override;

  size_t device_count() const { return devices_.size(); }
  // pid → GPU index, from NVML's list of compute processes (refreshed once a second).
  // Thread-safe. NVML lists host pids; inside a container they may not match.
  std::map<int64_t, int> GpuOfProcess() const;

  enum Gauge {
    kSmUtil,
    kMemUtil,
    kSmClock,
    kMemClock,
    kPower,
    kTemperature,
    kThrottle,
    kPcieTxKbps,
    kPcieRxKbps,
    kGaugeCount
  };
  enum Counter { kPcieTx, kPcieRx, kNvlinkTx, kNvlinkRx, kCounterCount };

 private:
  struct Device {
    unsigned index = 0;
    NvmlDevice handle = nullptr;
    std::string model;
    std::array<bool, kGaugeCount> gauge_supported;
    std::array<std::optional<int64_t>, kGaugeCount> gauges;
    std::array<int64_t, kGaugeCount> gauge_capacity{};
    std::array<SeriesId, kGaugeCount> gauge_ids;
    std::array<bool, kCounterCount> counter_supported;
    std::array<std::optional<int64_t>, kCounterCount> counters;
    std::array<std::optional<uint64_t>, kCounterCount> last_raw;  // to unwrap 32-bit fields
    std::array<int64_t, kCounterCount> counter_total{};
    std::array<int64_t, kCounterCount> counter_capacity{};
    std::array<SeriesId, kCounterCount> counter_ids;
  };

  GpuCollector(NvmlApi api, int samples_per_second, ErrorLog* log);
  void Probe(Device* device);
  void ProbeLinks(Device* device);  // PCIe and NVLink capacities, which counters exist
  void SampleDevice(Device* device, bool once_a_second);
  void ReadUnsigned(Device* device, Gauge gauge, bool available, const std::function<NvmlReturn(unsigned*)>& read);
  void ReadFields(Device* device);
  void ReadPcieThroughput(Device* device);
  bool Check(Device* device, Gauge gauge, NvmlReturn code);
  void RefreshProcesses();

  NvmlApi api_;
  int samples_per_second_;
  ErrorLog* log_;
  std::vector<Device> devices_;
  int64_t last_now_ns_ = 0;
  int samples_until_second_ = 0;
  mutable std::mutex processes_mu_;
  std::map<int64_t, int> gpu_of_process_;
};

// Bytes per second one direction of a PCIe link carries (after encoding overhead), by
// generation and lane count; 0 when unknown.
int64_t PcieBytesPerSecond(unsigned generation, unsigned width);

}  // namespace eroica::agent
