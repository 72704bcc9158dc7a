// The sampled figures on the Prometheus page: per GPU, per NIC and RDMA port, per watched
// process, and the host's CPU and memory, each series' newest sample in base units (seconds,
// bytes, watts). Named like a node daemon's (Dynolog's, DCGM exporter's) figures, with an
// `eroica_` prefix; counters stay cumulative, so rate() works on them.
//
// Label cardinality is bounded by the hardware and the registrations: one series per GPU,
// interface (≤ 64, NetCollector's cap) or RDMA port, and per registered process (≤ 1024,
// ProcessRegistry's cap). Per-thread and per-core series are kept for μ/σ only and not exported:
// up to 256 threads per process and one series per core would swamp a scrape.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "agent/sample_store.h"

namespace eroica::agent {

// True for the series the page exports (SampleStore::Latest's filter).
bool IsExportedSeries(const SeriesInfo& info);

// Appends the figures of `samples` to *out; `rank_of_pid` labels process series.
void RenderNodeMetrics(const std::vector<LatestSample>& samples, const std::map<int64_t, int64_t>& rank_of_pid,
                       std::string* out);

// Every metric name RenderNodeMetrics can write, in page order.
std::vector<std::string> NodeMetricNames();

}  // namespace eroica::agent
