// The agent's health and the training processes' latest iteration times in the Prometheus
// text exposition format (version 0.0.4).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agent/process_registry.h"

namespace eroica::agent {

struct AgentHealth {
  double uptime_s = 0;
  double cpu_s = 0;  // the agent's own CPU time
  uint64_t samples = 0;
  uint64_t dropped_samples = 0;
  uint64_t series = 0;
  uint64_t buffer_bytes = 0;
  uint64_t host_ticks = 0;
  uint64_t host_missed_ticks = 0;
  uint64_t gpu_ticks = 0;
  uint64_t gpu_missed_ticks = 0;
  uint64_t tracked_threads = 0;
  uint64_t gpus = 0;
  uint64_t errors = 0;
  uint64_t sessions_started = 0;
  uint64_t sessions_written = 0;
  uint64_t sessions_dropped = 0;
};

std::string RenderPrometheusText(const AgentHealth& health, const std::vector<Registration>& processes);

// Every metric name RenderPrometheusText can write.
std::vector<std::string> HealthMetricNames();

// Escapes a label value (backslash, double quote, newline).
std::string EscapeLabelValue(std::string_view value);

}  // namespace eroica::agent
