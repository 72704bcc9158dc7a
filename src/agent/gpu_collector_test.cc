#include "agent/gpu_collector.h"

#include <gtest/gtest.h>

#include <cstring>

#include "agent/metrics_file.h"
#include "agent/test_util.h"
#include "agent/utilization.h"

namespace eroica::agent {
namespace {

using testing::FindSeries;

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kT0 = 1'718'000'000'000'000'000;

// Two fake GPUs. Device handles are the addresses of these structs.
struct FakeGpu {
  unsigned sm_util = 0;
  unsigned mem_util = 0;
  unsigned sm_mhz = 1980;
  unsigned power_mw = 700'000;
  unsigned long long throttle = 0;
  unsigned pcie_tx_counter = 0;  // 32-bit, wraps
  unsigned long long nvlink_tx_kib = 0;
  bool fields_supported = true;
  unsigned pcie_tx_kbps = 0;
  std::vector<unsigned> pids;
};

struct FakeNvml {
  NvmlReturn init_result = kNvmlSuccess;
  std::vector<FakeGpu> gpus = std::vector<FakeGpu>(2);
  int shutdowns = 0;

  static FakeGpu* Gpu(NvmlDevice device) { return reinterpret_cast<FakeGpu*>(device); }

  NvmlApi Table() {
    NvmlApi api;
    api.init = [this] { return init_result; };
    api.shutdown = [this] {
      ++shutdowns;
      return kNvmlSuccess;
    };
    api.device_get_count = [this](unsigned* count) {
      *count = static_cast<unsigned>(gpus.size());
      return kNvmlSuccess;
    };
    api.device_get_handle_by_index = [this](unsigned index, NvmlDevice* device) {
      *device = reinterpret_cast<NvmlDevice>(&gpus[index]);
      return kNvmlSuccess;
    };
    api.device_get_name = [](NvmlDevice, char* name, unsigned length) {
      std::strncpy(name, "Fake H200", length);
      return kNvmlSuccess;
    };
    api.device_get_utilization_rates = [](NvmlDevice device, NvmlUtilization* utilization) {
      utilization->gpu = Gpu(device)->sm_util;
      utilization->memory = Gpu(device)->mem_util;
      return kNvmlSuccess;
    };
    api.device_get_clock_info = [](NvmlDevice device, int clock, unsigned* mhz) {
      if (clock != kNvmlClockSm) return kNvmlErrorNotSupported;
      *mhz = Gpu(device)->sm_mhz;
      return kNvmlSuccess;
    };
    api.device_get_max_clock_info = [](NvmlDevice, int, unsigned* mhz) {
      *mhz = 1980;
      return kNvmlSuccess;
    };
    api.device_get_power_usage = [](NvmlDevice device, unsigned* mw) {
      *mw = Gpu(device)->power_mw;
      return kNvmlSuccess;
    };
    api.device_get_temperature = [](NvmlDevice, int, unsigned*) { return kNvmlErrorNotSupported; };
    api.device_get_throttle_reasons = [](NvmlDevice device, unsigned long long* reasons) {
      *reasons = Gpu(device)->throttle;
      return kNvmlSuccess;
    };
    api.device_get_max_pcie_link_generation = [](NvmlDevice, unsigned* generation) {
      *generation = 5;
      return kNvmlSuccess;
    };
    api.device_get_max_pcie_link_width = [](NvmlDevice, unsigned* width) {
      *width = 16;
      return kNvmlSuccess;
    };
    api.device_get_pcie_throughput = [](NvmlDevice device, int counter, unsigned* kbps) {
      *kbps = counter == kNvmlPcieUtilTxBytes ? Gpu(device)->pcie_tx_kbps : 0;
      return kNvmlSuccess;
    };
    api.device_get_field_values = [](NvmlDevice device, int count, NvmlFieldValue* values) {
      for (int i = 0; i < count; ++i) FillField(*Gpu(device), &values[i]);
      return kNvmlSuccess;
    };
    api.device_get_compute_running_processes = [](NvmlDevice device, unsigned* count, NvmlProcessInfoV1* infos) {
      const std::vector<unsigned>& pids = Gpu(device)->pids;
      for (size_t i = 0; i < pids.size() && i < *count; ++i) infos[i] = {pids[i], 1 << 30};
      *count = static_cast<unsigned>(pids.size());
      return kNvmlSuccess;
    };
    return api;
  }

  static void FillField(const FakeGpu& gpu, NvmlFieldValue* field) {
    field->nvml_return = gpu.fields_supported ? kNvmlSuccess : kNvmlErrorNotSupported;
    switch (field->field_id) {
      case kNvmlFiPcieCountTxBytes:
        field->value_type = kNvmlValueUnsignedInt;
        field->value.ui = gpu.pcie_tx_counter;
        break;
      case kNvmlFiNvlinkThroughputDataTx:
        field->value_type = kNvmlValueUnsignedLongLong;
        field->value.ull = gpu.nvlink_tx_kib;
        break;
      case kNvmlFiNvlinkSpeedMbpsCommon:
        field->value_type = kNvmlValueUnsignedInt;
        field->value.ui = 25'000;  // MB/s per link
        break;
      case kNvmlFiNvlinkLinkCount:
        field->value_type = kNvmlValueUnsignedInt;
        field->value.ui = 18;
        break;
      default:
        field->nvml_return = kNvmlErrorNotSupported;
    }
  }
};

TEST(GpuCollectorTest, NoNvmlOrNoGpuIsACleanSkip) {
  ErrorLog log(true);
  FakeNvml failing;
  failing.init_result = 9;  // NVML_ERROR_DRIVER_NOT_LOADED
  EXPECT_EQ(GpuCollector::Create(failing.Table(), 10, &log), nullptr);
  FakeNvml empty;
  empty.gpus.clear();
  EXPECT_EQ(GpuCollector::Create(empty.Table(), 10, &log), nullptr);
  EXPECT_EQ(empty.shutdowns, 1);
  EXPECT_EQ(GpuCollector::Create(NvmlApi(), 10, &log), nullptr);
  EXPECT_FALSE(LoadNvml("liberoica-no-such-library.so").ok());
}

TEST(GpuCollectorTest, ReadsGaugesCountersAndUnwraps32BitFields) {
  ErrorLog log(true);
  FakeNvml nvml;
  nvml.gpus[1].pids = {4242};
  std::unique_ptr<GpuCollector> collector = GpuCollector::Create(nvml.Table(), 10, &log);
  ASSERT_NE(collector, nullptr);
  EXPECT_EQ(collector->device_count(), 2u);
  SampleStore store{StoreOptions{}};
  nvml.gpus[1].sm_util = 40;
  nvml.gpus[1].pcie_tx_counter = 0xffffff00u;
  nvml.gpus[1].nvlink_tx_kib = 1000;
  testing::Tick(&store, {collector.get()}, kT0);
  nvml.gpus[1].sm_util = 90;
  nvml.gpus[1].throttle = 0x4;                      // a power cap
  nvml.gpus[1].pcie_tx_counter = 0x100u;            // wrapped: 0x200 bytes later
  nvml.gpus[1].nvlink_tx_kib = 1000 + 219'726'562;  // half of 18 × 25 GB/s for one second
  testing::Tick(&store, {collector.get()}, kT0 + kSecond);

  std::vector<MetricsSeries> all = store.Snapshot(kT0, kT0 + kSecond);
  const MetricsSeries* sm = FindSeries(all, "gpu.sm_util_pct", -1, -1, "1");
  ASSERT_NE(sm, nullptr);
  EXPECT_EQ(sm->values, (std::vector<int64_t>{40, 90}));
  EXPECT_EQ(sm->info.label, "Fake H200");
  EXPECT_EQ(FindSeries(all, "gpu.throttle_reasons", -1, -1, "1")->values[1], 4);
  EXPECT_EQ(FindSeries(all, "gpu.temperature_c", -1, -1, "1"), nullptr);  // not supported
  EXPECT_EQ(FindSeries(all, "gpu.mem_clock_mhz", -1, -1, "1"), nullptr);
  const MetricsSeries* pcie = FindSeries(all, "gpu.pcie_tx_bytes", -1, -1, "1");
  ASSERT_NE(pcie, nullptr);
  EXPECT_EQ(pcie->values, (std::vector<int64_t>{0xffffff00ll, 0xffffff00ll + 0x200}));
  EXPECT_EQ(pcie->info.capacity, PcieBytesPerSecond(5, 16));
  EXPECT_EQ(FindSeries(all, "gpu.pcie_rx_bytes", -1, -1, "1"), nullptr);
  const MetricsSeries* nvlink = FindSeries(all, "gpu.nvlink_tx_kib", -1, -1, "1");
  ASSERT_NE(nvlink, nullptr);
  EXPECT_EQ(nvlink->info.capacity, 18ll * 25'000 * 1'000'000 / 1024);
  EXPECT_EQ(collector->GpuOfProcess(), (std::map<int64_t, int>{{4242, 1}}));

  MetricsFile file;
  file.series = all;
  file.processes = {{4242, 0, 1}};
  auto utilization = UtilizationForProcess(file, 4242);
  ASSERT_TRUE(utilization.ok());
  ASSERT_EQ(utilization->size(), 3u);  // gpu_sm, pcie, nvlink
  EXPECT_EQ((*utilization)[0].resource, ResourceKind::kGpuSm);
  EXPECT_FLOAT_EQ((*utilization)[0].utilization[1], 0.9f);
  EXPECT_EQ((*utilization)[2].resource, ResourceKind::kNvlink);
  EXPECT_NEAR((*utilization)[2].utilization[0], 0.5f, 1e-6);
}

TEST(GpuCollectorTest, FallsBackToPcieThroughputOnceASecond) {
  ErrorLog log(true);
  FakeNvml nvml;
  nvml.gpus.resize(1);
  nvml.gpus[0].fields_supported = false;
  nvml.gpus[0].pcie_tx_kbps = 1000;
  std::unique_ptr<GpuCollector> collector = GpuCollector::Create(nvml.Table(), 2, &log);
  ASSERT_NE(collector, nullptr);
  SampleStore store{StoreOptions{}};
  for (int i = 0; i < 4; ++i) testing::Tick(&store, {collector.get()}, kT0 + i * kSecond / 2);
  std::vector<MetricsSeries> all = store.Snapshot(kT0, kT0 + 2 * kSecond);
  const MetricsSeries* tx = FindSeries(all, "gpu.pcie_tx_kbps", -1, -1, "0");
  ASSERT_NE(tx, nullptr);
  EXPECT_EQ(tx->values.size(), 2u);  // ticks 0 and 2 of 4 at 2 per second
  EXPECT_EQ(tx->info.capacity, PcieBytesPerSecond(5, 16) / 1024);
  EXPECT_EQ(FindSeries(all, "gpu.pcie_tx_bytes", -1, -1, "0"), nullptr);
}

}  // namespace
}  // namespace eroica::agent
