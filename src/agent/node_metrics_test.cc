// The sampled figures and the job's verdict on the Prometheus page: exact text for fixed inputs,
// the store's newest samples, and the verdict read from a session folder.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "agent/job_verdict.h"
#include "agent/node_metrics_text.h"
#include "agent/sample_store.h"

namespace eroica::agent {
namespace {

namespace fs = std::filesystem;

LatestSample At(std::string name, int64_t value, std::string instance = "", int64_t pid = -1) {
  LatestSample sample;
  sample.info.name = std::move(name);
  sample.info.instance = std::move(instance);
  sample.info.pid = pid;
  sample.ts_ns = 1;
  sample.value = value;
  return sample;
}

TEST(NodeMetricsTest, ExactTextForAFixedSampleSet) {
  // Out of page order on purpose, with series the page leaves out (threads, cores).
  std::vector<LatestSample> samples = {
      At("net.tx_bytes", 2048, "eth0"),     At("gpu.power_mw", 251500, "1"),
      At("gpu.sm_util_pct", 97, "1"),       At("gpu.sm_util_pct", 12, "0"),
      At("gpu.nvlink_tx_kib", 3, "0"),      At("thread.cpu_ns", 5, "", 42),
      At("core.busy_ns", 5, "cpu0"),        At("net.speed_mbps", -1, "veth1"),
      At("net.speed_mbps", 100000, "eth0"), At("proc.cpu_ns", 1'500'000'000, "", 42),
      At("proc.rss_bytes", 4096, "", 43),   At("rdma.rcv_bytes", 8, "mlx5_0/1"),
      At("mem.available_bytes", 1000),
  };
  std::string page;
  RenderNodeMetrics(samples, {{42, 3}}, &page);
  EXPECT_EQ(page,
            "# HELP eroica_gpu_sm_utilization_percent Time a kernel ran on the GPU (NVML).\n"
            "# TYPE eroica_gpu_sm_utilization_percent gauge\n"
            "eroica_gpu_sm_utilization_percent{gpu=\"0\"} 12\n"
            "eroica_gpu_sm_utilization_percent{gpu=\"1\"} 97\n"
            "# HELP eroica_gpu_power_watts Power draw.\n"
            "# TYPE eroica_gpu_power_watts gauge\n"
            "eroica_gpu_power_watts{gpu=\"1\"} 251.5\n"
            "# HELP eroica_gpu_nvlink_tx_bytes_total Bytes sent over all NVLinks.\n"
            "# TYPE eroica_gpu_nvlink_tx_bytes_total counter\n"
            "eroica_gpu_nvlink_tx_bytes_total{gpu=\"0\"} 3072\n"
            "# HELP eroica_net_tx_bytes_total Bytes sent by the interface.\n"
            "# TYPE eroica_net_tx_bytes_total counter\n"
            "eroica_net_tx_bytes_total{device=\"eth0\"} 2048\n"
            "# HELP eroica_net_speed_mbps Negotiated link speed (absent when unknown).\n"
            "# TYPE eroica_net_speed_mbps gauge\n"
            "eroica_net_speed_mbps{device=\"eth0\"} 100000\n"
            "# HELP eroica_rdma_rx_bytes_total Bytes received by the RDMA port.\n"
            "# TYPE eroica_rdma_rx_bytes_total counter\n"
            "eroica_rdma_rx_bytes_total{port=\"mlx5_0/1\"} 8\n"
            "# HELP eroica_process_cpu_seconds_total CPU time of a watched training process.\n"
            "# TYPE eroica_process_cpu_seconds_total counter\n"
            "eroica_process_cpu_seconds_total{pid=\"42\",rank=\"3\"} 1.5\n"
            "# HELP eroica_process_resident_memory_bytes Resident memory of a watched process.\n"
            "# TYPE eroica_process_resident_memory_bytes gauge\n"
            "eroica_process_resident_memory_bytes{pid=\"43\",rank=\"-1\"} 4096\n"
            "# HELP eroica_host_memory_available_bytes Memory available for new work.\n"
            "# TYPE eroica_host_memory_available_bytes gauge\n"
            "eroica_host_memory_available_bytes 1000\n");
}

TEST(NodeMetricsTest, StoreGivesTheNewestSampleOfWantedLiveSeries) {
  SampleStore store(StoreOptions{});
  {
    SampleStore::Writer writer(&store);
    SeriesId gpu = writer.Register({"gpu.sm_util_pct", SeriesKind::kGauge, "pct", -1, -1, "0"});
    SeriesId thread = writer.Register({"thread.cpu_ns", SeriesKind::kCounter, "ns", 7, 8});
    SeriesId gone = writer.Register({"net.rx_bytes", SeriesKind::kCounter, "bytes", -1, -1, "eth9"});
    for (int i = 1; i <= 300; ++i) {  // past one chunk
      writer.Record(gpu, i * 1000, i % 100);
      writer.Record(thread, i * 1000, i);
      writer.Record(gone, i * 1000, i);
    }
    writer.Release(gone);
  }
  std::vector<LatestSample> latest = store.Latest(IsExportedSeries);
  ASSERT_EQ(latest.size(), 1u);
  EXPECT_EQ(latest[0].info.name, "gpu.sm_util_pct");
  EXPECT_EQ(latest[0].value, 0);  // 300 % 100
  EXPECT_EQ(latest[0].ts_ns, 300'000);
}

JobVerdict SampleVerdict() {
  JobVerdict verdict;
  verdict.job = "llama \"7b\"";
  verdict.session = "s1";
  verdict.report_unix_s = 1700000000.25;
  verdict.findings_total = 2;
  verdict.findings = {{"dataloader", "local", "3", "collate_fn", 0.06},
                      {"communication", "global", "0-7", "nccl:all_reduce", 0.0125}};
  verdict.current_iteration_s = 0.5;
  verdict.baseline_iteration_s = 0.25;
  return verdict;
}

TEST(NodeMetricsTest, ExactVerdictText) {
  std::string page;
  RenderVerdictMetrics(SampleVerdict(), &page);
  EXPECT_EQ(page,
            "# HELP eroica_finding Seconds per iteration a finding of the job's latest diagnosis costs (at most 10 "
            "findings, most costly first).\n"
            "# TYPE eroica_finding gauge\n"
            "eroica_finding{job=\"llama \\\"7b\\\"\",category=\"dataloader\",scope=\"local\",rank=\"3\","
            "function=\"collate_fn\"} 0.06\n"
            "eroica_finding{job=\"llama \\\"7b\\\"\",category=\"communication\",scope=\"global\",rank=\"0-7\","
            "function=\"nccl:all_reduce\"} 0.0125\n"
            "# HELP eroica_verdict_findings Findings in the job's latest diagnosis (0: healthy), before the export "
            "cap.\n"
            "# TYPE eroica_verdict_findings gauge\n"
            "eroica_verdict_findings{job=\"llama \\\"7b\\\"\"} 2\n"
            "# HELP eroica_verdict_timestamp_seconds When the latest diagnosis was written (unix time).\n"
            "# TYPE eroica_verdict_timestamp_seconds gauge\n"
            "eroica_verdict_timestamp_seconds{job=\"llama \\\"7b\\\"\"} 1700000000.25\n"
            "# HELP eroica_detector_current_iteration_seconds The detector's mean iteration time when it fired.\n"
            "# TYPE eroica_detector_current_iteration_seconds gauge\n"
            "eroica_detector_current_iteration_seconds{job=\"llama \\\"7b\\\"\"} 0.5\n"
            "# HELP eroica_detector_baseline_iteration_seconds The best mean iteration time the detector compared "
            "with.\n"
            "# TYPE eroica_detector_baseline_iteration_seconds gauge\n"
            "eroica_detector_baseline_iteration_seconds{job=\"llama \\\"7b\\\"\"} 0.25\n");
}

TEST(NodeMetricsTest, NoVerdictYetWritesOnlyTheFamilies) {
  std::string page;
  RenderVerdictMetrics(std::nullopt, &page);
  EXPECT_EQ(page.find("{"), std::string::npos) << page;
  EXPECT_NE(page.find("# TYPE eroica_finding gauge\n"), std::string::npos);
}

TEST(NodeMetricsTest, CutLabelKeepsWholeCharacters) {
  EXPECT_EQ(CutLabel("short", 10), "short");
  EXPECT_EQ(CutLabel("abcdefghijkl", 10), "abcdefg\u2026");
  // "é" is two bytes: a cut inside it backs off to before it.
  EXPECT_EQ(CutLabel("abcdeé12345", 9), "abcde\u2026");
  EXPECT_LE(CutLabel(std::string(500, 'x'), kMaxFunctionBytes).size(), kMaxFunctionBytes);
}

void WriteFile(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

std::string ReportWithFindings(int count, const std::string& long_function) {
  std::string findings;
  for (int i = 0; i < count; ++i) {
    if (i > 0) findings += ",";
    findings += "{\"scope\":\"local\",\"category\":\"host\",\"workers\":[" + std::to_string(i) + "],\"function\":\"" +
                (i == 0 ? long_function : "f" + std::to_string(i)) +
                "\",\"impact_s_per_iter\":" + std::to_string(0.5 / (i + 1)) + "}";
  }
  return "{\"schema\":\"eroica.diagnosis/v1\",\"workers\":16,\"findings\":[" + findings + "]}";
}

class VerdictFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("eroica_verdict_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(VerdictFolderTest, ReadsTheNewestReportCappedAndCut) {
  WriteFile(dir_ / "old" / "report.json", ReportWithFindings(1, "old_function"));
  WriteFile(dir_ / "new" / "report.json", ReportWithFindings(12, std::string(200, 'g')));
  WriteFile(dir_ / "new" / "session.json",
            R"({"schema":"eroica.session/v1","job_id":"j1","best_mean_s":0.2,"current_mean_s":0.3})");
  WriteFile(dir_ / "unreported" / "session.json", "{}");
  fs::last_write_time(dir_ / "old" / "report.json", fs::file_time_type::clock::now() - std::chrono::hours(1));
  EXPECT_EQ(NewestReportedSession(dir_.string()), (dir_ / "new").string());

  VerdictWatcher watcher(dir_.string());
  EXPECT_FALSE(watcher.Latest().has_value());
  ASSERT_TRUE(watcher.Poll().ok());
  std::optional<JobVerdict> verdict = watcher.Latest();
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->job, "j1");
  EXPECT_EQ(verdict->session, "new");
  EXPECT_EQ(verdict->findings_total, 12u);
  ASSERT_EQ(verdict->findings.size(), kMaxExportedFindings);
  EXPECT_EQ(verdict->findings[0].category, "host");
  EXPECT_EQ(verdict->findings[0].scope, "local");
  EXPECT_EQ(verdict->findings[0].ranks, "0");
  EXPECT_DOUBLE_EQ(verdict->findings[0].seconds_per_iteration, 0.5);
  EXPECT_LE(verdict->findings[0].function.size(), kMaxFunctionBytes);
  EXPECT_DOUBLE_EQ(verdict->current_iteration_s, 0.3);
  EXPECT_DOUBLE_EQ(verdict->baseline_iteration_s, 0.2);
  EXPECT_GT(verdict->report_unix_s, 1.6e9);
}

TEST_F(VerdictFolderTest, ABrokenReportKeepsThePreviousVerdict) {
  WriteFile(dir_ / "a" / "report.json", ReportWithFindings(1, "f"));
  VerdictWatcher watcher(dir_.string());
  ASSERT_TRUE(watcher.Poll().ok());
  WriteFile(dir_ / "b" / "report.json", "{\"schema\":\"eroica.diagnosis/v9\"}");
  fs::last_write_time(dir_ / "b" / "report.json", fs::file_time_type::clock::now() + std::chrono::minutes(1));
  EXPECT_FALSE(watcher.Poll().ok());
  ASSERT_TRUE(watcher.Latest().has_value());
  EXPECT_EQ(watcher.Latest()->session, "a");
  // A symlinked session folder is not followed (followed, it would tie with b and win by name).
  fs::create_directory_symlink(dir_ / "b", dir_ / "z-link");
  EXPECT_EQ(NewestReportedSession(dir_.string()), (dir_ / "b").string());
}

}  // namespace
}  // namespace eroica::agent
