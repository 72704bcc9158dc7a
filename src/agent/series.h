// A time series as the agent records it: what it measures (SeriesInfo) and its samples.
// Every value is an integer in the series' unit; counters are cumulative (rates come from
// differences), gauges are read as they are.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace eroica::agent {

enum class SeriesKind : uint8_t {
  kGauge = 0,    // a level: utilisation %, clock MHz, bytes resident
  kCounter = 1,  // cumulative since some start: cpu_ns, rx_bytes (a drop means a reset)
};

struct SeriesInfo {
  std::string name = {};  // "thread.cpu_ns", "net.rx_bytes", ... (see README.md)
  SeriesKind kind = SeriesKind::kGauge;
  std::string unit = {};      // "ns", "bytes", "packets", "pct", "MHz", "mW", "C", "KiB", "mask"
  int64_t pid = -1;           // the process it belongs to, or -1
  int64_t tid = -1;           // the thread it belongs to, or -1
  std::string instance = {};  // interface, RDMA port ("mlx5_0/1"), core ("cpu3"), GPU index ("0")
  std::string label = {};     // free text, not part of the identity: thread name, GPU model
  // The most the series can do: for a counter, units per second (a link's bytes/s); for a
  // gauge, the largest value (100 for a %). 0 when unknown.
  int64_t capacity = 0;
};

// Two infos name the same series when these fields agree (label and capacity may change).
inline bool SameSeries(const SeriesInfo& a, const SeriesInfo& b) {
  return a.name == b.name && a.pid == b.pid && a.tid == b.tid && a.instance == b.instance;
}

struct Sample {
  int64_t ts_ns;  // CLOCK_REALTIME, unix ns
  int64_t value;
};

// One series with its samples, as cut out of the store and as a metrics file carries it.
struct MetricsSeries {
  SeriesInfo info;
  std::vector<int64_t> ts_unix_ns;  // CLOCK_REALTIME, non-decreasing
  std::vector<int64_t> values;      // same length as ts_unix_ns
};

}  // namespace eroica::agent
