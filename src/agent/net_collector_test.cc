#include "agent/net_collector.h"

#include <gtest/gtest.h>

#include "agent/metrics_file.h"
#include "agent/rdma_collector.h"
#include "agent/test_util.h"
#include "agent/utilization.h"
#include "base/temp_dir.h"

namespace eroica::agent {
namespace {

using testing::FindSeries;
using testing::WriteInPlace;

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kT0 = 1'718'000'000'000'000'000;

class NetCollectorTest : public ::testing::Test {
 protected:
  void WriteCounters(const std::string& interface, int64_t rx_bytes, int64_t tx_bytes, int64_t rx_packets,
                     int64_t tx_packets) {
    std::string dir = root_.path() + "/sys/class/net/" + interface + "/statistics/";
    WriteInPlace(dir + "rx_bytes", std::to_string(rx_bytes) + "\n");
    WriteInPlace(dir + "tx_bytes", std::to_string(tx_bytes) + "\n");
    WriteInPlace(dir + "rx_packets", std::to_string(rx_packets) + "\n");
    WriteInPlace(dir + "tx_packets", std::to_string(tx_packets) + "\n");
  }
  void WritePort(const std::string& port, int64_t rcv_words, int64_t xmit_words) {
    std::string dir = root_.path() + "/sys/class/infiniband/" + port + "/counters/";
    WriteInPlace(dir + "port_rcv_data", std::to_string(rcv_words) + "\n");
    WriteInPlace(dir + "port_xmit_data", std::to_string(xmit_words) + "\n");
  }

  TempDir root_;
  ErrorLog log_{true};
  SampleStore store_{StoreOptions{}};
};

TEST_F(NetCollectorTest, CountersSpeedAndUtilization) {
  WriteCounters("eth0", 1000, 2000, 10, 20);
  WriteInPlace(root_.path() + "/sys/class/net/eth0/speed", "1000\n");  // Mb/s
  WriteCounters("lo", 5, 5, 1, 1);
  WriteCounters("veth7", 0, 0, 0, 0);  // no speed file: unknown capacity
  NetCollector collector({root_.path(), 100, 64}, &log_);
  testing::Tick(&store_, {&collector}, kT0);
  // eth0 receives 62.5 MB in one second (half of 1 Gb/s) and sends 25 MB.
  WriteCounters("eth0", 1000 + 62'500'000, 2000 + 25'000'000, 60'010, 20'020);
  WriteCounters("veth7", 1'000'000, 0, 1, 0);
  testing::Tick(&store_, {&collector}, kT0 + kSecond);

  std::vector<MetricsSeries> all = store_.Snapshot(kT0, kT0 + kSecond);
  EXPECT_EQ(FindSeries(all, "net.rx_bytes", -1, -1, "lo"), nullptr);
  const MetricsSeries* rx = FindSeries(all, "net.rx_bytes", -1, -1, "eth0");
  ASSERT_NE(rx, nullptr);
  EXPECT_EQ(rx->values, (std::vector<int64_t>{1000, 62'501'000}));
  EXPECT_EQ(rx->info.capacity, 125'000'000);
  const MetricsSeries* packets = FindSeries(all, "net.rx_packets", -1, -1, "eth0");
  ASSERT_NE(packets, nullptr);
  EXPECT_EQ(packets->values, (std::vector<int64_t>{10, 60'010}));
  const MetricsSeries* speed = FindSeries(all, "net.speed_mbps", -1, -1, "veth7");
  ASSERT_NE(speed, nullptr);
  EXPECT_EQ(speed->values[0], -1);
  EXPECT_EQ(FindSeries(all, "net.rx_bytes", -1, -1, "veth7")->info.capacity, 0);

  MetricsFile file;
  file.series = all;
  file.processes = {{7, 0, -1}};
  auto utilization = UtilizationForProcess(file, 7);
  ASSERT_TRUE(utilization.ok());
  ASSERT_EQ(utilization->size(), 1u);
  const UtilizationSeries& network = (*utilization)[0];
  EXPECT_EQ(network.resource, ResourceKind::kNetwork);
  // eth0: max(rx 62.5 MB/s, tx 25 MB/s) / 125 MB/s = 0.5. veth7 (unknown speed) is scaled by
  // the busiest rate in the file, 62.5 MB/s: 1 MB/s → 0.016. The max is 0.5.
  ASSERT_EQ(network.utilization.size(), 1u);
  EXPECT_FLOAT_EQ(network.utilization[0], 0.5f);
}

TEST_F(NetCollectorTest, InterfacesAppearAndVanish) {
  WriteCounters("eth0", 1, 1, 1, 1);
  NetCollector collector({root_.path(), 1, 64}, &log_);
  testing::Tick(&store_, {&collector}, kT0);
  WriteCounters("eth1", 1, 1, 1, 1);
  std::filesystem::remove_all(root_.path() + "/sys/class/net/eth0");
  testing::Tick(&store_, {&collector}, kT0 + kSecond);
  std::vector<MetricsSeries> latest = store_.Snapshot(kT0 + kSecond, kT0 + kSecond);
  EXPECT_NE(FindSeries(latest, "net.rx_bytes", -1, -1, "eth1"), nullptr);
  EXPECT_EQ(FindSeries(latest, "net.rx_bytes", -1, -1, "eth0"), nullptr);
}

TEST_F(NetCollectorTest, RdmaPortsCountFourByteWords) {
  EXPECT_EQ(ParseRdmaRateBytesPerSecond("200 Gb/sec (4X HDR)"), 25'000'000'000);
  EXPECT_EQ(ParseRdmaRateBytesPerSecond("garbage"), 0);
  WritePort("mlx5_0/ports/1", 100, 200);
  WriteInPlace(root_.path() + "/sys/class/infiniband/mlx5_0/ports/1/rate", "100 Gb/sec (4X EDR)\n");
  RdmaCollector collector(root_.path(), 100, &log_);
  testing::Tick(&store_, {&collector}, kT0);
  WritePort("mlx5_0/ports/1", 100 + 1'562'500'000, 200);  // 6.25 GB in 1 s: half of 100 Gb/s
  testing::Tick(&store_, {&collector}, kT0 + kSecond);
  std::vector<MetricsSeries> all = store_.Snapshot(kT0, kT0 + kSecond);
  const MetricsSeries* rcv = FindSeries(all, "rdma.rcv_bytes", -1, -1, "mlx5_0/1");
  ASSERT_NE(rcv, nullptr);
  EXPECT_EQ(rcv->values, (std::vector<int64_t>{400, 400 + 6'250'000'000}));
  EXPECT_EQ(rcv->info.capacity, 12'500'000'000);
  MetricsFile file;
  file.series = all;
  file.processes = {{7, 0, -1}};
  auto utilization = UtilizationForProcess(file, 7);
  ASSERT_TRUE(utilization.ok());
  EXPECT_FLOAT_EQ((*utilization)[0].utilization[0], 0.5f);
}

}  // namespace
}  // namespace eroica::agent
