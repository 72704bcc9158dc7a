// Finds the node agent's samples for a trace and puts them on the trace's clock, so the
// summarizer can give each function its μ and σ. The samples come from the metrics files in a
// trace's folder (`eroica agent` writes metrics-<host>.eroica-metrics into the session folder);
// the rank's meta file (rank-<r>.meta.json) gives its pid and, for CPU-only traces whose
// timestamps count from the profiler's start, the anchors that map them to the host clock.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "agent/metrics_file.h"
#include "summary/utilization_stats.h"
#include "trace/trace.h"

namespace eroica {

class HardwareSamples {
 public:
  // Every *.eroica-metrics file in `folder` (none: an empty set, not an error).
  static HardwareSamples FromFolder(const std::string& folder, std::vector<std::string>* errors);
  // One explicit metrics file (`summarize --metrics`).
  static HardwareSamples FromFile(const std::string& path, std::vector<std::string>* errors);

  bool empty() const { return files_.empty(); }
  // The samples of the trace's process on the trace's clock; "" or a one-line reason in *why.
  std::vector<ResourceSamples> ForTrace(const Trace& trace, std::string* why) const;

 private:
  std::vector<std::shared_ptr<const agent::MetricsFile>> files_;
};

}  // namespace eroica
