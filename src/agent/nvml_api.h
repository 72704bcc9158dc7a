// The slice of NVML the agent uses, as a table of functions filled at run time by dlopen()ing
// libnvidia-ml.so.1, so the agent builds and runs on hosts without NVIDIA's driver, and tests
// fill the table with fakes. Types and constants are declared here from NVML's public ABI
// (nvml.h); nothing links against NVML.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "base/status.h"

namespace eroica::agent {

using NvmlReturn = int;                       // nvmlReturn_t
using NvmlDevice = struct NvmlDeviceOpaque*;  // nvmlDevice_t

inline constexpr NvmlReturn kNvmlSuccess = 0;
inline constexpr NvmlReturn kNvmlErrorNotSupported = 3;

// nvmlClockType_t, nvmlTemperatureSensors_t, nvmlPcieUtilCounter_t.
inline constexpr int kNvmlClockSm = 1;
inline constexpr int kNvmlClockMem = 2;
inline constexpr int kNvmlTemperatureGpu = 0;
inline constexpr int kNvmlPcieUtilTxBytes = 0;
inline constexpr int kNvmlPcieUtilRxBytes = 1;

// Field ids for nvmlDeviceGetFieldValues (NVML_FI_DEV_*).
inline constexpr unsigned kNvmlFiNvlinkSpeedMbpsCommon = 90;  // MB/s per link and direction
inline constexpr unsigned kNvmlFiNvlinkLinkCount = 91;
inline constexpr unsigned kNvmlFiNvlinkThroughputDataTx = 138;  // cumulative KiB
inline constexpr unsigned kNvmlFiNvlinkThroughputDataRx = 139;
inline constexpr unsigned kNvmlFiPcieCountTxBytes = 197;  // cumulative bytes (R535+)
inline constexpr unsigned kNvmlFiPcieCountRxBytes = 198;
inline constexpr unsigned kNvmlScopeAllLinks = 0xffffffffu;

// nvmlValueType_t.
inline constexpr int kNvmlValueDouble = 0;
inline constexpr int kNvmlValueUnsignedInt = 1;
inline constexpr int kNvmlValueUnsignedLong = 2;
inline constexpr int kNvmlValueUnsignedLongLong = 3;
inline constexpr int kNvmlValueSignedLongLong = 4;
inline constexpr int kNvmlValueSignedInt = 5;

struct NvmlUtilization {  // nvmlUtilization_t
  unsigned int gpu;       // % of the last sample period a kernel was running
  unsigned int memory;    // % of it device memory was read or written
};

struct NvmlFieldValue {  // nvmlFieldValue_t
  unsigned int field_id;
  unsigned int scope_id;
  long long timestamp_us;
  long long latency_us;
  int value_type;
  NvmlReturn nvml_return;
  union {
    double d;
    unsigned int ui;
    unsigned long ul;
    unsigned long long ull;
    long long sll;
    int si;
  } value;
};
static_assert(sizeof(NvmlFieldValue) == 40, "nvmlFieldValue_t is 40 bytes");

struct NvmlProcessInfoV1 {  // nvmlProcessInfo_v1_t, for the unversioned entry point
  unsigned int pid;
  unsigned long long used_gpu_memory;
};

// Empty members are functions the loaded library lacks; the collector skips what they read.
struct NvmlApi {
  std::function<NvmlReturn()> init;
  std::function<NvmlReturn()> shutdown;
  std::function<const char*(NvmlReturn)> error_string;
  std::function<NvmlReturn(unsigned*)> device_get_count;
  std::function<NvmlReturn(unsigned, NvmlDevice*)> device_get_handle_by_index;
  std::function<NvmlReturn(NvmlDevice, char*, unsigned)> device_get_name;
  std::function<NvmlReturn(NvmlDevice, NvmlUtilization*)> device_get_utilization_rates;
  std::function<NvmlReturn(NvmlDevice, int, unsigned*)> device_get_clock_info;
  std::function<NvmlReturn(NvmlDevice, int, unsigned*)> device_get_max_clock_info;
  std::function<NvmlReturn(NvmlDevice, unsigned*)> device_get_power_usage;  // mW
  std::function<NvmlReturn(NvmlDevice, int, unsigned*)> device_get_temperature;
  std::function<NvmlReturn(NvmlDevice, unsigned long long*)> device_get_throttle_reasons;
  std::function<NvmlReturn(NvmlDevice, int, unsigned*)> device_get_pcie_throughput;  // KB/s
  std::function<NvmlReturn(NvmlDevice, unsigned*)> device_get_max_pcie_link_generation;
  std::function<NvmlReturn(NvmlDevice, unsigned*)> device_get_max_pcie_link_width;
  std::function<NvmlReturn(NvmlDevice, int, NvmlFieldValue*)> device_get_field_values;
  std::function<NvmlReturn(NvmlDevice, unsigned*, NvmlProcessInfoV1*)> device_get_compute_running_processes;
  std::shared_ptr<void> library;  // keeps the dlopen()ed library loaded
};

// Loads NVML; an error (no library, missing core symbols) means "no GPU monitoring here".
StatusOr<NvmlApi> LoadNvml(const std::string& library_name = "libnvidia-ml.so.1");

// The text of an NVML error code, through the table when it can.
std::string NvmlErrorText(const NvmlApi& api, NvmlReturn code);

}  // namespace eroica::agent
