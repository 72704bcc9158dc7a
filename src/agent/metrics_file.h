// A node's hardware samples for one capture session, as the agent writes them next to the
// traces (SESSION_DIR/metrics-<host>.eroica-metrics), and the reader the summarizer uses.
// The byte format is specified at the top of metrics_file_writer.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "agent/series.h"
#include "base/status.h"

namespace eroica::agent {

inline constexpr uint32_t kMetricsFileVersion = 1;

// A training process the agent followed during the window.
struct MetricsProcess {
  int64_t pid = -1;
  int64_t rank = -1;       // -1: not reported
  int64_t gpu_index = -1;  // -1: unknown (see utilization.h for how one is chosen then)
};

struct MetricsFile {
  uint32_t version = kMetricsFileVersion;
  std::string host;
  int64_t created_unix_ns = 0;
  // CLOCK_REALTIME − CLOCK_MONOTONIC when the file was written: converts monotonic
  // timestamps of the same host (e.g. from perf or CUPTI's raw clock) to the unix ns used here.
  int64_t realtime_minus_monotonic_ns = 0;
  int64_t window_start_unix_ns = 0;  // the session's start − 1 s
  int64_t window_end_unix_ns = 0;    // the session's end + 1 s
  int64_t clock_ticks_per_s = 0;     // sysconf(_SC_CLK_TCK): the resolution of tick counters
  int64_t num_cpus = 0;
  int64_t sample_interval_ns = 0;  // the agent's base sampling period (1 / --rate-hz)
  std::vector<MetricsProcess> processes;
  std::vector<MetricsSeries> series;

  // The series with this identity, or null.
  const MetricsSeries* Find(std::string_view name, int64_t pid = -1, int64_t tid = -1,
                            std::string_view instance = "") const;
};

// Reads and decodes a metrics file. Any damage (truncation, bad magic, a newer version,
// inconsistent lengths) is an error; nothing is trusted from the bytes without a bound.
StatusOr<MetricsFile> ReadMetricsFile(const std::string& path);
StatusOr<MetricsFile> DecodeMetricsFile(std::string_view bytes);

}  // namespace eroica::agent
