#include "agent/prometheus_text.h"

#include <fmt/format.h>

namespace eroica::agent {
namespace {

void Metric(std::string* out, const char* name, const char* type, const char* help, double value) {
  fmt::format_to(std::back_inserter(*out), "# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name, type, name, value);
}

// A counter with one value per sampling loop.
void LoopMetric(std::string* out, const char* name, const char* help, uint64_t host, uint64_t gpu) {
  fmt::format_to(std::back_inserter(*out),
                 "# HELP {0} {1}\n# TYPE {0} counter\n{0}{{loop=\"host\"}} {2}\n"
                 "{0}{{loop=\"gpu\"}} {3}\n",
                 name, help, host, gpu);
}

}  // namespace

std::string EscapeLabelValue(std::string_view value) {
  std::string escaped;
  for (char c : value) {
    if (c == '\\')
      escaped += "\\\\";
    else if (c == '"')
      escaped += "\\\"";
    else if (c == '\n')
      escaped += "\\n";
    else
      escaped += c;
  }
  return escaped;
}

namespace {

struct Row {
  const char* name;
  const char* type;
  const char* help;
  double value;
};

constexpr const char* kLoopMetrics[] = {"eroica_agent_ticks_total", "eroica_agent_missed_ticks_total"};
constexpr const char* kIterationMetric = "eroica_training_last_iteration_seconds";

std::vector<Row> HealthRows(const AgentHealth& h, size_t registered_processes) {
  auto n = [](uint64_t value) { return static_cast<double>(value); };
  return {
      {"eroica_agent_up", "gauge", "1 while the agent runs.", 1},
      {"eroica_agent_uptime_seconds", "gauge", "Time since the agent started.", h.uptime_s},
      {"eroica_agent_cpu_seconds_total", "counter", "CPU time the agent used.", h.cpu_s},
      {"eroica_agent_samples_total", "counter", "Samples stored.", n(h.samples)},
      {"eroica_agent_dropped_samples_total", "counter", "Samples dropped (store full, clock stepped back).",
       n(h.dropped_samples)},
      {"eroica_agent_series", "gauge", "Series held.", n(h.series)},
      {"eroica_agent_buffer_bytes", "gauge", "Memory the sample buffer uses.", n(h.buffer_bytes)},
      {"eroica_agent_registered_processes", "gauge", "Training processes watched.", n(registered_processes)},
      {"eroica_agent_tracked_threads", "gauge", "Threads of those processes followed.", n(h.tracked_threads)},
      {"eroica_agent_gpus", "gauge", "GPUs monitored through NVML.", n(h.gpus)},
      {"eroica_agent_errors_total", "counter", "Problems met (each logged once).", n(h.errors)},
      {"eroica_agent_sessions_started_total", "counter", "Capture sessions seen.", n(h.sessions_started)},
      {"eroica_agent_sessions_written_total", "counter", "Metrics files written.", n(h.sessions_written)},
      {"eroica_agent_sessions_dropped_total", "counter", "Metrics files that could not be written (disk full, ...).",
       n(h.sessions_dropped)},
  };
}

}  // namespace

std::string RenderPrometheusText(const AgentHealth& h, const std::vector<Registration>& processes) {
  std::string out;
  for (const Row& row : HealthRows(h, processes.size())) Metric(&out, row.name, row.type, row.help, row.value);
  LoopMetric(&out, kLoopMetrics[0], "Sampling loop iterations.", h.host_ticks, h.gpu_ticks);
  LoopMetric(&out, kLoopMetrics[1], "Ticks skipped because sampling ran late.", h.host_missed_ticks,
             h.gpu_missed_ticks);
  fmt::format_to(std::back_inserter(out), "# HELP {0} Latest iteration time a rank reported.\n# TYPE {0} gauge\n",
                 kIterationMetric);
  for (const Registration& process : processes) {
    if (!process.last_iteration_s) continue;
    fmt::format_to(std::back_inserter(out), "{}{{rank=\"{}\",pid=\"{}\",host=\"{}\"}} {}\n", kIterationMetric,
                   process.rank, process.pid, EscapeLabelValue(process.host), *process.last_iteration_s);
  }
  return out;
}

std::vector<std::string> HealthMetricNames() {
  std::vector<std::string> names;
  for (const Row& row : HealthRows(AgentHealth{}, 0)) names.emplace_back(row.name);
  for (const char* name : kLoopMetrics) names.emplace_back(name);
  names.emplace_back(kIterationMetric);
  return names;
}

}  // namespace eroica::agent
