#include "agent/metrics_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <zstd.h>

#include <cstring>

#include "agent/metrics_file_writer.h"
#include "base/peak_rss.h"
#include "base/temp_dir.h"

namespace eroica::agent {
namespace {

constexpr int64_t kT0 = 1'718'000'000'000'000'000;

MetricsFile SampleFile() {
  MetricsFile file;
  file.host = "node-7";
  file.created_unix_ns = kT0 + 30'000'000'123;
  file.realtime_minus_monotonic_ns = kT0 - 12'345'678'901;
  file.window_start_unix_ns = kT0 - 1'000'000'000;
  file.window_end_unix_ns = kT0 + 21'000'000'000;
  file.clock_ticks_per_s = 100;
  file.num_cpus = 96;
  file.sample_interval_ns = 10'000'000;
  file.processes = {{1234, 3, 1}, {1235, 4, -1}};
  MetricsSeries thread;
  thread.info = {"thread.cpu_ns", SeriesKind::kCounter, "ns", 1234, 1240, "", "pt_autograd_0", 1'000'000'000};
  MetricsSeries link;
  link.info = {"net.rx_bytes", SeriesKind::kCounter, "bytes", -1, -1, "eth0", "", 12'500'000'000};
  MetricsSeries gauge;
  gauge.info = {"gpu.sm_util_pct", SeriesKind::kGauge, "pct", -1, -1, "1", "H200", 100};
  for (int64_t i = 0; i < 500; ++i) {
    int64_t ts = kT0 + i * 10'000'000 + (i % 3) * 17'000;
    thread.ts_unix_ns.push_back(ts);
    thread.values.push_back(i * 9'000'000);
    link.ts_unix_ns.push_back(ts);
    link.values.push_back(INT64_MAX - 1000 + i);  // near the limit: deltas must not overflow
    gauge.ts_unix_ns.push_back(ts);
    gauge.values.push_back((i * 37) % 101 - (i == 7 ? 1000 : 0));
  }
  file.series = {thread, link, gauge, MetricsSeries{{"empty", SeriesKind::kGauge, "x"}, {}, {}}};
  return file;
}

void ExpectSameSeries(const MetricsSeries& a, const MetricsSeries& b) {
  EXPECT_EQ(a.info.name, b.info.name);
  EXPECT_EQ(a.info.kind, b.info.kind);
  EXPECT_EQ(a.info.unit, b.info.unit);
  EXPECT_EQ(a.info.pid, b.info.pid);
  EXPECT_EQ(a.info.tid, b.info.tid);
  EXPECT_EQ(a.info.instance, b.info.instance);
  EXPECT_EQ(a.info.label, b.info.label);
  EXPECT_EQ(a.info.capacity, b.info.capacity);
  EXPECT_EQ(a.ts_unix_ns, b.ts_unix_ns);
  EXPECT_EQ(a.values, b.values);
}

TEST(MetricsFileTest, RoundTripsExactly) {
  TempDir dir;
  MetricsFile written = SampleFile();
  std::string path = dir.path() + "/metrics-node-7.eroica-metrics";
  ASSERT_TRUE(WriteMetricsFile(path, written).ok());
  StatusOr<MetricsFile> read = ReadMetricsFile(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->version, kMetricsFileVersion);
  EXPECT_EQ(read->host, written.host);
  EXPECT_EQ(read->created_unix_ns, written.created_unix_ns);
  EXPECT_EQ(read->realtime_minus_monotonic_ns, written.realtime_minus_monotonic_ns);
  EXPECT_EQ(read->window_start_unix_ns, written.window_start_unix_ns);
  EXPECT_EQ(read->window_end_unix_ns, written.window_end_unix_ns);
  EXPECT_EQ(read->clock_ticks_per_s, 100);
  EXPECT_EQ(read->num_cpus, 96);
  EXPECT_EQ(read->sample_interval_ns, 10'000'000);
  ASSERT_EQ(read->processes.size(), 2u);
  EXPECT_EQ(read->processes[0].pid, 1234);
  EXPECT_EQ(read->processes[0].rank, 3);
  EXPECT_EQ(read->processes[0].gpu_index, 1);
  EXPECT_EQ(read->processes[1].gpu_index, -1);
  ASSERT_EQ(read->series.size(), written.series.size());
  for (size_t i = 0; i < written.series.size(); ++i) {
    ExpectSameSeries(read->series[i], written.series[i]);
  }
  EXPECT_NE(read->Find("net.rx_bytes", -1, -1, "eth0"), nullptr);
  EXPECT_EQ(read->Find("net.rx_bytes", -1, -1, "eth1"), nullptr);
}

TEST(MetricsFileTest, IsCompact) {
  StatusOr<std::string> bytes = EncodeMetricsFile(SampleFile());
  ASSERT_TRUE(bytes.ok());
  EXPECT_LT(bytes->size(), 1500u * 2);  // 1500 samples, well under 2 bytes each
}

TEST(MetricsFileTest, EveryTruncationIsAnErrorNotACrash) {
  StatusOr<std::string> bytes = EncodeMetricsFile(SampleFile());
  ASSERT_TRUE(bytes.ok());
  for (size_t size = 0; size < bytes->size(); ++size) {
    EXPECT_FALSE(DecodeMetricsFile(std::string_view(*bytes).substr(0, size)).ok()) << size;
  }
}

TEST(MetricsFileTest, DamageIsAnErrorNotACrash) {
  StatusOr<std::string> bytes = EncodeMetricsFile(SampleFile());
  ASSERT_TRUE(bytes.ok());
  std::string bad_magic = *bytes;
  bad_magic[0] = 'X';
  EXPECT_FALSE(DecodeMetricsFile(bad_magic).ok());
  std::string newer = *bytes;
  newer[8] = 2;
  StatusOr<MetricsFile> newer_read = DecodeMetricsFile(newer);
  ASSERT_FALSE(newer_read.ok());
  EXPECT_NE(newer_read.status().message().find("version 2"), std::string::npos);
  std::string huge = *bytes;
  huge[23] = 0x7f;  // claims a body of petabytes
  EXPECT_FALSE(DecodeMetricsFile(huge).ok());
  for (size_t i = 24; i < bytes->size(); i += 7) {  // flipped bits in the zstd frame
    std::string flipped = *bytes;
    flipped[i] ^= 0x5a;
    (void)DecodeMetricsFile(flipped);  // may fail or not; must not crash
  }
  EXPECT_FALSE(ReadMetricsFile("/nonexistent/metrics.eroica-metrics").ok());
}

TEST(MetricsFileTest, NewerVersionIsOneLineNamingTheFile) {
  StatusOr<std::string> bytes = EncodeMetricsFile(SampleFile());
  ASSERT_TRUE(bytes.ok());
  std::string newer = *bytes;
  newer[8] = 2;
  TempDir dir;
  std::string path = dir.Write("metrics-next.eroica-metrics", newer);
  StatusOr<MetricsFile> read = ReadMetricsFile(path);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().message(), path +
                                         ": metrics format version 2 is not supported (this eroica reads up "
                                         "to version 1; a newer eroica wrote it)");
}

TEST(MetricsFileTest, WriteFailureIsAnError) {
  EXPECT_FALSE(WriteMetricsFile("/nonexistent-dir/x.eroica-metrics", SampleFile()).ok());
}

// 572 bytes of zstd inflating to 16 MB of zeros used to become 1.86 M series allocated at once.
TEST(MetricsFileTest, ACountOfSeriesBeyondTheMaximumIsRefusedBeforeAllocating) {
  MetricsFile empty = SampleFile();
  empty.series.clear();
  empty.processes.clear();
  StatusOr<std::string> bytes = EncodeMetricsFile(empty);
  ASSERT_TRUE(bytes.ok());
  // Re-encode the body with a huge series count and zero bytes, which decode as empty series.
  std::string body;
  {
    uint64_t size = ZSTD_getFrameContentSize(bytes->data() + 24, bytes->size() - 24);
    body.resize(size);
    ZSTD_decompress(body.data(), body.size(), bytes->data() + 24, bytes->size() - 24);
  }
  body.pop_back();  // the series count 0
  uint64_t series = 1'860'000;
  for (uint64_t v = series;; v >>= 7) {
    if (v < 0x80) {
      body.push_back(static_cast<char>(v));
      break;
    }
    body.push_back(static_cast<char>((v & 0x7f) | 0x80));
  }
  body.append(series * 9, '\0');
  std::string file = bytes->substr(0, 24);
  uint64_t body_size = body.size();
  std::memcpy(file.data() + 16, &body_size, 8);
  std::string frame(ZSTD_compressBound(body.size()), '\0');
  frame.resize(ZSTD_compress(frame.data(), frame.size(), body.data(), body.size(), 19));
  file += frame;
  ASSERT_LT(file.size(), 4096u);
  int64_t before = PeakRssBytes();
  StatusOr<MetricsFile> read = DecodeMetricsFile(file);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("series count"), std::string::npos) << read.status().message();
  EXPECT_LT(PeakRssBytes() - before, 48 << 20);
}

TEST(MetricsFileTest, AFifoOrDeviceIsRefusedWithoutBlocking) {
  TempDir dir;
  std::string fifo = dir.path() + "/metrics-h.eroica-metrics";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  StatusOr<MetricsFile> read = ReadMetricsFile(fifo);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find(fifo), std::string::npos);
  EXPECT_FALSE(ReadMetricsFile("/dev/zero").ok());  // used to read 1 GiB of zeros
}
}  // namespace
}  // namespace eroica::agent
