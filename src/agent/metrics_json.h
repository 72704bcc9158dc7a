// A metrics file as JSON, for people and scripts (`eroica show FILE.eroica-metrics`): the
// header, the processes, and per series its identity and a summary of its samples (count,
// time span, min/mean/max; for counters also the mean rate). The samples themselves stay in
// the file.
#pragma once

#include <nlohmann/json.hpp>

#include "agent/metrics_file.h"

namespace eroica::agent {

nlohmann::json MetricsFileToJson(const MetricsFile& file);

}  // namespace eroica::agent
