#include "agent/prometheus_text.h"

#include <fmt/format.h>

namespace eroica::agent {
namespace {

void Metric(std::string* out, const char* name, const char* type, const char* help,
            double value) {
  fmt::format_to(std::back_inserter(*out), "# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help,
                 name, type, name, value);
}

}  // namespace

std::string EscapeLabelValue(std::string_view value) {
  std::string escaped;
  for (char c : value) {
    if (c == '\\') escaped += "\\\\";
    else if (c == '"') escaped += "\\\"";
    else if (c == '\n') escaped += "\\n";
    else escaped += c;
  }
  return escaped;
}

std::string RenderPrometheusText(const AgentHealth& h, const std::vector<Registration>& processes) {
  std::string out;
  Metric(&out, "eroica_agent_up", "gauge", "1 while the agent runs.", 1);
  Metric(&out, "eroica_agent_uptime_seconds", "gauge", "Time since the agent started.",
         h.uptime_s);
  Metric(&out, "eroica_agent_cpu_seconds_total", "counter", "CPU time the agent used.", h.cpu_s);
  Metric(&out, "eroica_agent_samples_total", "counter", "Samples stored.",
         static_cast<double>(h.samples));
  Metric(&out, "eroica_agent_dropped_samples_total", "counter",
         "Samples dropped (store full, clock stepped back).", static_cast<double>(h.dropped_samples));
  Metric(&out, "eroica_agent_series", "gauge", "Series held.", static_cast<double>(h.series));
  Metric(&out, "eroica_agent_buffer_bytes", "gauge", "Memory the sample buffer uses.",
         static_cast<double>(h.buffer_bytes));
  out += "# HELP eroica_agent_ticks_total Sampling loop iterations.\n"
         "# TYPE eroica_agent_ticks_total counter\n";
  fmt::format_to(std::back_inserter(out), "eroica_agent_ticks_total{{loop=\"host\"}} {}\n",
                 h.host_ticks);
  fmt::format_to(std::back_inserter(out), "eroica_agent_ticks_total{{loop=\"gpu\"}} {}\n",
                 h.gpu_ticks);
  out += "# HELP eroica_agent_missed_ticks_total Ticks skipped because sampling ran late.\n"
         "# TYPE eroica_agent_missed_ticks_total counter\n";
  fmt::format_to(std::back_inserter(out), "eroica_agent_missed_ticks_total{{loop=\"host\"}} {}\n",
                 h.host_missed_ticks);
  fmt::format_to(std::back_inserter(out), "eroica_agent_missed_ticks_total{{loop=\"gpu\"}} {}\n",
                 h.gpu_missed_ticks);
  Metric(&out, "eroica_agent_registered_processes", "gauge", "Training processes watched.",
         static_cast<double>(processes.size()));
  Metric(&out, "eroica_agent_tracked_threads", "gauge", "Threads of those processes followed.",
         static_cast<double>(h.tracked_threads));
  Metric(&out, "eroica_agent_gpus", "gauge", "GPUs monitored through NVML.",
         static_cast<double>(h.gpus));
  Metric(&out, "eroica_agent_errors_total", "counter", "Problems met (each logged once).",
         static_cast<double>(h.errors));
  Metric(&out, "eroica_agent_sessions_started_total", "counter", "Capture sessions seen.",
         static_cast<double>(h.sessions_started));
  Metric(&out, "eroica_agent_sessions_written_total", "counter", "Metrics files written.",
         static_cast<double>(h.sessions_written));
  Metric(&out, "eroica_agent_sessions_dropped_total", "counter",
         "Metrics files that could not be written (disk full, ...).",
         static_cast<double>(h.sessions_dropped));
  out += "# HELP eroica_training_last_iteration_seconds Latest iteration time a rank reported.\n"
         "# TYPE eroica_training_last_iteration_seconds gauge\n";
  for (const Registration& process : processes) {
    if (!process.last_iteration_s) continue;
    fmt::format_to(std::back_inserter(out),
                   "eroica_training_last_iteration_seconds{{rank=\"{}\",pid=\"{}\",host=\"{}\"}} {}\n",
                   process.rank, process.pid, EscapeLabelValue(process.host),
                   *process.last_iteration_s);
  }
  return out;
}

}  // namespace eroica::agent
