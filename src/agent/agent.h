// The node agent's facade: `eroica agent` parses its flags into AgentOptions and calls
// RunAgent(). See README.md for what it samples, the files it reads and writes, and its cost.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "agent/nvml_api.h"
#include "base/status.h"

namespace eroica::agent {

struct AgentOptions {
  std::string dir;          // the shared folder: DIR/procs/*.json, DIR/<session>/capture.start
  std::string session_dir;  // by hand: sample duration_s, write this session's file, exit
  double duration_s = 0;
  double rate_hz = 100;      // processes and threads, NICs, RDMA ports
  double host_rate_hz = 10;  // per-core CPU and memory (/proc/stat is costly on big hosts)
  double gpu_rate_hz = 10;   // NVML
  double buffer_s = 120;     // history kept in memory; a session's window must fit in it
  int prometheus_port = 0;   // 0: no Prometheus endpoint
  std::string prometheus_bind = "127.0.0.1";
  // The folder of session folders whose newest report.json is the job's verdict on /metrics
  // (the central EROICA_DIR); "" uses `dir`.
  std::string report_dir;
  std::string host;           // default: gethostname()
  std::vector<int64_t> pids;  // watched without a registration file
  std::string root;           // "" for the real /proc and /sys; tests point it at a fake tree
  bool gpu = true;            // try NVML
  size_t max_threads_per_process = 256;
  size_t max_series = 8192;
  bool quiet = false;  // no log lines (tests)
  // Where NVML comes from; empty: LoadNvml(). Tests inject a fake table.
  std::function<StatusOr<NvmlApi>()> load_nvml;
};

Status ValidateAgentOptions(const AgentOptions& options);

// Runs until `stop` becomes true, or — with session_dir — until that session's metrics file is
// written. On the way out it writes the files of sessions still open (cut at that moment).
Status RunAgent(const AgentOptions& options, const std::atomic<bool>& stop);

// Every metric name the Prometheus page can write (health, sampled figures, the verdict).
std::vector<std::string> ExportedMetricNames();

// "metrics-<host>.eroica-metrics", with characters unsafe in a file name replaced by '_'.
std::string MetricsFileName(const std::string& host);

}  // namespace eroica::agent
