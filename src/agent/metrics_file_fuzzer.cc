// libFuzzer target: metrics files (DecodeMetricsFile, then what diagnose derives from one),
// plus the agent's other inputs written by others: registrations and capture.start.
#include <cstdint>
#include <string>

#include "agent/metrics_file.h"
#include "agent/process_registry.h"
#include "agent/session_tracker.h"
#include "agent/utilization.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  eroica::StatusOr<eroica::agent::MetricsFile> file = eroica::agent::DecodeMetricsFile(bytes);
  if (file.ok()) {
    for (const eroica::agent::MetricsProcess& p : file->processes) {
      (void)eroica::agent::UtilizationForProcess(*file, p.pid);
    }
  } else {
    eroica::agent::Registration registration;
    (void)eroica::agent::ParseRegistration(bytes, 1, &registration);
    eroica::agent::CaptureSession session;
    (void)eroica::agent::ParseCaptureStart(bytes, 0, &session);
  }
  return 0;
}
